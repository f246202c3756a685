package sandbox

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/docker"
)

// PortInfo is one named port of a sandbox and where the host reaches it.
type PortInfo struct {
	Name string `json:"name"`
	// ContainerPort is the port inside the sandbox, also in Env.
	ContainerPort int    `json:"containerPort"`
	Env           string `json:"env"`
	// HostPort is the port docker picked on 127.0.0.1; 0 when not published.
	HostPort int    `json:"hostPort"`
	URL      string `json:"url,omitempty"`
}

// PortsResult lists a sandbox's named ports.
type PortsResult struct {
	Sandbox string     `json:"sandbox"`
	Ports   []PortInfo `json:"ports"`
}

// Ports lists the named ports of a running sandbox with the host URL of each,
// from one docker inspect. The names come from the container's LabelPorts
// label, set at create, so a later edit of the config file changes nothing
// here.
func (s *Service) Ports(ctx context.Context, h *Handle) (*PortsResult, error) {
	label, bindings, err := s.Docker.PublishedPorts(ctx, h.Container, LabelPorts)
	if err != nil {
		return nil, fmt.Errorf("ports of sandbox %q: %w", h.Slug, err)
	}
	return &PortsResult{Sandbox: h.Slug, Ports: namedPorts(label, bindings)}, nil
}

// namedPorts joins the LabelPorts value ("web=8080,api=3000") with docker's
// bindings.
func namedPorts(label string, bindings []docker.Binding) []PortInfo {
	out := []PortInfo{}
	for _, p := range ParsePortsLabel(label) {
		pi := PortInfo{Name: p.Name, ContainerPort: p.ContainerPort, Env: p.EnvName()}
		for _, b := range bindings {
			if b.ContainerPort == p.ContainerPort && b.Proto == "tcp" && (pi.HostPort == 0 || b.HostIP == "127.0.0.1") {
				pi.HostPort = b.HostPort
				host := b.HostIP
				if host == "" || host == "0.0.0.0" {
					host = "127.0.0.1"
				}
				pi.URL = fmt.Sprintf("http://%s:%d", host, b.HostPort)
			}
		}
		out = append(out, pi)
	}
	return out
}

// ParsePortsLabel parses a LabelPorts value, sorted by name. Malformed items
// are skipped: the label is ours, but a container is only a docker object.
func ParsePortsLabel(label string) []Port {
	var ports []Port
	for _, item := range strings.Split(label, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || name == "" {
			continue
		}
		ports = append(ports, Port{Name: name, ContainerPort: n})
	}
	sort.Slice(ports, func(i, j int) bool { return ports[i].Name < ports[j].Name })
	return ports
}
