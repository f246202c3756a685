package vm

import (
	"context"
	"fmt"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// Engine is the VM engine's kind, as Info reports it.
const Engine = provider.EngineVM

// Provider runs sandboxes on the Docker engine inside a Machine: each call
// starts the VM when it does not run (the first after an idle stop waits
// for a boot), marks a use, and is then the docker provider's, through the
// VM's ssh.
type Provider struct {
	m *Machine
	d *docker.Provider
}

var (
	_ provider.Provider       = (*Provider)(nil)
	_ provider.Renamer        = (*Provider)(nil)
	_ provider.RuntimeChecker = (*Provider)(nil)
)

// NewProvider returns the provider of the VM m, running commands with r.
func NewProvider(m *Machine, r runner.Runner) (*Provider, error) {
	// The VM is on this machine: a slow answer is an emulated VM on a busy
	// host, not a lost network, so ssh waits for it longer than for a
	// remote engine.
	d, err := docker.New(docker.Options{Engine: docker.EngineDocker, Host: m.Endpoint(), SSHConfig: m.SSHConfig(), SSHConnectTimeout: 45 * time.Second, Runner: r})
	if err != nil {
		return nil, err
	}
	return &Provider{m: m, d: d}, nil
}

// Machine is the provider's VM.
func (p *Provider) Machine() *Machine { return p.m }

// Docker is the docker provider of the VM's engine (for benchmarks).
func (p *Provider) Docker() *docker.Provider { return p.d }

func (p *Provider) up(ctx context.Context) error { return p.m.Start(ctx) }

// Info describes the VM's engine: kind "vm", its Docker version, and where
// its ports are (forwarded here over ssh).
func (p *Provider) Info(ctx context.Context) (provider.Info, error) {
	if err := p.up(ctx); err != nil {
		return provider.Info{Engine: Engine, Endpoint: "vm " + p.m.Dir()}, err
	}
	info, err := p.d.Info(ctx)
	info.Engine = Engine
	info.Endpoint = fmt.Sprintf("vm %s (%s, %s)", p.m.Dir(), p.m.Endpoint(), p.m.Accel().Name)
	return info, err
}

func (p *Provider) Create(ctx context.Context, s provider.Spec) (*provider.Sandbox, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	defer p.m.Touch()
	return p.d.Create(ctx, s)
}

func (p *Provider) List(ctx context.Context, sel provider.Selector) ([]provider.Sandbox, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.List(ctx, sel)
}

func (p *Provider) Pause(ctx context.Context, ref provider.Ref) (bool, error) {
	if err := p.up(ctx); err != nil {
		return false, err
	}
	return p.d.Pause(ctx, ref)
}

func (p *Provider) Resume(ctx context.Context, ref provider.Ref) (bool, error) {
	if err := p.up(ctx); err != nil {
		return false, err
	}
	return p.d.Resume(ctx, ref)
}

func (p *Provider) Remove(ctx context.Context, ref provider.Ref) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.Remove(ctx, ref)
}

// Exec marks a use when the command ends too: a long command keeps the VM
// from its idle stop only up to Config.Idle.
func (p *Provider) Exec(ctx context.Context, r provider.ExecRequest) (provider.ExecResult, error) {
	if err := p.up(ctx); err != nil {
		return provider.ExecResult{}, err
	}
	defer p.m.Touch()
	return p.d.Exec(ctx, r)
}

func (p *Provider) Ports(ctx context.Context, ref provider.Ref) ([]provider.Port, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.Ports(ctx, ref)
}

func (p *Provider) Image(ctx context.Context, name string) (provider.Image, error) {
	if err := p.up(ctx); err != nil {
		return provider.Image{}, err
	}
	return p.d.Image(ctx, name)
}

func (p *Provider) Rename(ctx context.Context, ref provider.Ref, name string) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.Rename(ctx, ref, name)
}

func (p *Provider) CheckRuntime(ctx context.Context, runtime string) (string, error) {
	if runtime == "" {
		return "", nil
	}
	if err := p.up(ctx); err != nil {
		return "", err
	}
	return p.d.CheckRuntime(ctx, runtime)
}
