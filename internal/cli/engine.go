package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/provider/kubernetes"
	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
)

// engineOptions are the flags that pick and tune the engine.
type engineOptions struct {
	Name string
	K    kubernetes.Options
	// RepoDir and VMIdle are the VM engine's: a VM per repository, the one
	// containing RepoDir, suspended after VMIdle unused (0: vm.DefaultIdle).
	RepoDir string
	VMIdle  time.Duration
}

// newEngine is the provider the --engine flag names: kubernetes, with its
// kubeconfig, context and namespace; vm, the VM of the repository (also
// returned, for `litterbox vm`, list and delete); or the docker provider
// for docker and podman.
func newEngine(ctx context.Context, o engineOptions, run runner.Runner) (provider.Provider, *vm.Machine, error) {
	switch o.Name {
	case kubernetes.Engine:
		o.K.Runner = run
		p, err := kubernetes.New(o.K)
		return p, nil, err
	case vm.Engine:
		m, err := vmMachine(ctx, o, run)
		if err != nil {
			// Commands that need no engine (version, completion, help)
			// still run; the others say why there is none.
			return noEngine{err}, nil, nil
		}
		p, err := vm.NewProvider(m, run)
		return p, m, err
	}
	p, err := docker.New(docker.Options{Engine: o.Name, Runner: run})
	return p, nil, err
}

// vmMachine is the VM of the repository containing o.RepoDir, kept in
// $XDG_CACHE_HOME/litterbox/vm/<the repository's id> (its disk grows with
// the engine's images, so not in .git), with the image
// scripts/ensure-vm-image.sh caches (LITTERBOX_VM_IMAGE). Nothing starts.
func vmMachine(ctx context.Context, o engineOptions, run runner.Runner) (*vm.Machine, error) {
	id, err := sandbox.RepoID(ctx, run, o.RepoDir)
	if err != nil {
		return nil, fmt.Errorf("the VM engine runs one VM per repository, and %w", err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("the VM engine keeps its VMs in your cache directory: %w", err)
	}
	// A short name: qemu's sockets live in the directory.
	dir := filepath.Join(cache, "litterbox", "vm", id[:min(len(id), 16)])
	img, _ := vm.LoadImage(vm.DefaultImageDir()) // without one, Start says how to build it
	m := vm.New(vm.Config{Dir: dir, Image: img, Idle: o.VMIdle, Runner: run})
	if o.VMIdle > 0 && m.Status().State == vm.StateRunning {
		// A running VM's watcher rereads it.
		if err := m.SetIdle(o.VMIdle); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// noEngine is an engine that could not be made: every call says why.
type noEngine struct{ err error }

func (n noEngine) fail() error {
	return &provider.UnreachableError{Endpoint: "vm", Reason: n.err.Error(), Err: n.err}
}

func (n noEngine) Info(context.Context) (provider.Info, error) {
	return provider.Info{Engine: vm.Engine}, n.fail()
}

func (n noEngine) Create(context.Context, provider.Spec) (*provider.Sandbox, error) {
	return nil, n.fail()
}

func (n noEngine) List(context.Context, provider.Selector) ([]provider.Sandbox, error) {
	return nil, n.fail()
}
func (n noEngine) Pause(context.Context, provider.Ref) (bool, error)  { return false, n.fail() }
func (n noEngine) Resume(context.Context, provider.Ref) (bool, error) { return false, n.fail() }
func (n noEngine) Remove(context.Context, provider.Ref) error         { return n.fail() }
func (n noEngine) Exec(context.Context, provider.ExecRequest) (provider.ExecResult, error) {
	return provider.ExecResult{}, n.fail()
}
func (n noEngine) Ports(context.Context, provider.Ref) ([]provider.Port, error) {
	return nil, n.fail()
}
func (n noEngine) Image(context.Context, string) (provider.Image, error) {
	return provider.Image{}, n.fail()
}
