package kubernetes_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/kubernetes"
	"github.com/litterbox-dev/litterbox/runner"
)

// outside are the stand-ins scripts/ensure-kubernetes.sh routes from the
// test cluster's node to a namespace beside it, each answering HTTP on port
// 80: what a pod on a cloud cluster would find at those addresses.
var outside = map[string]string{
	"public":         "198.51.100.1",
	"metadata":       "169.254.169.254",
	"API server":     "10.96.0.1",
	"cluster DNS":    "10.96.0.10",
	"private (10/8)": "10.203.0.6",
}

// nodeAPI is the API server at the node's address on the pod bridge.
const nodeAPI = "the API server on the node"

// TestEgress shows the sandbox pod's NetworkPolicy enforced on the test
// cluster (kube-network-policies): the sandbox reaches the public address
// and nothing else: not the metadata address, the API server's or cluster
// DNS's service address, a private address outside the cluster, a pod of
// another namespace, or a pod of its own that is no sandbox's. A pod no
// policy selects, beside it, reaches every one of them, so each refusal is
// the policy's. Its policy used to let it reach all but other sandboxes.
func TestEgress(t *testing.T) {
	k := enginetest.KubernetesOrSkip(t)
	ns, other := k.Namespace(t), k.Namespace(t)
	ctx := context.Background()
	p, err := kubernetes.New(kubernetes.Options{Kubectl: k.Kubectl, Kubeconfig: k.Kubeconfig, Namespace: ns,
		Runner: runner.Exec{Log: log.New(io.Discard)}, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(ns string, args ...string) string {
		t.Helper()
		out, err := k.Command(append([]string{"-n", ns}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl -n %s %s: %v\n%s", ns, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run := func(ns, name string, cmd ...string) {
		kubectl(ns, append([]string{"run", name, "--image=busybox:latest", "--image-pull-policy=Never", "--restart=Never", "--"}, cmd...)...)
	}
	run(other, "web", "httpd", "-f", "-p", "8080")
	run(ns, "web", "httpd", "-f", "-p", "8080")
	run(ns, "witness", "sleep", "3600")
	name := fmt.Sprintf("lbeg-%d", os.Getpid())
	sb, err := p.Create(ctx, provider.Spec{
		Name: name, Image: "busybox:latest", User: "1000:1000", Labels: map[string]string{"dev.litterbox.slug": name},
		Tmpfs:        []provider.Tmpfs{{Path: "/tmp", Mode: 0o1777, Size: 8 << 20}},
		ReadOnlyRoot: true, Init: true, DropCaps: true, NoNewPrivileges: true,
		Network: provider.NetworkIsolated, Cmd: []string{"sleep", "infinity"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Remove(context.Background(), sb.Ref) })
	for _, pod := range []string{other + "/web", ns + "/web", ns + "/witness"} {
		n, pod, _ := strings.Cut(pod, "/")
		kubectl(n, "wait", "--for=condition=Ready", "pod/"+pod, "--timeout=120s")
	}
	targets := map[string]string{
		"another namespace's pod": kubectl(other, "get", "pod", "web", "-o", "jsonpath={.status.podIP}") + " 8080",
		"a pod of no sandbox's":   kubectl(ns, "get", "pod", "web", "-o", "jsonpath={.status.podIP}") + " 8080",
	}
	for what, addr := range outside {
		targets[what] = addr + " 80"
	}
	// What the policy does not cover: the pod's own node, whose addresses
	// kube-network-policies does not judge (traffic to them is not
	// forwarded); on this one-node cluster the API server listens there
	// (docs/kubernetes.md, "What a pod can reach"). Should this change, so
	// must the docs.
	targets[nodeAPI] = "10.244.0.1 6443"
	// Every target at once: a refused one waits out nc's 3 s.
	var probe strings.Builder
	for what, addr := range targets {
		fmt.Fprintf(&probe, "(nc -w 3 %s </dev/null >/dev/null 2>&1 && echo %q) & ", addr, what)
	}
	probe.WriteString("wait")
	reached := func(out string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			m[l] = true
		}
		return m
	}
	byWitness := reached(kubectl(ns, "exec", "witness", "--", "sh", "-c", probe.String()))
	for what, addr := range targets {
		if !byWitness[what] {
			t.Errorf("a pod without a policy cannot reach %s (%s): the probe proves nothing (run scripts/ensure-kubernetes.sh: it routes the outside stand-ins)", what, addr)
		}
	}
	res, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", probe.String()}})
	if err != nil {
		t.Fatal(err)
	}
	bySandbox := reached(string(res.Stdout))
	for what, addr := range targets {
		if want := what == "public" || what == nodeAPI; bySandbox[what] != want {
			t.Errorf("the sandbox pod reached %s (%s): %v; want %v", what, addr, bySandbox[what], want)
		}
	}
}
