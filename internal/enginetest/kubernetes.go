package enginetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// KubeDir is where scripts/ensure-kubernetes.sh keeps a running cluster's
// kubeconfig and a link to the kubectl built for it.
const KubeDir = "/run/litterbox-k8s"

// Kubernetes is a cluster the tests may use: found by KubernetesOrSkip.
type Kubernetes struct {
	// Kubectl is the kubectl binary to run, of the cluster's version.
	Kubectl string
	// Kubeconfig is the file that names the cluster, its context and the
	// credentials.
	Kubeconfig string
}

// KubernetesOrSkip returns the cluster scripts/ensure-kubernetes.sh runs, or
// the one LITTERBOX_TEST_KUBECONFIG names. It never takes the user's own
// KUBECONFIG: a test run must not create pods in whatever cluster a shell
// happens to point at. When no cluster answers it skips the test, or fails
// it with CI=true, where the Kubernetes tests must run.
func KubernetesOrSkip(tb testing.TB) Kubernetes {
	tb.Helper()
	k := FindKubernetes()
	why := ""
	if !fileExists(k.Kubeconfig) {
		why = "no kubeconfig at " + k.Kubeconfig
	} else if out, err := k.Command("get", "--raw", "/readyz", "--request-timeout=10s").CombinedOutput(); err != nil {
		why = fmt.Sprintf("the cluster of %s does not answer: %v: %s", k.Kubeconfig, err, bytes.TrimSpace(out))
	}
	if why != "" {
		msg := "needs a Kubernetes cluster (" + why + "): run scripts/ensure-kubernetes.sh as root, or set LITTERBOX_TEST_KUBECONFIG"
		if os.Getenv("CI") == "true" {
			tb.Fatal("CI=true but this " + msg)
		}
		tb.Skip(msg)
	}
	return k
}

// FindKubernetes returns the cluster KubernetesOrSkip uses, without asking
// whether it answers.
func FindKubernetes() Kubernetes {
	k := Kubernetes{
		Kubeconfig: os.Getenv("LITTERBOX_TEST_KUBECONFIG"),
		Kubectl:    os.Getenv("LITTERBOX_KUBECTL"),
	}
	if k.Kubeconfig == "" {
		k.Kubeconfig = filepath.Join(KubeDir, "kubeconfig")
	}
	if k.Kubectl == "" {
		k.Kubectl = "kubectl"
		if link := filepath.Join(KubeDir, "bin", "kubectl"); fileExists(link) {
			k.Kubectl = link
		}
	}
	return k
}

// Command returns kubectl with args against the cluster.
func (k Kubernetes) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(k.Kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.Kubeconfig)
	return cmd
}

var namespaceSeq atomic.Int64

// Namespace makes a namespace for one test, labelled dev.litterbox.test like
// the test suite's Docker objects, and deletes it (and whatever is left in
// it) when the test ends. It returns once pods can be created there: until
// the controller manager has made the namespace's default service account,
// the apiserver refuses them.
func (k Kubernetes) Namespace(tb testing.TB) string {
	tb.Helper()
	id := fmt.Sprintf("%d-%d", os.Getpid(), namespaceSeq.Add(1))
	ns := "litterbox-test-" + id
	if out, err := k.Command("create", "namespace", ns).CombinedOutput(); err != nil {
		tb.Fatalf("kubectl create namespace %s: %v\n%s", ns, err, out)
	}
	tb.Cleanup(func() {
		// --wait=false: the namespace controller finishes the deletion after
		// the test; nothing waits for it.
		if out, err := k.Command("delete", "namespace", ns, "--wait=false").CombinedOutput(); err != nil {
			tb.Errorf("kubectl delete namespace %s: %v\n%s", ns, err, out)
		}
	})
	if out, err := k.Command("label", "namespace", ns, "dev.litterbox.test="+id).CombinedOutput(); err != nil {
		tb.Fatalf("kubectl label namespace %s: %v\n%s", ns, err, out)
	}
	var out []byte
	var err error
	for range 300 {
		if out, err = k.Command("-n", ns, "get", "serviceaccount", "default").CombinedOutput(); err == nil {
			return ns
		}
		time.Sleep(200 * time.Millisecond)
	}
	tb.Fatalf("namespace %s has no default service account after 60 s (is kube-controller-manager running?): %s", ns, strings.TrimSpace(string(out)))
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
