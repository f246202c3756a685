package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
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

// gatePrep is what a gateway needs from the engine before it is made: the
// engine host's addresses (its policy refuses them). The gateway image is
// not asked for: the gateway's run makes it when the engine lacks it
// (netgate.Gate.Create).
type gatePrep struct {
	addrs netgate.Reach
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
			return core.NewError(api.ErrConfig, "Sandbox '%s' was not created: [network] egress = %q needs a gateway beside the sandbox, which this engine cannot run (gateways run on Docker, Podman, ssh and VM engines; see docs/egress.md). Set egress = \"open\" in %s to create it with the engine's own network (on Kubernetes: the public internet only, by the pod's NetworkPolicy), or use another engine. Nothing was made.", c.slug, c.cfg.Egress.Mode, config.LocalFile)
		}
		c.pv.Log.Warn("this engine cannot run an egress gateway: the sandbox's network is open, as the engine makes it (on Kubernetes: the public internet only, by the pod's NetworkPolicy; docs/egress.md)", "sandbox", c.slug)
		return nil
	}
	if err := c.checkRelayRuntime(ctx); err != nil {
		return err
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
	c.host = make(chan gatePrep, 1)
	go func() {
		a, err := c.pv.gate.Reach(ctx)
		c.host <- gatePrep{a, err}
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

// startGateway starts making the gateway beside the branch and the
// sandbox's own start: its volume first (the sandbox's run mounts it:
// startContainer waits for it), then, once the engine host's addresses and
// the gateway image are known (planEgress asked), the gateway's one docker
// run. Nothing is installed by an exec: the gateway's image holds the
// program, and the gateway's run makes it when the engine lacks it. A create that claims a pooled sandbox takes its gateway with it.
func (c *creation) startGateway(ctx context.Context) error {
	if c.net == nil || len(c.pool) > 0 || c.confined != nil {
		return nil
	}
	sp := c.sandboxSpec()
	l, linked := netgate.Linked(c.pv.Provider)
	if c.secrets != nil {
		// The placeholders, and the CA bundle the gateway's CA goes in.
		sp.Env = slices.Concat(sp.Env, secrets.Env(netgate.Bindings(c.secrets.bound)), egress.TrustEnv())
		if linked {
			sp.Tmpfs = append(sp.Tmpfs, egress.TrustDir(sp.User))
		}
	}
	// Named with the repository's id: a gateway of the name is this
	// sandbox's, left by an earlier create, never another repository's.
	name := c.r.SuffixedName(c.slug) + "-gw"
	if linked {
		return c.startLinkedGateway(ctx, sp, name, l)
	}
	plan, err := egress.Confine(sp, api.DefaultImage, c.net.Policy(c.slug, netgate.Reach{}), sp.Labels)
	if err != nil {
		return err
	}
	eng, _ := netgate.Engine(c.pv.Provider)
	atMount := nameGateway(&plan, name, eng)
	if err := c.recordGateway(name, name, plan.Ports, &plan.Sandbox); err != nil {
		return err
	}
	c.undo.push("volume "+name, func(ctx context.Context) error { return eng.RemoveVolume(ctx, name) })
	c.undo.push("gateway "+name, func(ctx context.Context) error { return c.pv.Provider.Remove(ctx, provider.Ref{ID: name}) })
	c.volumeMade, c.gateway, c.gatewayMade = make(chan error, 1), make(chan error, 1), make(chan error, 1)
	// Without secrets to give it first, the gateway opens on the token the
	// copy step hands it (egress.OpenToken): no `ctl ready` on the path.
	var sum string
	if c.secrets == nil {
		c.openToken, sum = egress.OpenToken()
	}
	go func() {
		var err error
		if !atMount {
			// Podman: the volume is made first.
			if err = eng.CreateVolume(core.Made(ctx), plan.Volume); err != nil {
				// What an earlier create of this sandbox left: its
				// gateway holds the volume.
				_ = c.pv.Provider.Remove(ctx, provider.Ref{ID: name})
				_ = eng.RemoveVolume(ctx, name)
				err = eng.CreateVolume(core.Made(ctx), plan.Volume)
			}
		}
		c.volumeMade <- err
		if err == nil {
			h := <-c.host
			c.host <- h
			// The policy with the engine host's addresses, in a plan of
			// the goroutine's own: the sandbox's start reads c.confined
			// (the first plan's) meanwhile.
			var gp egress.Plan
			if err = h.err; err == nil {
				gp, err = egress.Confine(sp, api.DefaultImage, c.net.Policy(c.slug, h.addrs), sp.Labels)
			}
			if err == nil {
				nameGateway(&gp, name, eng)
				// The gateway image is not asked for: the gateway's
				// create makes it when the engine lacks it (Gate.Create).
				gp.FromImage(c.pv.gate.Tag())
				if sum != "" {
					gp.OpensOn(sum)
				}
				err = c.makeGateway(ctx, gp.Gateway)
				if aerr := c.armSecrets(ctx, err); err == nil && aerr == nil && sum == "" {
					// It holds all it should: it opens its sockets,
					// which the setup's wait (setupArgv) waits for.
					err = c.pv.gate.Ready(ctx, c.slug, c.net)
				}
				c.gateway <- err
				return
			}
		}
		c.gatewayMade <- err
		c.armSecrets(ctx, err)
		c.gateway <- err
	}()
	return nil
}

// recordGateway records the gateway about to be made, name, its volume and
// the ports it publishes (and the secrets it will hold), and makes sandbox
// the spec the sandbox's start makes.
func (c *creation) recordGateway(name, volume string, ports []int, sandbox *provider.Spec) error {
	c.net.Gateway, c.net.Volume, c.net.Ports = name, volume, ports
	if err := netgate.Write(c.r, c.slug, c.net); err != nil {
		return fmt.Errorf("create sandbox %q: record its gateway: %w", c.slug, err)
	}
	if c.secrets != nil {
		if err := netgate.WriteSecrets(c.r, c.slug, c.secrets.bound); err != nil {
			return fmt.Errorf("create sandbox %q: record its secrets: %w", c.slug, err)
		}
	}
	c.confined = sandbox
	c.progress("starting egress gateway " + name)
	return nil
}

// startLinkedGateway starts making the gateway of a sandbox on an engine
// that links the two by network (egress.ConfineLinked: Kubernetes), named
// name, which the sandbox finds by the name l gives it. Once the engine host's
// addresses are known, the gateway is made from the base image, beside
// the sandbox's start (the engine waits for the gateway's address, and
// c.link is cancelled when the gateway cannot be made); once it runs, its
// program is installed by an exec, and it gets its secrets and is told it
// is ready. The copy and setup wait
// for that (fill): there is no relay for the setup to wait for.
func (c *creation) startLinkedGateway(ctx context.Context, sp provider.Spec, name string, l provider.GatewayLinks) error {
	plan, err := egress.ConfineLinked(sp, api.DefaultImage, c.net.Policy(c.slug, netgate.Reach{}), sp.Labels, l.GatewayHost(), l.GatewayNameFile())
	if err != nil {
		return err
	}
	plan.NameGateway(name)
	if err := c.recordGateway(name, "", nil, &plan.Sandbox); err != nil {
		return err
	}
	c.undo.push("gateway "+name, func(ctx context.Context) error { return c.pv.Provider.Remove(ctx, c.pv.gate.RefOf(name)) })
	c.gateway, c.gatewayMade = make(chan error, 1), make(chan error, 1)
	c.link, c.linkCancel = context.WithCancel(ctx)
	prog := beside(func() ([]byte, error) { return c.pv.gate.Program(ctx) })
	go func() {
		h := <-c.host
		c.host <- h
		p := <-prog
		program := p.v
		err := errors.Join(h.err, p.err)
		var gp egress.Plan
		if err == nil {
			gp, err = egress.ConfineLinked(sp, api.DefaultImage, c.net.Policy(c.slug, h.addrs), sp.Labels, l.GatewayHost(), l.GatewayNameFile())
		}
		if err == nil {
			gp.NameGateway(name)
			err = c.makeGateway(ctx, gp.Gateway)
		} else {
			c.gatewayMade <- err
		}
		if err != nil {
			c.linkCancel() // the sandbox's start waits for it no more
		}
		if err == nil {
			err = egress.InstallLinked(ctx, c.pv.Provider, provider.Ref{ID: name}, bytes.NewReader(program))
		}
		if aerr := c.armSecrets(ctx, err); err == nil && aerr == nil {
			err = c.pv.gate.Ready(ctx, c.slug, c.net)
		}
		c.gateway <- err
	}()
	return nil
}

// linked says the sandbox's gateway is linked to it by network
// (startLinkedGateway).
func (c *creation) linked() bool { return c.net != nil && c.pv.gate.Linked() }

// result is a value made beside the caller, or why not.
type result[T any] struct {
	v   T
	err error
}

// beside runs f in a goroutine of its own; its result comes on the
// channel.
func beside[T any](f func() (T, error)) <-chan result[T] {
	ch := make(chan result[T], 1)
	go func() {
		v, err := f()
		ch <- result[T]{v, err}
	}()
	return ch
}

// armSecrets hands the secrets' values to the gateway made (err nil) and
// passes on its CA, or the error, to the sandbox's trust step; it returns
// that error.
func (c *creation) armSecrets(ctx context.Context, err error) error {
	if c.secrets == nil {
		return nil
	}
	ca := ""
	if err == nil {
		ca, err = c.armGateway(ctx)
	}
	c.secrets.ca <- caResult{ca, err}
	return err
}

// nameGateway gives the plan's gateway and volume their name; atMount says
// the engine makes the volume as the first of the two containers mounts it
// (Docker), rather than by a volume create before either (Podman).
func nameGateway(plan *egress.Plan, name string, eng provider.Gateways) (atMount bool) {
	plan.Volume.Name = name
	plan.Gateway.Name = name
	return plan.MountOn(eng)
}

// claimGateway takes the gateway of claimed pool member m: the record names
// it, and its policy is the sandbox's already (the pool's key matched it),
// made with what the engine says today of its host and networks: then it
// costs no engine call, and the sandbox's name reaches the gateway with
// the first command run in the sandbox (netgate.NameFirst; a setup of the
// user's writes it at the claim, setupArgv). Should the engine say otherwise (its
// networks changed since the fill; a member filled before the record
// held them), the policy is set anew, with the name, beside the setup. A
// gateway linked by network (Kubernetes) shares no volume to write the
// name to: the engine's claim gives it the name (provider.Claimer), with
// no exec. A member without a gateway was made for an open network.
func (c *creation) claimGateway(ctx context.Context, m *pool.MemberFile) error {
	if c.net == nil || m.Gateway == "" {
		return nil
	}
	c.net.Gateway, c.net.Volume, c.net.Ports = m.Gateway, m.Gateway, m.Ports
	// Nothing in the claim tells the gateway the name, unless a setup
	// runs (setupArgv): the sandbox's commands do (netgate.NameFirst).
	c.net.Unnamed = true
	if c.linked() {
		c.net.Volume, c.net.Unnamed = "", false
	}
	if err := netgate.Write(c.r, c.slug, c.net); err != nil {
		return fmt.Errorf("create sandbox %q: record its gateway: %w", c.slug, err)
	}
	c.gateway = make(chan error, 1)
	go func() {
		h := <-c.host
		c.host <- h
		err := h.err
		if err == nil && (m.Reach == nil || !m.Reach.Equal(h.addrs)) {
			err = egress.SetPolicy(ctx, c.pv.Provider, c.net.Ref(), c.net.Policy(c.slug, h.addrs))
		}
		c.gateway <- err
	}()
	return nil
}

// volumeReady waits for the gateway's volume, which the sandbox mounts.
func (c *creation) volumeReady() error { return awaitOnce(&c.volumeMade) }

// makeGateway creates the gateway, which installs its program from its
// image as it starts.
func (c *creation) makeGateway(ctx context.Context, gw provider.Spec) error {
	err := c.pv.gate.Create(ctx, gw)
	c.gatewayMade <- err
	return err
}

// gatewayStarted waits for the gateway's container, which publishes the
// sandbox's named ports.
func (c *creation) gatewayStarted() error {
	err := awaitOnce(&c.gatewayMade)
	if errors.Is(err, provider.ErrNoHostPort) && !errors.Is(err, provider.ErrLeftBehind) {
		return c.portRangeError(err)
	}
	return err
}

// gatewayReady waits for the gateway: a sandbox is ready once its way out
// is.
func (c *creation) gatewayReady() error {
	err := awaitOnce(&c.gateway)
	if errors.Is(err, provider.ErrNoHostPort) && !errors.Is(err, provider.ErrLeftBehind) {
		return c.portRangeError(err)
	}
	if err != nil && errors.Is(err, provider.ErrNoImage) {
		return fmt.Errorf("%w: the egress gateway runs from %s, which the engine must hold (`docker pull %s`)", err, api.DefaultImage, api.DefaultImage)
	}
	return err
}

// setupArgv is the setup to run. A confined sandbox's waits first for its
// relay and gateway to listen (egress.WaitReady), whatever the setup: the
// sandbox is ready once its first client finds its way out. The wait is
// in the exec that copies and sets up, so it costs nothing when the two
// came up during the copy.
func (c *creation) setupArgv() []string {
	if c.net == nil {
		return c.setup
	}
	if c.linked() {
		// No relay: fill waited for the gateway.
		if c.secrets == nil {
			return c.setup
		}
		return append([]string{"sh", "-c", waitTrust + `; exec "$@"`, "sh"}, c.setup...)
	}
	wait := egress.WaitReady
	if c.secrets != nil {
		// and for the gateway's CA, to reach the hosts secrets are bound to
		wait += "; " + waitTrust
	}
	if c.pooled != nil {
		// A pooled gateway's policy names no sandbox (claimGateway).
		wait += "; " + egress.WriteName
	}
	return append([]string{"sh", "-c", wait + `; exec "$@"`, "sh"}, c.setup...)
}

// notReady is the error of a setup whose wait for the way out timed out
// (egress.WaitReady); nil when it did not.
func (c *creation) notReady(stderr string) error {
	if c.net == nil || !egress.NotReady(stderr) {
		return nil
	}
	return &api.Error{Msg: fmt.Sprintf("Sandbox '%s' was not created: its egress relay and gateway %s did not listen within 30 s (`docker logs %s` shows the gateway's side). Nothing was made.", c.slug, c.net.Gateway, c.net.Gateway)}
}

// checkRelayRuntime refuses, before anything is made, a confined sandbox
// under a runtime that keeps it from its gateway's sockets (gVisor's runsc
// without --host-uds=all): its every connection would fail. Only a
// runtime the user chose is asked about: the engine's default is runc's
// kind on every engine litterbox makes gateways on.
func (c *creation) checkRelayRuntime(ctx context.Context) error {
	hc, ok := c.pv.Provider.(provider.HostSocketChecker)
	if c.cfg.Runtime == "" || !ok {
		return nil
	}
	able, err := hc.HostSockets(ctx, c.cfg.Runtime)
	if err != nil || able {
		return err
	}
	return core.NewError(api.ErrNoRuntime, "Sandbox '%s' was not created: runtime %s (gVisor) keeps a sandbox from the host's unix sockets, and a confined sandbox reaches its network gateway through one. "+
		"Run runsc with --host-uds=all: add \"runtimeArgs\": [\"--host-uds=all\"] to its entry under \"runtimes\" in /etc/docker/daemon.json and reload the engine (in the litterbox repository `scripts/ensure-gvisor.sh` does; docs/kernels.md), "+
		"or set egress = \"open\" under [network] in %s for a sandbox on gVisor's own network. Nothing was made.", c.slug, c.cfg.Runtime, config.LocalFile)
}
