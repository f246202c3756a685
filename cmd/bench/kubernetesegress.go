package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/egresstest"
)

// kubernetesEgressCases are the rows of the kubernetes-egress group: a
// sandbox confined by its gateway pod and two NetworkPolicies (the default
// on a cluster, docs/egress.md#kubernetes) against an open one, on the
// cluster of scripts/ensure-kubernetes.sh, in the same rounds.
var kubernetesEgressCases = []string{
	"create confined / open, kubernetes (small repo)",
	"create confined / kubectl run + wait, kubernetes",
	"mcp bash `true` confined / open, kubernetes",
	"100 MB download through the gateway / direct, kubernetes, https",
	"100 MB download through the gateway / direct, kubernetes, https, a 100 MB/s link",
}

// kubeCreateRounds caps the rounds of the group's creates (three a round,
// each seconds long on a cluster), so that the default bench stays short.
const kubeCreateRounds = 3

// kubeNodeNetns is the test cluster's node's network namespace, which
// its pods route through (docs/kubernetes-test-cluster.md): the download's
// server is joined to it.
const kubeNodeNetns = "/run/netns/litterbox-k8s"

// setEgress writes the repository's local config: egress open, or
// confined (the default, an allowlist) with allow.
func (kr *kubeRun) setEgress(open bool, allow ...string) error {
	text := "[network]\negress = \"open\"\n"
	if !open {
		q := make([]string, len(allow))
		for i, a := range allow {
			q[i] = fmt.Sprintf("%q", a)
		}
		text = "[network]\nallow = [" + strings.Join(q, ", ") + "]\n"
	}
	return os.WriteFile(filepath.Join(kr.dir, ".litterbox.local.toml"), []byte(text), 0o644)
}

// create makes sandbox name, open or confined, and returns its pod; a
// confined one must have made a gateway pod, an open one none.
func (kr *kubeRun) create(ctx context.Context, name string, open bool) (pod string, err error) {
	if err := kr.setEgress(open); err != nil {
		return "", err
	}
	out, err := kr.lb(ctx, "create", "--json", name)
	if err != nil {
		return "", err
	}
	var c struct{ Container string }
	if err := json.Unmarshal(out, &c); err != nil || c.Container == "" {
		return "", fmt.Errorf("create %s --json: no container in %q", name, out)
	}
	gw, err := proc{args: kr.k("get", "pods", "-l", "dev.litterbox.gateway-of="+c.Container, "-o", "name")}.run(ctx)
	if err != nil {
		return "", err
	}
	if made := strings.TrimSpace(string(gw)) != ""; made == open {
		return "", fmt.Errorf("create %s (open %v) made the wrong way out: its gateway pods: %q", name, open, gw)
	}
	return c.Container, nil
}

// caseKubernetesEgress times, in a namespace of its own on a small
// repository: a confined create against an open one and against `kubectl
// run` + `kubectl wait` of a bare busybox pod, interleaved, each litterbox
// way first in turn (at most kubeCreateRounds counted rounds); MCP `bash
// true` in a confined sandbox against an open one, in turn; and a 100 MB
// download over HTTPS through the confined sandbox's gateway against the
// open one's direct, from the egress tests' internet joined to the
// cluster's node (needs root), its address allowed with `litterbox net
// allow`.
func (b *bench) caseKubernetesEgress(ctx context.Context) error {
	kr, err := b.kubeSetup(ctx, kubernetesEgressCases, "-egress")
	if kr == nil || err != nil {
		return err
	}
	defer kr.done()
	k := kr.k
	del := func(name string) error { _, err := kr.lb(ctx, "delete", "--force", name); return err }

	var confined, open, floor []time.Duration
	rounds := min(b.n, kubeCreateRounds)
	// Round 0 warms up (and runs the isolation probe once); it is not counted.
	for i := 0; i <= rounds; i++ {
		ways := []bool{false, true}
		if i%2 == 1 {
			ways = []bool{true, false}
		}
		for _, o := range ways {
			name := fmt.Sprintf("c%v%d", o, i)
			d, err := timed(func() error { _, err := kr.create(ctx, name, o); return err })
			if err == nil {
				err = del(name)
			}
			if err != nil {
				return err
			}
			if i > 0 && o {
				open = append(open, d)
			} else if i > 0 {
				confined = append(confined, d)
			}
		}
		pod := fmt.Sprintf("floor-%d", i)
		d, err := timed(func() error { return kubectlRunWait(ctx, k, pod, b.label) })
		if err == nil {
			err = runCmd(ctx, k("delete", "pod", pod, "--wait=false")...)
		}
		if err != nil {
			return err
		}
		if i > 0 {
			floor = append(floor, d)
		}
	}
	cr := row(kubernetesEgressCases[0], confined, open, maxRatio(1.05))
	cr.Note = fmt.Sprintf("%.0f ms confined, %.0f ms open; floor: open creates in the same rounds; %s", ms(median(confined)), ms(median(open)), kr.ns)
	fr := row(kubernetesEgressCases[1], confined, floor, info)
	fr.Note = "floor: kubectl run + kubectl wait Ready of a bare busybox pod (no copy, no gateway), same rounds"
	b.rows = append(b.rows, cr, fr)

	// One of each, kept for the bash and the download rows.
	var pods [2]string
	for j, o := range []bool{false, true} {
		if pods[j], err = kr.create(ctx, fmt.Sprintf("k%v", o), o); err != nil {
			return err
		}
		defer func() { _ = del(fmt.Sprintf("k%v", o)) }()
	}
	s, err := b.startMCPEnv(ctx, kr.dir, kr.env)
	if err != nil {
		return err
	}
	bash := func(name string) clientFunc {
		return func(ctx context.Context, _ ...string) (clientResult, error) {
			d, err := timed(func() error {
				_, err := s.call(ctx, "bash", map[string]any{"sandbox": name, "command": "true"})
				return err
			})
			return clientResult{Seconds: d.Seconds()}, err
		}
	}
	cb, ob, err := b.eachWay(ctx, bash("ktrue"), bash("kfalse"), nil)
	s.close()
	if err != nil {
		return err
	}
	b.rows = append(b.rows, withNote(row(kubernetesEgressCases[2], cb, ob, maxRatio(1.3)), "floor: the same call in an open sandbox, in turn"))

	if _, err := os.Stat(kubeNodeNetns); err != nil {
		b.skip(kubernetesEgressCases[3:], "no test cluster's node namespace: "+err.Error())
		return nil
	}
	return b.withInternetIn(kubernetesEgressCases[3:], kubeNodeNetns, nil, func(in *egresstest.Internet) error {
		return b.kubeDownloads(ctx, kr, in, pods)
	})
}

// kubectlRunWait runs a bare busybox pod named pod, labeled, and waits
// until it is Ready: the floor of a create on a cluster.
func kubectlRunWait(ctx context.Context, k func(...string) []string, pod, label string) error {
	if err := runCmd(ctx, k("run", pod, "--image=busybox:latest", "--image-pull-policy=IfNotPresent", "--restart=Never", "--labels="+label, "--command", "--", "sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait")...); err != nil {
		return err
	}
	return runCmd(ctx, k("wait", "--for=condition=Ready", "pod/"+pod, "--timeout=180s")...)
}

// kubeDownloads times 100 MB over HTTPS from in, through the confined
// sandbox's gateway (pods[0], sandbox kfalse, in's address allowed) and
// direct from the open one (pods[1], ktrue), each first in turn: as fast
// as the machine goes (the server is local: what is measured is the CPU
// each way costs), and from a server paced at 100 MB/s (a fast link).
func (b *bench) kubeDownloads(ctx context.Context, kr *kubeRun, in *egresstest.Internet, pods [2]string) error {
	const size = 100 << 20
	// The internet answers pods, which the node routes to it unmasqueraded.
	if err := runCmd(ctx, "ip", "-n", in.NS, "route", "replace", "default", "via", in.HostIP); err != nil {
		return err
	}
	if _, err := kr.lb(ctx, "net", "kfalse", "allow", in.Addr(10)); err != nil {
		return err
	}
	client, err := b.egressClient(ctx)
	if err != nil {
		return err
	}
	ca := filepath.Join(b.tmp, "k8s-ca.pem")
	if err := os.WriteFile(ca, in.CAPEM, 0o644); err != nil {
		return err
	}
	for _, pod := range pods {
		for _, f := range [][2]string{{client, "/tmp/c"}, {ca, "/tmp/ca.pem"}} {
			data, err := os.Open(f[0])
			if err != nil {
				return err
			}
			_, err = proc{args: kr.k("exec", "-i", pod, "-c", "sandbox", "--", "sh", "-c", "cat > "+f[1]+" && chmod 755 "+f[1]), stdin: data}.run(ctx)
			data.Close()
			if err != nil {
				return err
			}
		}
	}
	in1 := func(name string) clientFunc {
		return func(ctx context.Context, args ...string) (clientResult, error) {
			out, err := kr.lb(ctx, append([]string{"exec", name, "--", "/tmp/c"}, args...)...)
			if err != nil {
				return clientResult{}, err
			}
			return clientOutput(out, nil, args)
		}
	}
	// What the gateway's pod spends, from its cgroup on the node (this
	// machine): its CPU, and how long its quota held it back.
	uid, err := proc{args: kr.k("get", "pods", "-l", "dev.litterbox.gateway-of="+pods[0], "-o", "jsonpath={.items[0].metadata.uid}")}.run(ctx)
	if err != nil {
		return err
	}
	for i, rate := range []string{"", "100"} {
		cpu0, throttled0, cpuErr := podCPU(strings.TrimSpace(string(uid)))
		url := fmt.Sprintf("https://%s/bytes?n=%d", in.Addr(10), size)
		if rate != "" {
			url += "&rate=" + rate
		}
		gw, direct, err := b.eachWay(ctx, in1("ktrue"), in1("kfalse"), wantBytes(size), "download", url, "-ca", "/tmp/ca.pem", "-timeout", "300s")
		if err != nil {
			return err
		}
		rw := row(kubernetesEgressCases[3+i], gw, direct, target{"throughput >= 0.8x direct (time <= 1.25x)", func(r Row) bool { return r.Ratio <= 1/0.8 }})
		rw.Note = fmt.Sprintf("%.0f MB/s through the gateway pod, %.0f MB/s direct from an open sandbox; the client's own time (no exec)",
			100/median(gw).Seconds(), 100/median(direct).Seconds())
		if cpu1, throttled1, err := podCPU(strings.TrimSpace(string(uid))); err == nil && cpuErr == nil {
			rw.Note += fmt.Sprintf("; the gateway pod's CPU %.0f ms a download, held back by its quota %.0f ms",
				ms(cpu1-cpu0)/float64(b.n+1), ms(throttled1-throttled0)/float64(b.n+1))
		}
		b.rows = append(b.rows, rw)
	}
	return nil
}

// podCPU is the CPU the pod of uid has spent, and the time its CPU quota
// held it back, from its cgroup on this machine (cgroup v1's cpuacct and
// cpu controllers, or v2's cpu.stat), as the kubelet's cgroupfs driver
// names it.
func podCPU(uid string) (cpu, throttled time.Duration, err error) {
	stat := func(glob string) (map[string]int64, error) {
		paths, _ := filepath.Glob(glob)
		if len(paths) != 1 {
			return nil, fmt.Errorf("no one cgroup at %s", glob)
		}
		data, err := os.ReadFile(paths[0])
		if err != nil {
			return nil, err
		}
		m := map[string]int64{}
		for _, line := range strings.Split(string(data), "\n") {
			var k string
			var v int64
			if _, err := fmt.Sscan(line, &k, &v); err == nil {
				m[k] = v
			} else if _, err := fmt.Sscan(line, &v); err == nil {
				m[""] = v
			}
		}
		return m, nil
	}
	pod := "pod" + uid
	for _, root := range []string{"/sys/fs/cgroup/cpu/kubepods", "/sys/fs/cgroup/kubepods"} {
		for _, dir := range []string{root + "/" + pod, root + "/*/" + pod} {
			c, err := stat(dir + "/cpu.stat")
			if err != nil {
				continue
			}
			if usec, ok := c["usage_usec"]; ok { // v2
				return time.Duration(usec) * time.Microsecond, time.Duration(c["throttled_usec"]) * time.Microsecond, nil
			}
			u, err := stat(strings.Replace(dir, "/cpu/", "/cpuacct/", 1) + "/cpuacct.usage")
			if err != nil {
				return 0, 0, err
			}
			return time.Duration(u[""]), time.Duration(c["throttled_time"]), nil
		}
	}
	return 0, 0, fmt.Errorf("no cgroup of pod %s on this machine", uid)
}
