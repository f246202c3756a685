package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

func testSpec() provider.Spec {
	return provider.Spec{
		Name: "litterbox-repo-x", Image: "busybox:latest", Hostname: "x", User: "1000:1000", Workdir: "/src",
		Labels: map[string]string{"dev.litterbox.slug": "x", "dev.litterbox.repo": "/home/me/a, b repo"},
		Env:    []string{"HOME=/tmp", "A=b=c"},
		Tmpfs: []provider.Tmpfs{
			{Path: "/src", Owner: "1000:1000", Mode: 0o755, Size: 64 << 20},
			{Path: "/tmp", Mode: 0o1777, Size: 32 << 20},
		},
		ReadOnlyRoot: true, Init: true, DropCaps: true, NoNewPrivileges: true,
		Limits: provider.Limits{Memory: 256 << 20, CPUs: 1.5}, Network: provider.NetworkIsolated,
		Ports: []provider.PortSpec{{Name: "web", Port: 8080}}, Cmd: []string{"sleep", "infinity"},
	}
}

// The pod is hardened as the spec asks, in Kubernetes terms; a label value
// Kubernetes refuses (a path) is an annotation only.
func TestPodManifest(t *testing.T) {
	raw, err := podManifest(testSpec(), "")
	if err != nil {
		t.Fatal(err)
	}
	var pod struct {
		Metadata meta
		Spec     struct {
			AutomountServiceAccountToken bool
			RestartPolicy, Hostname      string
			SecurityContext              struct{ SeccompProfile struct{ Type string } }
			InitContainers, Containers   []struct {
				Name, WorkingDir string
				Command          []string
				Env              []struct{ Name, Value string }
				SecurityContext  struct {
					RunAsUser, RunAsGroup                                          int64
					RunAsNonRoot, ReadOnlyRootFilesystem, AllowPrivilegeEscalation bool
					Capabilities                                                   struct{ Drop, Add []string }
				}
				Resources struct{ Limits map[string]string }
			}
			Volumes []struct {
				EmptyDir struct{ Medium, SizeLimit string }
			}
		}
	}
	if err := json.Unmarshal(raw, &pod); err != nil {
		t.Fatal(err)
	}
	m, s := pod.Metadata, pod.Spec
	if m.Labels["dev.litterbox.slug"] != "x" || m.Labels["dev.litterbox.repo"] != "" || m.Annotations["dev.litterbox.repo"] != "/home/me/a, b repo" ||
		m.Annotations[LabelPorts] != "web=8080" || m.Labels[labelPod] != "litterbox-repo-x" {
		t.Errorf("metadata = %+v", m)
	}
	// A value that cannot be a label's is an empty label, which a selector
	// can ask for (the warm pool lists by the git dir's key).
	if v, ok := m.Labels["dev.litterbox.repo"]; !ok || v != "" {
		t.Errorf("labels = %v, want dev.litterbox.repo empty", m.Labels)
	}
	if s.AutomountServiceAccountToken || s.RestartPolicy != "Never" || s.Hostname != "x" || s.SecurityContext.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("pod spec = %+v", s)
	}
	if len(s.Containers) != 2 || s.Containers[0].Name != mainContainer || s.Containers[1].Name != rootContainer {
		t.Fatalf("containers = %+v", s.Containers)
	}
	main, root := s.Containers[0], s.Containers[1]
	sc := main.SecurityContext
	if sc.RunAsUser != 1000 || sc.RunAsGroup != 1000 || !sc.RunAsNonRoot || !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("sandbox container security = %+v", sc)
	}
	if main.Resources.Limits["cpu"] != "1500m" || main.Resources.Limits["memory"] != "268435456" || main.WorkingDir != "/src" {
		t.Errorf("sandbox container = %+v", main)
	}
	if main.Command[len(main.Command)-2] != "sleep" || main.Command[0] != "sh" || len(main.Env) != 2 || main.Env[1].Value != "b=c" {
		t.Errorf("command %q, env %+v", main.Command, main.Env)
	}
	if rs := root.SecurityContext; rs.RunAsUser != 0 || rs.RunAsNonRoot || !rs.ReadOnlyRootFilesystem || rs.AllowPrivilegeEscalation || len(rs.Capabilities.Add) != 0 {
		t.Errorf("root container security = %+v", rs)
	}
	if len(s.InitContainers) != 1 || !slices.Equal(s.InitContainers[0].SecurityContext.Capabilities.Add, []string{"CHOWN", "FOWNER"}) ||
		!strings.Contains(s.InitContainers[0].Command[2], "chown '1000:1000' '/src'; chmod 755 '/src'; chmod 1777 '/tmp'") {
		t.Errorf("init containers = %+v", s.InitContainers)
	}
	if len(s.Volumes) != 2 || s.Volumes[0].EmptyDir.Medium != "Memory" || s.Volumes[0].EmptyDir.SizeLimit != "67108864" {
		t.Errorf("volumes = %+v", s.Volumes)
	}
	if strings.Contains(string(raw), "runtimeClassName") {
		t.Errorf("a spec without a runtime names a RuntimeClass: %s", raw)
	}
	// A runtime is the pod's RuntimeClass.
	gv := testSpec()
	gv.Runtime = "gvisor"
	raw, err = podManifest(gv, "")
	var rc struct {
		Spec struct{ RuntimeClassName string }
	}
	if err != nil || json.Unmarshal(raw, &rc) != nil || rc.Spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtime gvisor: runtimeClassName = %q, %v", rc.Spec.RuntimeClassName, err)
	}
}

func TestPodLabelValue(t *testing.T) {
	long := "litterbox-" + strings.Repeat("d", 60) + "-slug"
	v := podLabelValue(long)
	if len(v) > 63 || !validLabel(labelPod, v) || v == podLabelValue(long+"x") {
		t.Errorf("podLabelValue(%q) = %q", long, v)
	}
	if podLabelValue("short") != "short" {
		t.Error("a short name is its own label value")
	}
}

// Commands go through sh (a missing program is 127), in the asked
// directory, with the asked environment, in the container of the user.
func TestExecArgs(t *testing.T) {
	r := provider.ExecRequest{Ref: provider.Ref{ID: "p"}, Cmd: []string{"id", "-u"}, Env: []string{"X=y z"}, Workdir: "/tmp", Stdin: strings.NewReader("")}
	got := execArgs(r, rootContainer, ".")
	want := []string{"exec", "-i", "p", "-c", "root", "--", "sh", "-c", execScript, "sh", "/tmp", "env", "X=y z", "id", "-u"}
	if !slices.Equal(got, want) {
		t.Errorf("execArgs = %q\nwant %q", got, want)
	}
	for user, c := range map[string]string{"": mainContainer, "1000:1000": mainContainer, "0": rootContainer, "0:0": rootContainer} {
		if got, err := container(user); got != c || err != nil {
			t.Errorf("container(%q) = %q, %v; want %q", user, got, err, c)
		}
	}
	if _, err := container("2000"); !errors.Is(err, provider.ErrUnsupported) {
		t.Errorf("container(2000) = %v; want ErrUnsupported", err)
	}
}

// filterStderr streams chunks through an exitFilter, kubectl exiting with
// code, and returns what reached the caller.
func filterStderr(chunks []string, code int) string {
	var out bytes.Buffer
	f := &exitFilter{w: &out}
	for _, c := range chunks {
		_, _ = f.Write([]byte(c))
	}
	f.flush(code)
	return out.String()
}

// kubectl's own "command terminated" line never reaches the caller's
// stderr, streamed in any pieces; the command's own bytes all do, a line of
// the same form it printed itself included.
func TestExitFilter(t *testing.T) {
	for _, c := range []struct {
		stream string
		code   int
		want   string
	}{
		{"a\nb\ncommand terminated with exit code 3\n", 3, "a\nb\n"},
		// kubectl's line follows the command's last byte, newline or not
		{"a\nno newline" + "command terminated with exit code 3\n", 3, "a\nno newline"},
		{"comm" + "command terminated with exit code 3\n", 3, "comm"},
		{"command terminated with exit code 255\n", 255, ""},
		// the command's own line of that form, then kubectl's
		{"command terminated with exit code 3\ncommand terminated with exit code 3\n", 3, "command terminated with exit code 3\n"},
		// exit 0: kubectl writes no line, so the command's last line stays
		{"x\ncommand terminated with exit code 3\n", 0, "x\ncommand terminated with exit code 3\n"},
		{"command terminated with exit code 3\n", 0, "command terminated with exit code 3\n"},
		// another code: not kubectl's (it failed itself, or was killed)
		{"command terminated with exit code 3\n", 1, "command terminated with exit code 3\n"},
		{"command terminated with exit code 3\n", 137, "command terminated with exit code 3\n"},
		// a start of the line that never finished, at the end
		{"out\ncommand termin", 0, "out\ncommand termin"},
		{"command terminated with exit code 3", 3, "command terminated with exit code 3"},
		{"last line without newline", 0, "last line without newline"},
		{"", 0, ""},
	} {
		// whole, byte by byte, and in pieces of 7
		var bytewise, sevens []string
		for i := range c.stream {
			bytewise = append(bytewise, c.stream[i:i+1])
		}
		for i := 0; i < len(c.stream); i += 7 {
			sevens = append(sevens, c.stream[i:min(i+7, len(c.stream))])
		}
		for _, chunks := range [][]string{{c.stream}, bytewise, sevens} {
			if got := filterStderr(chunks, c.code); got != c.want {
				t.Errorf("%q, exit %d, in %d pieces -> %q; want %q", c.stream, c.code, len(chunks), got, c.want)
			}
		}
	}
}

// A stream without newlines passes through as it comes: the filter holds
// back at most the length of kubectl's line, so memory stays flat however
// much a command writes (it held the whole unfinished line, growing with
// the output).
func TestExitFilterIsBounded(t *testing.T) {
	var out bytes.Buffer
	f := &exitFilter{w: &out}
	chunk := []byte(strings.Repeat("x", 32<<10) + "command termin")
	written := 0
	for i := 0; i < 320; i++ { // 10 MiB
		_, _ = f.Write(chunk)
		written += len(chunk)
		if held := written - out.Len(); held > maxExitLine {
			t.Fatalf("after %d bytes, %d are held back; want at most %d", written, held, maxExitLine)
		}
	}
	if cap(f.hold) > 2*len(chunk) {
		t.Errorf("the filter's buffer grew to %d bytes", cap(f.hold))
	}
	f.flush(0)
	if out.Len() != written {
		t.Errorf("%d bytes came out of %d", out.Len(), written)
	}
}

// trimExitLine, on captured stderr and the runner's tail of a streamed one:
// the command's code is kubectl's exit code only when its line ends the
// stderr and names that code.
func TestTrimExitLine(t *testing.T) {
	for _, c := range []struct {
		stderr string
		code   int
		want   string
		ok     bool
	}{
		{"err\ncommand terminated with exit code 3\n", 3, "err\n", true},
		{"err\ncommand terminated with exit code 3\n", 1, "err\ncommand terminated with exit code 3\n", false},
		{"command terminated with exit code 3\nerror: unable to upgrade connection\n", 1, "command terminated with exit code 3\nerror: unable to upgrade connection\n", false},
		{"command terminated with exit code 13\n", 3, "command terminated with exit code 13\n", false},
		{"", 0, "", false},
	} {
		got, ok := trimExitLine([]byte(c.stderr), c.code)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("trimExitLine(%q, %d) = %q, %v; want %q, %v", c.stderr, c.code, got, ok, c.want, c.ok)
		}
	}
}

// kubectl's failures, as it words them, map to the neutral errors.
func TestClassify(t *testing.T) {
	p := &Provider{o: Options{Kubectl: "kubectl"}, ep: "https://h:6443"}
	p.epOnce.Do(func() {})
	for stderr, want := range map[string]error{
		`Error from server (NotFound): pods "x" not found`:                                                          provider.ErrNotFound,
		`Error from server (AlreadyExists): error when creating "STDIN": pods "x" already exists`:                   provider.ErrConflict,
		`The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?`:            provider.ErrUnreachable,
		`error: cannot exec into a container in a completed pod; current phase is Succeeded`:                        provider.ErrStopped,
		`E1123 memcache.go:265] "Unhandled Error" err="couldn't get current server API group list: Get \"http://x"`: provider.ErrUnreachable,
	} {
		err := p.classify(&runner.ExitError{Command: "kubectl", ExitCode: 1, Stderr: stderr})
		if !errors.Is(err, want) {
			t.Errorf("classify(%q) = %v; want %v", stderr, err, want)
		}
	}
	if err := p.classify(&runner.NotInstalledError{Program: "kubectl"}); !errors.Is(err, provider.ErrUnreachable) || !strings.Contains(err.Error(), "LITTERBOX_KUBECTL") {
		t.Errorf("no kubectl: %v", err)
	}
	// A quota: its name, what was asked and what is left, what to do, and
	// no kubectl command line.
	p.o.Namespace = "team"
	err := p.classify(&runner.ExitError{Command: "kubectl --namespace team create -f - -o name", ExitCode: 1,
		Stderr: `Error from server (Forbidden): error when creating "STDIN": pods "litterbox-r-a" is forbidden: exceeded quota: lbq, requested: pods=1, used: pods=1, limited: pods=1` + "\n"})
	want := "namespace team's ResourceQuota lbq is used up (requested: pods=1, used: pods=1, limited: pods=1): delete sandboxes you no longer need (`litterbox list`; every pod of the namespace counts), " +
		"or have the quota raised (`kubectl --namespace team describe resourcequota lbq`)"
	if !errors.Is(err, provider.ErrQuota) || err.Error() != want {
		t.Errorf("quota: %v\nwant %s", err, want)
	}
}

func TestNormalizeImage(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                   "docker.io/library/busybox:latest",
		"busybox:1.36":              "docker.io/library/busybox:1.36",
		"me/img":                    "docker.io/me/img:latest",
		"ghcr.io/me/img:v1":         "ghcr.io/me/img:v1",
		"localhost:5000/img":        "localhost:5000/img:latest",
		"docker.io/library/busybox": "docker.io/library/busybox:latest",
	} {
		if got := normalizeImage(in); got != want {
			t.Errorf("normalizeImage(%q) = %q; want %q", in, got, want)
		}
	}
}

// A RuntimeClass the cluster lacks is refused before anything is made (the
// NetworkPolicy comes first otherwise), saying what to do; one it has lets
// the create go on.
func TestCreateUnknownRuntimeClass(t *testing.T) {
	err := createWithRuntimeClasses(t, "kata=kata-qemu\n")
	for _, want := range []string{"no RuntimeClass for gVisor", "containerd-shim-runsc-v1", `"handler":"runsc"`, "kubectl apply -f -"} {
		if !errors.Is(err, provider.ErrNoRuntime) || !strings.Contains(err.Error(), want) {
			t.Errorf("create with no RuntimeClass for gVisor = %v; want ErrNoRuntime saying %q", err, want)
		}
	}
}

// A pod under gVisor cannot be reached by kubectl port-forward (its network
// stack is gVisor's own), so a create with ports there is refused before
// anything is made, saying what to do: it used to make a pod whose ports
// refused every connection.
func TestCreateGVisorWithPorts(t *testing.T) {
	err := createWithRuntimeClasses(t, "gvisor=runsc\n")
	for _, want := range []string{"port-forward cannot reach", "gVisor", "remove the ports"} {
		if !errors.Is(err, provider.ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Errorf("create under gVisor with a port = %v; want ErrUnsupported saying %q", err, want)
		}
	}
}

// CheckSpec refuses the same before the service makes the branch and the
// gateway, asking the cluster only when the spec has a runtime and ports.
func TestCheckSpecGVisorWithPorts(t *testing.T) {
	f := runnertest.New(t)
	p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	if err := p.CheckSpec(context.Background(), spec); err != nil {
		t.Errorf("check without a runtime = %v", err)
	}
	spec.Runtime = "gvisor"
	f.Expect([]string{"kubectl", "get", "runtimeclass", "-o", `jsonpath={range .items[*]}{.metadata.name}={.handler}{"\n"}{end}`}, "gvisor=runsc\n", nil)
	if err := p.CheckSpec(context.Background(), spec); !errors.Is(err, provider.ErrUnsupported) || !strings.Contains(err.Error(), "remove the ports") {
		t.Errorf("check under gVisor with a port = %v; want ErrUnsupported saying to remove the ports", err)
	}
	spec.Ports = nil
	if err := p.CheckSpec(context.Background(), spec); err != nil {
		t.Errorf("check under gVisor without ports = %v", err)
	}
}

// A create with a runtime and ports asks the cluster for its RuntimeClasses
// once, not at each of its checks (CheckRuntime, CheckSpec, Create: it
// asked three times); a runtime the cluster lacked is asked again, for a
// class made since to be found.
func TestRuntimeClassAskedOnce(t *testing.T) {
	f := runnertest.New(t)
	p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ask := []string{"kubectl", "get", "runtimeclass", "-o", `jsonpath={range .items[*]}{.metadata.name}={.handler}{"\n"}{end}`}
	ctx := context.Background()
	f.Expect(ask, "kata=kata-qemu\n", nil)
	if _, err := p.CheckRuntime(ctx, "gvisor"); !errors.Is(err, provider.ErrNoRuntime) {
		t.Fatalf("check of gvisor on a cluster without it = %v", err)
	}
	f.Expect(ask, "kata=kata-qemu\nsandboxed=runsc\n", nil)
	name, err := p.CheckRuntime(ctx, "gvisor")
	if err != nil || name != "sandboxed" {
		t.Fatalf("check of gvisor once its class was made = %q, %v; want sandboxed", name, err)
	}
	spec := testSpec()
	spec.Runtime = name
	if err := p.CheckSpec(ctx, spec); !errors.Is(err, provider.ErrUnsupported) {
		t.Errorf("check under gVisor with a port = %v; want ErrUnsupported", err)
	}
	if _, err := p.Create(ctx, spec); !errors.Is(err, provider.ErrUnsupported) {
		t.Errorf("create under gVisor with a port = %v; want ErrUnsupported", err)
	}
	if name, err := p.CheckRuntime(ctx, "gvisor"); err != nil || name != "sandboxed" {
		t.Errorf("check of gvisor again = %q, %v", name, err)
	}
}

// createWithRuntimeClasses creates testSpec (which has a port) with the
// runtime gvisor on a cluster whose RuntimeClasses are classes (lines of
// name=handler), where nothing else may be asked or made.
func createWithRuntimeClasses(t *testing.T, classes string) error {
	f := runnertest.New(t)
	p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.Expect([]string{"kubectl", "get", "runtimeclass", "-o", `jsonpath={range .items[*]}{.metadata.name}={.handler}{"\n"}{end}`}, classes, nil)
	spec := testSpec()
	spec.Runtime = "gvisor"
	_, err = p.Create(context.Background(), spec)
	return err
}

// gVisor's RuntimeClass is the one named gvisor, else one whose handler is
// runsc; any other runtime is the class of its name.
func TestRuntimeClass(t *testing.T) {
	for _, c := range []struct{ classes, runtime, want, handler string }{
		{"gvisor=runsc\nkata=kata\n", "gvisor", "gvisor", "runsc"},
		{"sandboxed=runsc\n", "gvisor", "sandboxed", "runsc"},
		{"a=runsc\ngvisor=other\n", "gvisor", "gvisor", "other"},
		{"kata=kata\n", "gvisor", "", ""},
		{"", "gvisor", "", ""},
		{"kata=kata\nrunsc=runsc\n", "kata", "kata", "kata"},
		{"x=runsc\n", "kata", "", ""},
	} {
		if got, handler := runtimeClass(c.classes, c.runtime); got != c.want || handler != c.handler {
			t.Errorf("runtimeClass(%q, %q) = %q, %q; want %q, %q", c.classes, c.runtime, got, handler, c.want, c.handler)
		}
	}
}

// The policy lets nothing in and lets the pod out to public addresses only:
// no pod or namespace is a peer, and every private, link-local, loopback and
// carrier-grade NAT range (where the metadata endpoint, the API server,
// cluster DNS and other pods are) is cut out of "everywhere". It used to
// let the pod out to 0.0.0.0/0 and to every pod that is not a sandbox's.
// The cluster test (kubernetes_egress.txtar) shows it enforced.
func TestPolicyManifest(t *testing.T) {
	raw, err := policyManifest(testSpec(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pol struct {
		Spec struct {
			PodSelector struct{ MatchLabels map[string]string }
			PolicyTypes []string
			Ingress     []any
			Egress      []struct {
				To []map[string]json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(raw, &pol); err != nil {
		t.Fatal(err)
	}
	s := pol.Spec
	if s.PodSelector.MatchLabels[labelPod] != "litterbox-repo-x" || !slices.Equal(s.PolicyTypes, []string{"Ingress", "Egress"}) || len(s.Ingress) != 0 {
		t.Errorf("policy = %s", raw)
	}
	if len(s.Egress) != 2 {
		t.Fatalf("egress rules = %s", raw)
	}
	// The second rule: the cluster's resolvers, port 53 only.
	var generic struct {
		Spec struct{ Egress []json.RawMessage }
	}
	json.Unmarshal(raw, &generic)
	dns := generic.Spec.Egress[1]
	for _, w := range []string{`"k8s-app":"kube-dns"`, `"kubernetes.io/metadata.name":"kube-system"`, `"port":53`} {
		if !strings.Contains(string(dns), w) {
			t.Errorf("the DNS rule has no %s: %s", w, dns)
		}
	}
	if strings.Contains(string(dns), "ipBlock") || !strings.Contains(string(dns), `"ports"`) {
		t.Errorf("the DNS rule reaches more than the resolvers' port 53: %s", dns)
	}
	blocks := map[string][]string{}
	for _, peer := range s.Egress[0].To {
		var b struct {
			CIDR   string
			Except []string
		}
		if len(peer) != 1 || peer["ipBlock"] == nil || json.Unmarshal(peer["ipBlock"], &b) != nil {
			t.Fatalf("an egress peer other than an ipBlock: %s", raw)
		}
		blocks[b.CIDR] = b.Except
	}
	for cidr, want := range map[string][]string{
		"0.0.0.0/0": {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10", "127.0.0.0/8"},
		"::/0":      {"fc00::/7", "fe80::/10", "::1/128"},
	} {
		for _, w := range want {
			if !slices.Contains(blocks[cidr], w) {
				t.Errorf("egress to %s does not leave out %s: %v", cidr, w, blocks[cidr])
			}
		}
	}
	if len(blocks) != 2 {
		t.Errorf("egress ipBlocks = %v", blocks)
	}
}

// linkedSpecs are a confined sandbox and its gateway, linked by network.
func linkedSpecs() (sb, gw provider.Spec) {
	link := &provider.Link{Sandbox: "litterbox-repo-x", Gateway: "litterbox-repo-x-gw", TCP: []int{3128, 53}, UDP: []int{53}, Closed: []string{"10.96.0.0/16", "fd00:10::/108"}}
	sb = testSpec()
	sb.Link = link
	gw = provider.Spec{Name: link.Gateway, Image: "busybox:latest", User: "65532:1000", Link: link,
		Sysctls: map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}, Cmd: []string{"sh"}}
	return sb, gw
}

// A linked sandbox's pod finds its gateway by name and resolves names with
// it; the gateway's pod binds port 53 by the namespaced sysctl and has no
// root container beside it.
func TestLinkedPods(t *testing.T) {
	sb, gw := linkedSpecs()
	raw, err := podManifest(sb, "10.244.0.9")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"hostAliases":[{"hostnames":["litterbox-gateway"],"ip":"10.244.0.9"}]`, `"dnsPolicy":"None"`, `"dnsConfig":{"nameservers":["10.244.0.9"]}`} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("the sandbox's pod has no %s: %s", w, raw)
		}
	}
	raw, err = podManifest(gw, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"sysctls":[{"name":"net.ipv4.ip_unprivileged_port_start","value":"0"}]`) ||
		strings.Contains(string(raw), `"name":"root"`) || strings.Contains(string(raw), "hostAliases") {
		t.Errorf("the gateway's pod = %s", raw)
	}
}

// A linked sandbox's pod names its gateway, and its paused record, made
// again at resume, finds the gateway at its address then (a gateway made
// again has another): the rest of the pod is as it was.
func TestLinkedPodMadeAgainFindsItsGateway(t *testing.T) {
	sb, gw := linkedSpecs()
	raw, err := podManifest(sb, "10.244.0.9")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"`+annotationGateway+`":"`+gw.Name+`"`) {
		t.Errorf("the sandbox's pod does not name its gateway: %s", raw)
	}
	again, err := linkedManifest(raw, "10.244.0.23")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"hostAliases":[{"hostnames":["litterbox-gateway"],"ip":"10.244.0.23"}]`, `"dnsPolicy":"None"`, `"dnsConfig":{"nameservers":["10.244.0.23"]}`, `"runAsUser":1000`, `"name":"root"`} {
		if !strings.Contains(string(again), w) {
			t.Errorf("the pod made again has no %s: %s", w, again)
		}
	}
	if strings.Contains(string(again), "10.244.0.9") {
		t.Errorf("the pod made again keeps the gone gateway's address: %s", again)
	}
	if raw, _ := podManifest(gw, ""); strings.Contains(string(raw), annotationGateway) {
		t.Errorf("the gateway's pod names a gateway: %s", raw)
	}
}

// A paused pod made before its pod named its gateway (annotationGateway)
// finds it by its policy at resume, the one pod the policy lets it reach:
// it was left with the gone gateway's address, cut off. An open sandbox's
// record is left as it is, asking nothing.
func TestRelinkByPolicy(t *testing.T) {
	sb, _ := linkedSpecs()
	raw, err := podManifest(sb, "10.244.0.9")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	delete(m["metadata"].(map[string]any)["annotations"].(map[string]any), annotationGateway)
	old, _ := json.Marshal(m)
	pol, err := policyManifest(sb, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := runnertest.New(t)
	p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.Expect([]string{"kubectl", "get", "pods", "-l", labelPod + "=litterbox-repo-x-gw", "-o", "jsonpath={.items[*].status.podIP}"}, "10.244.0.23", nil)
	again, err := p.relink(context.Background(), old, pol)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(again), `"hostAliases":[{"hostnames":["litterbox-gateway"],"ip":"10.244.0.23"}]`) || strings.Contains(string(again), "10.244.0.9") {
		t.Errorf("the pod made again does not find its gateway at its new address: %s", again)
	}
	open := testSpec()
	raw, _ = podManifest(open, "")
	pol, _ = policyManifest(open, nil)
	if again, err := p.relink(context.Background(), raw, pol); err != nil || string(again) != string(raw) {
		t.Errorf("an open sandbox's record relinked: %v\n%s", err, again)
	}
}

// The linked sandbox goes out to its gateway's ports only and takes nothing
// in; the gateway takes its sandbox only, on those ports, and goes out
// beyond the cluster's ranges and link-local (the metadata endpoint), and
// to the cluster's resolvers.
func TestLinkedPolicies(t *testing.T) {
	sb, gw := linkedSpecs()
	type rule struct {
		To, From []map[string]json.RawMessage
		Ports    []struct {
			Protocol string
			Port     int
		}
	}
	var pol struct {
		Spec struct{ Ingress, Egress []rule }
	}
	raw, err := policyManifest(sb, nil)
	if err != nil || json.Unmarshal(raw, &pol) != nil {
		t.Fatal(err, string(raw))
	}
	if len(pol.Spec.Ingress) != 0 || len(pol.Spec.Egress) != 1 || len(pol.Spec.Egress[0].To) != 1 ||
		string(pol.Spec.Egress[0].To[0]["podSelector"]) != `{"matchLabels":{"dev.litterbox.pod":"litterbox-repo-x-gw"}}` || len(pol.Spec.Egress[0].Ports) != 3 {
		t.Errorf("the sandbox's policy = %s", raw)
	}
	pol.Spec.Ingress, pol.Spec.Egress = nil, nil
	raw, err = policyManifest(gw, gw.Link.Closed)
	if err != nil || json.Unmarshal(raw, &pol) != nil {
		t.Fatal(err, string(raw))
	}
	in := pol.Spec.Ingress
	if len(in) != 1 || len(in[0].From) != 1 || string(in[0].From[0]["podSelector"]) != `{"matchLabels":{"dev.litterbox.pod":"litterbox-repo-x"}}` || len(in[0].Ports) != 3 {
		t.Errorf("the gateway's ingress = %s", raw)
	}
	for _, w := range []string{`"cidr":"0.0.0.0/0","except":["169.254.0.0/16","10.96.0.0/16"]`, `"cidr":"::/0","except":["fe80::/10","fd00:10::/108"]`, `"k8s-app":"kube-dns"`} {
		if !strings.Contains(string(raw), w) {
			t.Errorf("the gateway's policy has no %s: %s", w, raw)
		}
	}
}

// The apiserver's address is asked of kubectl once per kubeconfig: a later
// process (the next create, which keys the engine host's addresses by it)
// reads it from the state directory, with no kubectl; a kubeconfig changed
// since is asked again.
func TestEndpointKeptPerKubeconfig(t *testing.T) {
	kc, dir := filepath.Join(t.TempDir(), "kubeconfig"), t.TempDir()
	if err := os.WriteFile(kc, []byte("current-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	view := []string{"kubectl", "--kubeconfig", kc, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server} {.contexts[0].name}"}
	endpoint := func(f *runnertest.Fake) string {
		p, err := New(Options{Kubectl: "kubectl", Kubeconfig: kc, Runner: f, StateDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return p.endpoint()
	}
	if got := endpoint(runnertest.New(t).Expect(view, "https://a:6443 c", nil)); got != "https://a:6443 (context c)" {
		t.Errorf("endpoint = %q", got)
	}
	if got := endpoint(runnertest.New(t)); got != "https://a:6443 (context c)" {
		t.Errorf("endpoint kept = %q", got)
	}
	if err := os.WriteFile(kc, []byte("current-context: other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := endpoint(runnertest.New(t).Expect(view, "https://b:6443 other", nil)); got != "https://b:6443 (context other)" {
		t.Errorf("endpoint of a changed kubeconfig = %q", got)
	}
	// A context switched to whose name is as long (`kubectl config
	// use-context`: the file keeps its size) within the time a file
	// system tells apart is asked again too.
	fi, err := os.Stat(kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, []byte("current-context: thing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(kc, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := endpoint(runnertest.New(t).Expect(view, "https://c:6443 thing", nil)); got != "https://c:6443 (context thing)" {
		t.Errorf("endpoint of a kubeconfig switched to a context of the same length = %q", got)
	}
	// A kubeconfig kubectl cannot read is not kept: it is asked again.
	failed := &runner.ExitError{Command: "kubectl config view", ExitCode: 1, Stderr: "error loading config file"}
	if err := os.WriteFile(kc, []byte("bad\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint(runnertest.New(t).Expect(view, "", failed))
	endpoint(runnertest.New(t).Expect(view, "", failed))
}

// A call kubectl answers at once runs without garbage collection below a
// bound (most of what it allocates is its start-up); an exec, which may
// run long, does not. A GOGC or GOMEMLIMIT of the user's is left alone.
func TestControlCallsEnv(t *testing.T) {
	var got [][]string
	rec := runnerFunc(func(c *runner.Cmd) { got = append(got, c.Env) })
	p, _ := New(Options{Kubectl: "kubectl", Runner: rec, StateDir: t.TempDir()})
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	_, _ = p.run(context.Background(), p.Cmd("get", "pod", "x"))
	_, _ = p.Exec(context.Background(), provider.ExecRequest{Ref: provider.Ref{ID: "x"}, Cmd: []string{"true"}, Kind: runner.Stream})
	if len(got) != 2 || !slices.Equal(got[0], []string{"GOGC=off", "GOMEMLIMIT=256MiB"}) || len(got[1]) != 0 {
		t.Errorf("envs = %q, want the control call's without collection, the exec's untouched", got)
	}
	got = nil
	t.Setenv("GOGC", "50")
	_, _ = p.run(context.Background(), p.Cmd("get", "pod", "x"))
	if len(got) != 1 || len(got[0]) != 0 {
		t.Errorf("env with the user's GOGC = %q, want none added", got)
	}
}

// runnerFunc is a runner that records each command and succeeds.
type runnerFunc func(*runner.Cmd)

func (f runnerFunc) Run(_ context.Context, c *runner.Cmd) (runner.Result, error) {
	f(c)
	return runner.Result{}, nil
}

// The engine host's addresses and its ranges, asked for together (as the
// egress gateway's policy asks: a confined create, a fill, a pooled claim
// whose kept probe is old), are one kubectl call: the nodes and the
// ServiceCIDRs listed at once. It used to be two, one after the other.
func TestReachListsNodesOnce(t *testing.T) {
	list := `{"kind":"List","items":[{"kind":"Node","spec":{"podCIDR":"10.244.0.0/24"},"status":{"addresses":[{"type":"InternalIP","address":"10.203.0.2"}]}},` +
		`{"kind":"ServiceCIDR","spec":{"cidrs":["10.96.0.0/16"]}}]}`
	var mu sync.Mutex
	var calls [][]string
	listing, release := make(chan struct{}, 2), make(chan struct{})
	p, _ := New(Options{Kubectl: "kubectl", StateDir: t.TempDir(), Runner: answerFunc(func(c *runner.Cmd) string {
		mu.Lock()
		calls = append(calls, c.Args)
		mu.Unlock()
		listing <- struct{}{}
		<-release
		return list
	})})
	var host, nets []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); host, _ = p.HostAddrs(context.Background(), "") }()
	<-listing
	go func() { defer wg.Done(); nets, _ = p.Subnets(context.Background()) }()
	time.Sleep(200 * time.Millisecond) // the second ask waits for the first
	close(release)
	wg.Wait()
	if len(calls) != 1 || !slices.Contains(calls[0], "nodes,servicecidrs") || !slices.Equal(host, []string{"10.203.0.2"}) || !slices.Equal(nets, []string{"10.244.0.0/24", "10.96.0.0/16"}) {
		t.Errorf("calls %q; host %q, ranges %q; want one call listing both", calls, host, nets)
	}
}

// A cluster that serves no ServiceCIDRs (before Kubernetes 1.33), or a
// user not allowed to list them: the nodes alone are listed, and the
// ranges are their pod ranges, as before.
func TestReachWithoutServiceCIDRs(t *testing.T) {
	f := runnertest.New(t)
	p, _ := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect([]string{"kubectl", "get", "nodes,servicecidrs", "-o", "json"}, "",
		&runner.ExitError{Command: "kubectl get", ExitCode: 1, Stderr: `error: the server doesn't have a resource type "servicecidrs"`})
	f.Expect([]string{"kubectl", "get", "nodes", "-o", "json"}, `{"items":[{"spec":{"podCIDR":"10.244.0.0/24"},"status":{"addresses":[{"type":"InternalIP","address":"10.203.0.2"}]}}]}`, nil)
	nets, err := p.Subnets(context.Background())
	if err != nil || !slices.Equal(nets, []string{"10.244.0.0/24"}) {
		t.Errorf("ranges %q, %v; want the pod range", nets, err)
	}
}

// answerFunc is a runner that prints what the function says of each
// command.
type answerFunc func(*runner.Cmd) string

func (f answerFunc) Run(_ context.Context, c *runner.Cmd) (runner.Result, error) {
	return runner.Result{Stdout: []byte(f(c))}, nil
}
