package docker

import (
	"context"
	"io"
	"net/netip"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// The engine runs egress gateways (provider.Gateways).
var _ provider.Gateways = (*Provider)(nil)

// MountShared is a mount of v at path (Client.MountMaking).
func (p *Provider) MountShared(v provider.SharedVolume, path string) (provider.Volume, bool) {
	return p.c.MountMaking(v, path)
}

// CreateVolume makes v (Client.VolumeCreate).
func (p *Provider) CreateVolume(ctx context.Context, v provider.SharedVolume) error {
	return p.c.VolumeCreate(ctx, v)
}

// RemoveVolume removes volume name (Client.VolumeRemove).
func (p *Provider) RemoveVolume(ctx context.Context, name string) error {
	return p.c.VolumeRemove(ctx, name)
}

// RemoveAll removes containers in one engine call (Client.RemoveAll).
func (p *Provider) RemoveAll(ctx context.Context, names ...string) ([]string, error) {
	return p.c.RemoveAll(ctx, names...)
}

// RemoveNetless removes containers with no network in one engine call
// (Client.RemoveNetless).
func (p *Provider) RemoveNetless(ctx context.Context, names ...string) ([]string, error) {
	return p.c.RemoveNetless(ctx, names...)
}

// State is the state of container ref (Client.ContainerState).
func (p *Provider) State(ctx context.Context, ref provider.Ref) (provider.State, error) {
	return p.c.ContainerState(ctx, ref.ID)
}

// Start starts a stopped container (Client.Start).
func (p *Provider) Start(ctx context.Context, ref provider.Ref) error {
	return p.c.Start(ctx, ref.ID)
}

// Endpoint names the engine the client reaches.
func (p *Provider) Endpoint() string { return p.c.Endpoint() }

// BuildImage makes image tag from buildContext (Client.Build). A build,
// not a container committed: Podman's compatible API refuses the commit
// the docker CLI sends ("Decode(): EOF"), and both engines build.
func (p *Provider) BuildImage(ctx context.Context, tag, dockerfile string, buildContext io.Reader) error {
	return p.c.Build(ctx, tag, dockerfile, buildContext)
}

// HostAddrs runs HostProbeArgs and reads its output (ParseHostAddrs).
func (p *Provider) HostAddrs(ctx context.Context, image string) ([]string, error) {
	res, err := p.c.Run(ctx, p.c.Cmd(HostProbeArgs(image)...))
	if err != nil {
		return nil, err
	}
	return ParseHostAddrs(res.Stdout), nil
}

// HostProbeArgs is the argv of a one-shot container on the engine host's
// own network that lists the host's addresses (`ip -o addr`): a gateway
// refuses them unless listed. The host's loopback aside, a gateway cannot
// tell them from the internet itself.
func HostProbeArgs(image string) []string {
	return []string{"run", "--rm", "--log-driver", "none", "--network", "host", "--user", "65534:65534", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--entrypoint", "ip", image, "-o", "addr", "show"}
}

// ParseHostAddrs reads the output of HostProbeArgs: every address but the
// loopback's, as an address (not its network).
func ParseHostAddrs(out []byte) []string {
	var addrs []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "inet" && f[i] != "inet6" {
				continue
			}
			p, err := netip.ParsePrefix(f[i+1])
			if err != nil || p.Addr().IsLoopback() || p.Addr().IsLinkLocalUnicast() {
				continue
			}
			if s := p.Addr().String(); !seen[s] {
				seen[s] = true
				addrs = append(addrs, s)
			}
		}
	}
	return addrs
}

// Subnets are the subnets of the engine's networks.
func (p *Provider) Subnets(ctx context.Context) ([]string, error) {
	c := p.c
	res, err := c.Run(ctx, c.Cmd("network", "ls", "-q"))
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(string(res.Stdout))
	if len(ids) == 0 {
		return nil, nil
	}
	res, err = c.Run(ctx, c.Cmd(append([]string{"network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{end}}"}, ids...)...))
	if err != nil && !onlyGone(runner.Stderr(err)) {
		return nil, err
	}
	// A network removed between the two calls (another sandbox deleted
	// meanwhile) is only missing from the answer: the inspect still prints
	// every other one, and a network that is gone needs no refusing.
	return ParseSubnets(res.Stdout), nil
}

// onlyGone reports whether every line of an inspect's stderr says an
// object was not found ("network X not found", "no such volume").
func onlyGone(stderr string) bool {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if l = strings.ToLower(l); !strings.Contains(l, "not found") && !strings.Contains(l, "no such ") {
			return false
		}
	}
	return len(lines) > 0 && lines[0] != ""
}

// ParseSubnets reads the engine's networks' subnets (`docker network
// inspect` of each, its IPAM subnets), masked, each once.
func ParseSubnets(out []byte) []string {
	var nets []string
	seen := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			continue
		}
		if s := p.Masked().String(); !seen[s] {
			seen[s] = true
			nets = append(nets, s)
		}
	}
	return nets
}
