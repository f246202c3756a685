package kubernetes_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/contract"
	"github.com/litterbox-dev/litterbox/provider/kubernetes"
	"github.com/litterbox-dev/litterbox/runner"
)

// deadKubeconfig names a cluster where nothing answers.
const deadKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: dead
  user: {token: none}
contexts:
- name: dead
  context: {cluster: dead, user: dead}
current-context: dead
`

// TestContract runs the provider contract against the cluster of
// scripts/ensure-kubernetes.sh, in a namespace of its own. With CI=true a
// cluster that does not answer fails the test.
func TestContract(t *testing.T) {
	runContract(t, enginetest.KubernetesOrSkip(t), "", nil, nil)
}

// TestContractGVisor runs it with every sandbox's pod in the RuntimeClass
// gvisor, which the test cluster has when it could build gVisor: the whole
// contract holds on gVisor's kernel. With CI=true a cluster without the
// class fails the test.
func TestContractGVisor(t *testing.T) {
	k := enginetest.KubernetesOrSkip(t)
	if out, err := k.Command("get", "runtimeclass", "gvisor").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("the cluster has no RuntimeClass gvisor (%s): scripts/ensure-kubernetes.sh makes it when it can build runsc and gVisor's shim", bytes.TrimSpace(out))
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but " + msg)
		}
		t.Skip(msg)
	}
	runContract(t, k, "gvisor", contract.GVisorKernel, map[string]string{
		contract.LacksPorts:       "kubectl port-forward cannot reach a port of a pod under gVisor",
		contract.LacksMemoryExact: "gVisor holds all of a pod's containers to the pod's memory limit, which adds the root container's 64 MiB",
	})
}

// runContract runs the contract against k with every Spec's Runtime set to
// runtime (the nodes' default when ""), kernel as its Kernel check, and
// what the runtime lacks beside what Kubernetes lacks.
func runContract(t *testing.T, k enginetest.Kubernetes, runtime string, kernel func(*testing.T, string), lacks map[string]string) {
	ns := k.Namespace(t)
	run := runner.Exec{Log: log.New(io.Discard)}
	p, err := kubernetes.New(kubernetes.Options{Kubectl: k.Kubectl, Kubeconfig: k.Kubeconfig, Namespace: ns, Runner: run, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(dead, []byte(deadKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	dp, err := kubernetes.New(kubernetes.Options{Kubectl: k.Kubectl, Kubeconfig: dead, Runner: run, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	label := fmt.Sprintf("dev.litterbox.test=contract-%d-kubernetes", os.Getpid())
	if runtime != "" {
		label += "-" + runtime
	}
	all := map[string]string{
		contract.LacksPidsLimit:   "Kubernetes limits processes per node (the kubelet's podPidsLimit), not per pod",
		contract.LacksNetworkNone: "a pod always has a network interface",
	}
	maps.Copy(all, lacks)
	contract.Run(t, contract.Engine{
		Provider: p, Kind: kubernetes.Engine, Dead: dp, // ports: port-forwards listen on this machine
		Label: label, Lacks: all, Runtime: runtime, Kernel: kernel,
	})
}

// TestListFindsEarlierPods: a sandbox made before bare keys became labels
// too (its path-valued key only an annotation) is still listed by a
// selector that asks for that key, as list and the pool ask.
func TestListFindsEarlierPods(t *testing.T) {
	k := enginetest.KubernetesOrSkip(t)
	ns := k.Namespace(t)
	run := runner.Exec{Log: log.New(io.Discard)}
	p, err := kubernetes.New(kubernetes.Options{Kubectl: k.Kubectl, Kubeconfig: k.Kubeconfig, Namespace: ns, Runner: run, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("lbold-%d", os.Getpid())
	sp := provider.Spec{
		Name: name, Image: "busybox:latest", Hostname: "box", Workdir: "/",
		Labels:  map[string]string{"dev.litterbox.slug": name, "dev.litterbox.git-dir": "/home/u/repo/.git"},
		Network: provider.NetworkIsolated, Cmd: []string{"sleep", "infinity"},
	}
	ctx := context.Background()
	sb, err := p.Create(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Remove(context.Background(), sb.Ref) })
	// What an earlier litterbox made: the key as an annotation alone.
	if out, err := k.Command("-n", ns, "label", "pod", name, "dev.litterbox.git-dir-").CombinedOutput(); err != nil {
		t.Fatalf("kubectl label: %v: %s", err, out)
	}
	list, err := p.List(ctx, provider.Selector{Labels: map[string]string{"dev.litterbox.slug": name, "dev.litterbox.git-dir": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != name || list[0].State != provider.StateRunning {
		t.Fatalf("listed %+v, want the one running pod %s", list, name)
	}
}
