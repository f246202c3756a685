package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/internal/gatewaybin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/secrets"
)

// A confined sandbox (docs/egress.md) has no network: its one way out is
// its gateway, a container beside it that shares a volume with it. Create
// makes the volume, then the gateway beside the sandbox, installs the
// gateway's program (which puts the relay on the volume, where the
// sandbox's main process starts it) beside the copy, and waits for that
// before the sandbox is ready. The policy is the user's: the
// configuration a create trusts (trust.go), or the record of the sandbox
// it is made from (a fork, a recreate), which `litterbox net` changes.

type hostAddrs struct {
	addrs []string
	err   error
}

// planEgress decides the sandbox's way out. inherited says the settings
// are another sandbox's record (or this one's, recreated): then so is the
// policy, as `litterbox net` left it.
func (c *creation) planEgress(ctx context.Context, inherited bool) error {
	if !c.cfg.Confined() {
		return nil
	}
	if !c.pv.gate.Supported() {
		if c.cfg.Egress.Mode != "" {
			return core.NewError(core.ErrConfig, "Sandbox '%s' was not created: [network] egress = %q needs a gateway beside the sandbox, which this engine cannot run (gateways run on Docker, Podman, ssh and VM engines; see docs/egress.md). Set egress = \"open\" in %s to create it with the engine's own network, or use another engine. Nothing was made.", c.slug, c.cfg.Egress.Mode, config.LocalFile)
		}
		c.pv.Log.Warn("this engine cannot run an egress gateway: the sandbox's network is open, as the engine makes it (docs/egress.md)", "sandbox", c.slug)
		return nil
	}
	rec := netgate.FromConfig(c.cfg)
	if inherited {
		if src := c.settingsSource(); src != "" {
			if old, ok, err := netgate.Read(c.r.Git.CommonDir, src); err != nil {
				return err
			} else if ok {
				rec.Mode, rec.Allow, rec.Deny, rec.Registries = old.Mode, old.Allow, old.Deny, old.Registries
			}
		}
	}
	c.net = &rec
	c.host = make(chan hostAddrs, 1)
	go func() {
		a, err := c.pv.gate.HostAddrs(ctx)
		c.host <- hostAddrs{a, err}
	}()
	return nil
}

// settingsSource is the sandbox whose record the settings came from.
func (c *creation) settingsSource() string {
	if c.opts.FromBranch {
		return c.slug
	}
	if from, ok := strings.CutPrefix(c.settings.From, "sandbox "); ok {
		return from
	}
	return ""
}

// startGateway makes the volume, starts the gateway's create and install,
// and returns the sandbox's spec confined behind it.
func (c *creation) startGateway(ctx context.Context, sp provider.Spec) (provider.Spec, error) {
	h := <-c.host
	c.host <- h
	if h.err != nil {
		return sp, h.err
	}
	dc, _ := netgate.Docker(c.pv.Provider)
	if c.secrets != nil {
		// The placeholders, and the CA bundle the gateway's CA goes in.
		sp.Env = slices.Concat(sp.Env, secrets.Env(netgate.Bindings(c.secrets.bound)), egress.TrustEnv())
	}
	plan, err := egress.Confine(sp, core.DefaultImage, c.net.Policy(c.slug, h.addrs), sp.Labels)
	if err != nil {
		return sp, err
	}
	// Named with the repository's id: a gateway of the name is this
	// sandbox's, left by an earlier create, never another repository's.
	name := c.r.SuffixedName(c.slug) + "-gw"
	plan.Gateway.Name, plan.Volume.Name = name, name
	plan.Gateway.Volumes[0].Name = name
	plan.Sandbox.Volumes[len(plan.Sandbox.Volumes)-1].Name = name
	c.net.Gateway, c.net.Volume, c.net.Ports = name, name, plan.Ports
	if err := netgate.Write(c.r, c.slug, c.net); err != nil {
		return sp, fmt.Errorf("create sandbox %q: record its gateway: %w", c.slug, err)
	}
	if c.secrets != nil {
		if err := netgate.WriteSecrets(c.r, c.slug, c.secrets.bound); err != nil {
			return sp, fmt.Errorf("create sandbox %q: record its secrets: %w", c.slug, err)
		}
	}
	c.progress("starting egress gateway " + name)
	if err := dc.VolumeCreate(core.Made(ctx), plan.Volume); err != nil {
		// What an earlier create of this sandbox left: its gateway holds
		// the volume.
		_ = c.pv.Provider.Remove(ctx, provider.Ref{ID: name})
		_ = dc.VolumeRemove(ctx, name)
		if err := dc.VolumeCreate(core.Made(ctx), plan.Volume); err != nil {
			return sp, err
		}
	}
	c.undo.push("volume "+name, func(ctx context.Context) error { return dc.VolumeRemove(ctx, name) })
	c.undo.push("gateway "+name, func(ctx context.Context) error { return c.pv.Provider.Remove(ctx, provider.Ref{ID: name}) })
	c.gateway, c.gatewayMade = make(chan error, 1), make(chan error, 1)
	go func() {
		err := c.makeGateway(ctx, plan.Gateway)
		if c.secrets != nil {
			ca := ""
			if err == nil {
				ca, err = c.armGateway(ctx)
			}
			c.secrets.ca <- caResult{ca, err}
		}
		c.gateway <- err
	}()
	return plan.Sandbox, nil
}

// makeGateway creates the gateway and installs its program.
func (c *creation) makeGateway(ctx context.Context, gw provider.Spec) error {
	sb, err := c.pv.Provider.Create(core.Made(ctx), gw)
	if err != nil {
		err = fmt.Errorf("start the egress gateway %s: %w", gw.Name, err)
	}
	c.gatewayMade <- err
	if err != nil {
		return err
	}
	platform, err := c.pv.guest.ImagePlatform(ctx, core.DefaultImage)
	if err != nil {
		return err
	}
	os, arch, _ := strings.Cut(platform, "/")
	bin, err := gatewaybin.For(os, arch)
	if err != nil {
		return err
	}
	return egress.Install(ctx, c.pv.Provider, sb.Ref, bytes.NewReader(bin))
}

// gatewayStarted waits for the gateway's container, which publishes the
// sandbox's named ports.
func (c *creation) gatewayStarted() error {
	if c.gatewayMade == nil {
		return nil
	}
	err := <-c.gatewayMade
	c.gatewayMade = nil
	if errors.Is(err, provider.ErrNoHostPort) && !errors.Is(err, provider.ErrLeftBehind) {
		return c.portRangeError(err)
	}
	return err
}

// gatewayReady waits for the gateway: a sandbox is ready once its way out
// is.
func (c *creation) gatewayReady() error {
	if c.gateway == nil {
		return nil
	}
	err := <-c.gateway
	c.gateway = nil
	if err != nil && errors.Is(err, provider.ErrNoImage) {
		return fmt.Errorf("%w: the egress gateway runs from %s, which the engine must hold (`docker pull %s`)", err, core.DefaultImage, core.DefaultImage)
	}
	return err
}

// setupArgv is the setup to run: a confined sandbox's waits for its relay
// first, unless it is the default, which needs no network.
func (c *creation) setupArgv() []string {
	if c.net == nil || len(c.setup) == 0 || slices.Equal(c.setup, config.DefaultSetup) {
		return c.setup
	}
	wait := egress.WaitRelay
	if c.secrets != nil {
		// and for the gateway's CA, to reach the hosts secrets are bound to
		wait += "; " + waitTrust
	}
	return append([]string{"sh", "-c", wait + `; exec "$@"`, "sh"}, c.setup...)
}
