package enginetest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// hardenedPod is the pod the kubernetes provider makes for a
// sandbox, in Kubernetes terms of what litterbox asks of Docker: a non-root
// user, a read-only root, no capabilities, no privilege escalation, the
// runtime's seccomp profile, memory-backed /src and /tmp with size limits,
// CPU and memory limits, and no service-account token. PID 1 exits on
// SIGTERM, so deleting the pod does not wait out the grace period.
const hardenedPod = `apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  labels: {dev.litterbox.sandbox: %[1]s}
spec:
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: 5
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    runAsNonRoot: true
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: sandbox
    image: %[2]s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 2147483647 & wait"]
    workingDir: /src
    securityContext:
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
    resources:
      limits: {cpu: "1", memory: 256Mi}
      requests: {cpu: 10m, memory: 16Mi}
    volumeMounts:
    - {name: src, mountPath: /src}
    - {name: tmp, mountPath: /tmp}
  volumes:
  - name: src
    emptyDir: {medium: Memory, sizeLimit: 64Mi}
  - name: tmp
    emptyDir: {medium: Memory, sizeLimit: 16Mi}
`

// TestKubernetesCluster proves the cluster of scripts/ensure-kubernetes.sh
// does what the kubernetes provider will rely on, with the kubectl argv it
// will use: a hardened pod starts from the locally loaded busybox, exec
// carries stdin, separate stdout and stderr and the exit code, a tar goes in
// and comes back out byte for byte, port-forward reaches a server in the
// pod, and delete removes it.
func TestKubernetesCluster(t *testing.T) {
	k := KubernetesOrSkip(t)
	ns := k.Namespace(t)
	image := os.Getenv("LITTERBOX_TEST_IMAGE")
	if image == "" {
		image = "busybox:latest"
	}
	const pod = "sandbox"
	c := nsKubectl{k, ns}

	c.must(t, []byte(fmt.Sprintf(hardenedPod, pod, image)), "create", "-f", "-")
	if _, errOut, code := c.run(t, nil, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s"); code != 0 {
		describe, _, _ := c.run(t, nil, "describe", "pod", pod)
		t.Fatalf("pod not Ready (%s):\n%s", strings.TrimSpace(errOut), describe)
	}

	t.Run("hardening", func(t *testing.T) {
		out := c.must(t, nil, "exec", pod, "--", "sh", "-c",
			`id -u; id -g; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; `+
				`awk '$2 == "/" { split($4, o, ","); print "root " o[1] }' /proc/mounts; `+
				`touch /src/x && echo src-writable; grep -E ' /(src|tmp) ' /proc/mounts | cut -d' ' -f2,3; `+
				`ls /var/run/secrets/kubernetes.io 2>/dev/null || echo no-token`)
		want := "1000\n1000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n" +
			"root ro\nsrc-writable\n/src tmpfs\n/tmp tmpfs\nno-token\n"
		if out != want {
			t.Errorf("inside the pod:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("exec", func(t *testing.T) {
		out, errOut, code := c.run(t, []byte("from-stdin\n"), "exec", "-i", pod, "--", "sh", "-c", `read l; echo "out $l"; echo "err $l" >&2; exit 3`)
		if out != "out from-stdin\n" || code != 3 || !strings.HasPrefix(errOut, "err from-stdin\n") {
			t.Errorf("exec -i: stdout %q, stderr %q, exit %d; want stdout %q, stderr starting %q, exit 3",
				out, errOut, code, "out from-stdin\n", "err from-stdin\n")
		}
		// A missing command: through sh it is 127 as on Docker; run
		// directly, the runtime reports it as a failure of the exec itself.
		if _, _, code := c.run(t, nil, "exec", pod, "--", "sh", "-c", "exec /no/such/command"); code != 127 {
			t.Errorf("missing command through sh: exit %d, want 127", code)
		}
		if _, errOut, code := c.run(t, nil, "exec", pod, "--", "/no/such/command"); code == 0 {
			t.Errorf("missing command run directly: exit 0")
		} else {
			t.Logf("missing command run directly: exit %d, %s", code, strings.TrimSpace(errOut))
		}
	})

	t.Run("tar", func(t *testing.T) {
		blob := make([]byte, 1<<20)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range blob {
			blob[i] = byte(r.UintN(256))
		}
		sent := []tarEntry{
			{name: "./index.html", mode: 0o644, body: "hello from the pod\n"},
			{name: "./bin/", mode: 0o755, dir: true},
			{name: "./bin/run.sh", mode: 0o755, body: "#!/bin/sh\necho ran\n"},
			{name: "./bin/blob", mode: 0o600, body: string(blob)},
			{name: "./link", mode: 0o777, link: "index.html"},
		}
		c.must(t, writeTar(t, sent), "exec", "-i", pod, "--", "tar", "-x", "-C", "/src")
		if out := c.must(t, nil, "exec", pod, "--", "sh", "/src/bin/run.sh"); out != "ran\n" {
			t.Errorf("the copied script printed %q", out)
		}
		back := readTar(t, []byte(c.must(t, nil, "exec", pod, "--", "tar", "-c", "-C", "/src", ".")))
		got := map[string]tarEntry{}
		for _, e := range back {
			got[e.name] = e
		}
		for _, want := range sent {
			e, ok := got[want.name]
			switch {
			case !ok:
				t.Errorf("%s did not come back out", want.name)
			case e.mode != want.mode || e.dir != want.dir || e.link != want.link || e.body != want.body:
				t.Errorf("%s came back as mode %o dir %v link %q, %d bytes; sent mode %o dir %v link %q, %d bytes",
					want.name, e.mode, e.dir, e.link, len(e.body), want.mode, want.dir, want.link, len(want.body))
			}
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		c.must(t, nil, "exec", pod, "--", "httpd", "-p", "8080", "-h", "/src")
		pf := k.Command("-n", ns, "port-forward", "--address", "127.0.0.1", "pod/"+pod, ":8080")
		stdout, err := pf.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var pfErr bytes.Buffer
		pf.Stderr = &pfErr
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = pf.Process.Kill()
			_ = pf.Wait()
		}()
		// "Forwarding from 127.0.0.1:PORT -> 8080" once it listens; an
		// empty read means it exited (its reason is on stderr).
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		m := regexp.MustCompile(`^Forwarding from (127\.0\.0\.1:\d+) -> 8080`).FindStringSubmatch(line)
		if m == nil {
			_ = pf.Process.Kill()
			_ = pf.Wait()
			t.Fatalf("port-forward printed %q; stderr: %s", line, pfErr.String())
		}
		resp, err := http.Get("http://" + m[1] + "/index.html")
		if err != nil {
			t.Fatalf("GET through the port-forward: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello from the pod\n" {
			t.Errorf("GET through the port-forward: %s %q", resp.Status, body)
		}
	})

	t.Run("delete", func(t *testing.T) {
		c.must(t, nil, "delete", "pod", pod, "--wait=true", "--timeout=60s")
		if out, errOut, code := c.run(t, nil, "get", "pod", pod); code == 0 || !strings.Contains(errOut, "NotFound") {
			t.Errorf("after delete, get pod: exit %d\n%s%s", code, out, errOut)
		}
	})
}

// nsKubectl runs kubectl in one namespace.
type nsKubectl struct {
	k  Kubernetes
	ns string
}

// run runs kubectl -n NS args with stdin (if not nil) and returns its output
// and exit code; it fails the test only when kubectl could not run at all.
func (c nsKubectl) run(t *testing.T, stdin []byte, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := c.k.Command(append([]string{"-n", c.ns}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// must is run for a command that must succeed; it returns stdout.
func (c nsKubectl) must(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, errOut, code := c.run(t, stdin, args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

type tarEntry struct {
	name, body, link string
	mode             int64
	dir              bool
}

func writeTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: tar.TypeReg, Size: int64(len(e.body))}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTar(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	var entries []tarEntry
	r := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := r.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatalf("the tar that came out of the pod: %v", err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		name := h.Name
		if h.Typeflag == tar.TypeDir && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		entries = append(entries, tarEntry{
			name: name, body: string(body), link: h.Linkname,
			mode: h.Mode & 0o777, dir: h.Typeflag == tar.TypeDir,
		})
	}
}
