package services

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// Ports lists the named ports of a running sandbox with the host URL of each.
// The names were given to the engine at create, so a later edit of the
// config file changes nothing here.
func (sv *Supervisor) Ports(ctx context.Context, h *api.Handle) (*api.PortsResult, error) {
	ref := h.Ref
	if h.Repo != nil {
		// A confined sandbox's ports are its gateway's to publish,
		// where the two share a volume (a gateway linked by network
		// publishes none: the engine forwards to the sandbox itself).
		if rec, ok, err := netgate.Read(h.Repo.Git.CommonDir, h.Slug); err != nil {
			return nil, err
		} else if ok && rec.Volume != "" {
			ref = rec.Ref()
		}
	}
	ports, err := sv.Provider.Ports(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("ports of sandbox %q: %w", h.Slug, err)
	}
	return &api.PortsResult{Sandbox: h.Slug, Ports: portInfos(ports)}, nil
}

// portInfos adds each port's variable to the engine's list.
func portInfos(ports []provider.Port) []api.PortInfo {
	out := make([]api.PortInfo, 0, len(ports))
	for _, p := range ports {
		out = append(out, api.PortInfo{
			Name: p.Name, ContainerPort: p.ContainerPort, Env: config.Port{Name: p.Name}.EnvName(),
			HostPort: p.HostPort, URL: p.URL, Note: p.Note,
		})
	}
	return out
}
