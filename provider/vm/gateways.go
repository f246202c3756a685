package vm

import (
	"context"
	"io"

	"github.com/litterbox-dev/litterbox/provider"
)

// The VM's Docker runs egress gateways (provider.Gateways): each call
// starts the VM first, as the provider's others do, then is its Docker's.
var _ provider.Gateways = (*Provider)(nil)

func (p *Provider) MountShared(v provider.SharedVolume, path string) (provider.Volume, bool) {
	return p.d.MountShared(v, path)
}

func (p *Provider) CreateVolume(ctx context.Context, v provider.SharedVolume) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.CreateVolume(ctx, v)
}

func (p *Provider) RemoveVolume(ctx context.Context, name string) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.RemoveVolume(ctx, name)
}

func (p *Provider) RemoveAll(ctx context.Context, names ...string) ([]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.RemoveAll(ctx, names...)
}

func (p *Provider) RemoveNetless(ctx context.Context, names ...string) ([]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.RemoveNetless(ctx, names...)
}

func (p *Provider) State(ctx context.Context, ref provider.Ref) (provider.State, error) {
	if err := p.up(ctx); err != nil {
		return provider.StateNone, err
	}
	return p.d.State(ctx, ref)
}

func (p *Provider) Start(ctx context.Context, ref provider.Ref) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.Start(ctx, ref)
}

func (p *Provider) BuildImage(ctx context.Context, tag, dockerfile string, buildContext io.Reader) error {
	if err := p.up(ctx); err != nil {
		return err
	}
	return p.d.BuildImage(ctx, tag, dockerfile, buildContext)
}

func (p *Provider) HostAddrs(ctx context.Context, image string) ([]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.HostAddrs(ctx, image)
}

func (p *Provider) Subnets(ctx context.Context) ([]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.Subnets(ctx)
}

func (p *Provider) Endpoint() string { return p.d.Endpoint() }
