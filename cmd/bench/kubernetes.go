package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// kubernetesCases are the rows of the kubernetes group: create,
// an MCP `bash true` and delete with --engine kubernetes on the cluster of
// scripts/ensure-kubernetes.sh, each above the bare kubectl commands
// measured in the same run.
var kubernetesCases = []string{
	"create, kubernetes (small repo)",
	"mcp bash `true`, kubernetes",
	"delete, kubernetes",
}

// kubeCluster finds the test cluster: its kubeconfig and the kubectl built
// with it, as internal/enginetest does.
func kubeCluster(ctx context.Context) (kubeconfig, kubectl string, err error) {
	kubeconfig = os.Getenv("LITTERBOX_TEST_KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = "/run/litterbox-k8s/kubeconfig"
	}
	kubectl = os.Getenv("LITTERBOX_KUBECTL")
	if kubectl == "" {
		kubectl = "/run/litterbox-k8s/bin/kubectl"
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		return "", "", fmt.Errorf("no cluster: run scripts/ensure-kubernetes.sh (%v)", err)
	}
	if err := runCmd(ctx, kubectl, "--kubeconfig", kubeconfig, "get", "--raw", "/readyz"); err != nil {
		return "", "", fmt.Errorf("the cluster does not answer: run scripts/ensure-kubernetes.sh (%v)", firstLine(err.Error()))
	}
	return kubeconfig, kubectl, nil
}

// kubeRun is a group's namespace of its own on the test cluster, with a
// small repository whose litterbox uses it.
type kubeRun struct {
	ns  string
	k   func(...string) []string // kubectl's argv in the namespace
	env []string                 // what makes litterbox use it
	dir string                   // the repository
	b   *bench
}

// lb runs litterbox in the repository, on the namespace.
func (kr *kubeRun) lb(ctx context.Context, args ...string) ([]byte, error) {
	out, _, err := kr.lbCPU(ctx, args...)
	return out, err
}

// lbCPU is lb, with the CPU time the command used, its children's
// (kubectl, git) included.
func (kr *kubeRun) lbCPU(ctx context.Context, args ...string) ([]byte, time.Duration, error) {
	p := kr.b.litterbox(kr.dir, args...)
	p.env = append(p.env, kr.env...)
	return p.runCPU(ctx)
}

// done deletes the namespace, and everything in it.
func (kr *kubeRun) done() {
	_ = runCmd(context.Background(), kr.k("delete", "namespace", kr.ns, "--wait=false")...)
}

// kubeSetup finds the test cluster (nil, and cases skipped, without one),
// makes a namespace of the run's own (suffix tells two groups' apart),
// waits for its default service account, and generates a small repository.
func (b *bench) kubeSetup(ctx context.Context, cases []string, suffix string) (*kubeRun, error) {
	kubeconfig, kubectl, err := kubeCluster(ctx)
	if err != nil {
		b.skip(cases, err.Error())
		return nil, nil
	}
	kr := &kubeRun{ns: fmt.Sprintf("litterbox-bench-%d%s", os.Getpid(), suffix), b: b}
	kr.k = func(args ...string) []string {
		return append([]string{kubectl, "--kubeconfig", kubeconfig, "--namespace", kr.ns}, args...)
	}
	if err := runCmd(ctx, kubectl, "--kubeconfig", kubeconfig, "create", "namespace", kr.ns); err != nil {
		return nil, err
	}
	_ = runCmd(ctx, kubectl, "--kubeconfig", kubeconfig, "label", "namespace", kr.ns, b.label)
	for i := 0; runCmd(ctx, kr.k("get", "serviceaccount", "default")...) != nil; i++ {
		if i > 300 {
			kr.done()
			return nil, fmt.Errorf("namespace %s has no default service account after 60 s", kr.ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	kr.env = []string{"LITTERBOX_ENGINE=kubernetes", "LITTERBOX_KUBECONFIG=" + kubeconfig, "LITTERBOX_KUBECTL=" + kubectl,
		"LITTERBOX_NAMESPACE=" + kr.ns, "LITTERBOX_ALLOW_UNISOLATED=1"}
	if kr.dir, err = b.repo(ctx, b.small); err != nil {
		kr.done()
		return nil, err
	}
	// Open sandboxes, as these rows have always measured; the groups that
	// measure confined ones (a gateway pod beside each, docs/egress.md#kubernetes)
	// say so with setEgress.
	if err := kr.setEgress(true); err != nil {
		kr.done()
		return nil, err
	}
	return kr, nil
}

// caseKubernetes times, in a namespace of its own: litterbox create against
// `kubectl run` + `kubectl wait` of a bare busybox pod; MCP `bash true`
// against `kubectl exec POD -- true` into the same pod; litterbox delete
// against `kubectl delete pod`. Rounds interleave litterbox and kubectl.
func (b *bench) caseKubernetes(ctx context.Context) error {
	kr, err := b.kubeSetup(ctx, kubernetesCases, "")
	if kr == nil || err != nil {
		return err
	}
	defer kr.done()
	ns, k, env, dir := kr.ns, kr.k, kr.env, kr.dir
	lb := func(args ...string) error {
		_, err := kr.lb(ctx, args...)
		return err
	}
	var create, del, fCreate, fDel []time.Duration
	// Round 0 warms up (and runs the isolation probe once); it is not counted.
	for i := 0; i <= b.n; i++ {
		name, pod := fmt.Sprintf("k%d", i), fmt.Sprintf("floor-%d", i)
		dc, err := timed(func() error { return lb("create", name) })
		if err != nil {
			return err
		}
		fc, err := timed(func() error { return kubectlRunWait(ctx, k, pod, b.label) })
		if err != nil {
			return err
		}
		dd, err := timed(func() error { return lb("delete", "--force", name) })
		if err != nil {
			return err
		}
		fd, err := timed(func() error { return runCmd(ctx, k("delete", "pod", pod, "--wait=true")...) })
		if err != nil {
			return err
		}
		if i > 0 {
			create, fCreate, del, fDel = append(create, dc), append(fCreate, fc), append(del, dd), append(fDel, fd)
		}
	}

	s, err := b.startMCPEnv(ctx, dir, env)
	if err != nil {
		return err
	}
	defer s.close()
	out, err := s.call(ctx, "sandbox-create", map[string]any{"name": "kb"})
	if err != nil {
		return err
	}
	defer func() { _ = lb("delete", "--force", "kb") }()
	pod, _ := out["container"].(string)
	var bash, exec []time.Duration
	for i := 0; i <= b.n; i++ {
		db, err := timed(func() error {
			_, err := s.call(ctx, "bash", map[string]any{"sandbox": "kb", "command": "true"})
			return err
		})
		if err != nil {
			return err
		}
		de, err := timed(func() error { return runCmd(ctx, k("exec", pod, "-c", "sandbox", "--", "true")...) })
		if err != nil {
			return err
		}
		if i > 0 {
			bash, exec = append(bash, db), append(exec, de)
		}
	}
	b.rows = append(b.rows,
		withNote(row(kubernetesCases[0], create, fCreate, info), "floor: kubectl run + kubectl wait Ready (no copy); "+ns),
		withNote(row(kubernetesCases[1], bash, exec, info), "floor: kubectl exec POD -- true"),
		withNote(row(kubernetesCases[2], del, fDel, info), "floor: kubectl delete pod --wait"),
	)
	return nil
}
