package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
)

// kubernetesScript reports whether a script is one of the Kubernetes
// journeys, which only TestScriptsKubernetes runs.
func kubernetesScript(name string) bool { return strings.HasPrefix(name, "kubernetes_") }

// TestScriptsKubernetes runs the kubernetes_*.txtar journeys (create, an
// MCP session, diff, merge, pause, delete, hardening, isolation) with
// --engine kubernetes (through LITTERBOX_ENGINE) against the cluster of
// scripts/ensure-kubernetes.sh, in a namespace of its own. With CI=true a
// cluster that does not answer fails the test.
func TestScriptsKubernetes(t *testing.T) {
	k := enginetest.KubernetesOrSkip(t)
	ns := k.Namespace(t)
	testscript.Run(t, scriptParams(t, kubernetesScript,
		"LITTERBOX_ENGINE=kubernetes", "LITTERBOX_KUBECONFIG="+k.Kubeconfig, "LITTERBOX_KUBECTL="+k.Kubectl, "LITTERBOX_NAMESPACE="+ns))
}

// condKubernetesGvisor is the script condition k8sgvisor (scriptcmds_test.go).
func condKubernetesGvisor() (bool, error) {
	err := enginetest.FindKubernetes().Command("get", "runtimeclass", "gvisor", "--request-timeout=10s").Run()
	return neededInCI(err == nil, "CI=true but the test cluster has no RuntimeClass gvisor: scripts/ensure-kubernetes.sh makes it when it can build runsc and gVisor's containerd shim (its output says why it could not)")
}

// cmdKubectl is the script command kubectl (scriptcmds_test.go).
func cmdKubectl(ts *testscript.TestScript, neg bool, args []string) {
	kubectl := ts.Getenv("LITTERBOX_KUBECTL")
	if kubectl == "" {
		ts.Fatalf("kubectl: LITTERBOX_KUBECTL is not set: run the script from TestScriptsKubernetes")
	}
	err := ts.Exec(kubectl, append([]string{"--kubeconfig", ts.Getenv("LITTERBOX_KUBECONFIG"), "--namespace", ts.Getenv("LITTERBOX_NAMESPACE")}, args...)...)
	var ee *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		ts.Fatalf("kubectl: %v", err)
	case neg && err == nil:
		ts.Fatalf("kubectl %s succeeded unexpectedly", strings.Join(args, " "))
	case !neg && err != nil:
		ts.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
}
