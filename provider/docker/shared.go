package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/runner"
)

// The shared bridge (Dialect.SharedNetwork) replaces a network per sandbox on
// Docker: making a network cost about 0.5 s of every create, and Docker's
// default address pools hold about 30 of them. One bridge made with
// com.docker.network.bridge.enable_icc=false keeps its containers from
// reaching each other (Docker drops bridge-to-same-bridge traffic in
// iptables); they still reach the outside, and their published ports work.
// The isolation check (sandbox/isolation.go) proves it on each engine start,
// as it proved the networks apart before. The bridge is made by the first
// create that needs it, carries LabelShared and no sandbox's labels, and is
// never removed by litterbox: no sandbox owns it.

// SharedNetworkCreateArgs builds the argv that makes the shared bridge.
func SharedNetworkCreateArgs(name string) []string {
	return []string{"network", "create", "--driver", "bridge",
		"--opt", "com.docker.network.bridge.enable_icc=false",
		"--label", LabelShared + "=true", name}
}

// sharedCreateArgs builds the argv that makes the shared network in
// dialect d: Podman's netavark is not known to honour enable_icc, so there
// it is a plain bridge, for provider.NetworkShared containers only.
func sharedCreateArgs(name string, d *Dialect) []string {
	if d.Engine == EnginePodman {
		return []string{"network", "create", "--driver", "bridge", "--label", LabelShared + "=true", name}
	}
	return SharedNetworkCreateArgs(name)
}

// sharedMissing reports whether docker run failed because the shared bridge
// does not exist ("network litterbox-shared not found"). It made the
// container then, and printed its id, but could not start it.
func sharedMissing(err error, name string) bool {
	return strings.Contains(runner.Stderr(err), "network "+name+" not found")
}

// sharedFull reports whether docker run failed because the shared bridge has
// no address left ("no available IPv4 addresses on this network's address
// pools"). Like sharedMissing, it made the container and printed its id.
func sharedFull(err error) bool {
	return strings.Contains(runner.Stderr(err), "no available IPv4 addresses")
}

// ensureShared makes the shared bridge. Another process having made it is
// success: the engine refuses the second name ("already exists"). Docker's
// check of that name is not atomic (two creates at once can both succeed,
// and then the name is ambiguous to docker run), so the processes of this
// machine take a lock, per endpoint, around it.
func (p *Provider) ensureShared(ctx context.Context, name string) error {
	if dir, err := runtimeDir(); err == nil {
		sum := sha256.Sum256([]byte(p.c.endpoint()))
		if unlock, err := flock.Lock(filepath.Join(dir, "shared-"+hex.EncodeToString(sum[:8])+".lock")); err == nil {
			defer unlock()
		}
	}
	_, err := p.c.Run(ctx, p.c.Cmd(sharedCreateArgs(name, p.c.dialect())...))
	switch {
	case err == nil, strings.Contains(runner.Stderr(err), "already exists"):
		return nil
	case strings.Contains(runner.Stderr(err), "could not find an available, non-overlapping IPv4 address pool"):
		return fmt.Errorf("create network %s, the bridge sandboxes share: %s has no address pool left. "+
			"Remove networks you no longer need (`docker network ls`, `litterbox list --all-repos`), or give it more room: \"default-address-pools\" in /etc/docker/daemon.json, then restart it",
			name, p.c.dialect().Name)
	}
	return fmt.Errorf("create network %s, the bridge sandboxes share: %w", name, err)
}

// Start starts a created container.
func (c *Client) Start(ctx context.Context, id string) error {
	_, err := c.Run(ctx, c.Cmd("start", id).As(runner.Work))
	return err
}
