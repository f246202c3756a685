package services

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// PortInfo is one named port of a sandbox and where the host reaches it.
type PortInfo struct {
	Name string `json:"name"`
	// ContainerPort is the port inside the sandbox, also in Env.
	ContainerPort int    `json:"containerPort"`
	Env           string `json:"env"`
	// HostPort is the port the engine picked on its host's 127.0.0.1; 0
	// when not published.
	HostPort int    `json:"hostPort"`
	URL      string `json:"url,omitempty"`
	// Note says where URL works when that is not this machine (the engine
	// runs on another host, or in another network namespace).
	Note string `json:"note,omitempty"`
}

// PortsResult lists a sandbox's named ports.
type PortsResult struct {
	Sandbox string     `json:"sandbox"`
	Ports   []PortInfo `json:"ports"`
}

// Ports lists the named ports of a running sandbox with the host URL of each.
// The names were given to the engine at create, so a later edit of the
// config file changes nothing here.
func (sv *Supervisor) Ports(ctx context.Context, h *core.Handle) (*PortsResult, error) {
	ref := h.Ref
	if h.Repo != nil {
		// A confined sandbox's ports are its gateway's to publish.
		if rec, ok, err := netgate.Read(h.Repo.Git.CommonDir, h.Slug); err != nil {
			return nil, err
		} else if ok {
			ref = rec.Ref()
		}
	}
	ports, err := sv.Provider.Ports(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("ports of sandbox %q: %w", h.Slug, err)
	}
	return &PortsResult{Sandbox: h.Slug, Ports: portInfos(ports)}, nil
}

// portInfos adds each port's variable to the engine's list.
func portInfos(ports []provider.Port) []PortInfo {
	out := make([]PortInfo, 0, len(ports))
	for _, p := range ports {
		out = append(out, PortInfo{
			Name: p.Name, ContainerPort: p.ContainerPort, Env: config.Port{Name: p.Name}.EnvName(),
			HostPort: p.HostPort, URL: p.URL, Note: p.Note,
		})
	}
	return out
}
