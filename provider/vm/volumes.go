package vm

import (
	"context"

	"github.com/litterbox-dev/litterbox/provider"
)

// The VM's Docker keeps the shared caches' volumes (provider.Volumes);
// each call starts the VM first.
var _ provider.Volumes = (*Provider)(nil)

func (p *Provider) KeepsVolumes() bool { return p.d.KeepsVolumes() }

func (p *Provider) ListVolumes(ctx context.Context, labels ...string) ([]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.ListVolumes(ctx, labels...)
}

func (p *Provider) VolumeLabels(ctx context.Context, names []string) (map[string]map[string]string, error) {
	if err := p.up(ctx); err != nil {
		return nil, err
	}
	return p.d.VolumeLabels(ctx, names)
}
