package docker

import (
	"context"

	"github.com/litterbox-dev/litterbox/provider"
)

// The engine keeps the shared caches' volumes (provider.Volumes).
var _ provider.Volumes = (*Provider)(nil)

// KeepsVolumes says whether a mount makes its volume with its labels
// (Client.MakesVolumesAtMount).
func (p *Provider) KeepsVolumes() bool { return p.c.MakesVolumesAtMount() }

// ListVolumes names the volumes carrying labels (Client.VolumeList).
func (p *Provider) ListVolumes(ctx context.Context, labels ...string) ([]string, error) {
	return p.c.VolumeList(ctx, labels...)
}

// VolumeLabels is the labels of each volume of names (Client.VolumeLabels).
func (p *Provider) VolumeLabels(ctx context.Context, names []string) (map[string]map[string]string, error) {
	return p.c.VolumeLabels(ctx, names)
}
