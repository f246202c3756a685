package pause

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// After an engine restart a sandbox's containers are stopped, not gone;
// a gateway may also die on its own, or be removed (its pod deleted or
// evicted, on Kubernetes). Resume brings such a sandbox back on an engine
// that runs gateways (Docker, Podman, ssh, the VM engine; a gateway gone
// on Kubernetes too), in this order: the gateway (netgate.Gate.Start,
// which makes it again when it is gone: the policy as `litterbox net`
// left it, the secrets' values fetched again), then the sandbox,
// whose /src (in memory) is filled again from its branch as a resume on
// Kubernetes does, then the gateway's CA in the sandbox, and last a wait
// until its relay and gateway answer. Only then is it reported resumed.

// canStart says resume can start a stopped sandbox on this engine.
func (ps *Pauser) canStart() bool {
	_, ok := netgate.Engine(ps.Provider)
	return ok
}

// way is what resume does for a confined sandbox's way out.
type way struct {
	slug string
	rec  *netgate.NetFile
}

// wayOut is c's gateway record, nil for a sandbox without one.
func (ps *Pauser) wayOut(r *api.Repo, c provider.Sandbox) (*way, error) {
	slug := c.Labels[api.LabelSlug]
	rec, ok, err := netgate.Read(r.Git.CommonDir, slug)
	if err != nil || !ok {
		return nil, err
	}
	return &way{slug: slug, rec: rec}, nil
}

// startGateway starts w's gateway with what it held, or makes it again
// for sandbox c when it is gone (remade); ca is its new CA when the
// sandbox holds secrets.
func (ps *Pauser) startGateway(ctx context.Context, r *api.Repo, c provider.Sandbox, w *way) (ca string, remade bool, err error) {
	head, err := r.Git.Head(ctx)
	if err != nil {
		return "", false, err
	}
	// The secrets' declarations are the user's files' (the local file,
	// their own), never the committed file's, so HEAD's configuration
	// is the one to read; so are the names of the ports a gateway made
	// again publishes.
	cfg, err := ps.LoadConfig(ctx, r, head)
	if err != nil {
		return "", false, err
	}
	return ps.gate.Start(ctx, r, c, w.rec, cfg)
}

// armSandbox gives the running sandbox ref the gateway's CA (when there
// is one) and waits until its relay and gateway answer. A linked
// sandbox's pod has no relay, and is new after its gateway was made
// again: its refill gave it the CA (refillAfterResume).
func (ps *Pauser) armSandbox(ctx context.Context, ref provider.Ref, w *way, ca string) error {
	if ps.gate.Linked() {
		return nil
	}
	if ca != "" {
		if err := egress.WriteTrust(ctx, ps.Provider, ref, []byte(ca)); err != nil {
			return fmt.Errorf("sandbox '%s': %w", w.slug, err)
		}
	}
	return ps.gate.WaitRelay(ctx, w.slug, ref, w.rec)
}

// gatewayBack is what resume did for a sandbox's gateway.
type gatewayBack struct {
	w  *way
	ca string
	// arm: the gateway was started, or made again (remade): the
	// sandbox waits for it (armSandbox) once it runs.
	arm, remade bool
	// ended: the sandbox's pod was ended to be made again (endForGateway).
	ended bool
}

// resumeGateway brings back the gateway of c, a running or paused
// sandbox, when gws (the engine's gateways, from the list resume made)
// says it is not running, or it runs but does not serve the sandbox (the
// engine started it again by itself: it waits for its policy and
// secrets), or it is gone (removed by hand, its pod deleted or evicted):
// then it is made again. It is nil when there was nothing to do. The
// sandbox is resumed after it (its pod made again, where it was ended), and
// armed.
func (ps *Pauser) resumeGateway(ctx context.Context, r *api.Repo, c provider.Sandbox, gws map[string]provider.State) (*gatewayBack, error) {
	if !ps.gate.Supported() {
		return nil, nil
	}
	r, err := ps.ownerRepo(ctx, r, c)
	if err != nil {
		// Its records are not to be found: the resume of the container
		// says what it can.
		return nil, nil
	}
	w, err := ps.wayOut(r, c)
	if err != nil || w == nil {
		return nil, err
	}
	back := &gatewayBack{w: w}
	switch gws[w.rec.Gateway] {
	case provider.StatePaused:
		// The idle pause pauses a sandbox's gateway with it (idle.go).
		_, err := ps.Provider.Resume(ctx, provider.Ref{ID: w.rec.Gateway})
		return back, err
	case provider.StateRunning:
		if ps.gate.Linked() {
			// A pod does not start again by itself: running, it was
			// given what it serves with.
			return nil, nil
		}
		if serving, err := ps.gate.Serving(ctx, w.rec); err != nil || serving {
			return nil, err
		}
	}
	if ps.gate.Linked() && c.State == provider.StateRunning {
		if err := ps.endForGateway(ctx, r, c, w); err != nil {
			return nil, err
		}
		back.ended = true
	}
	back.arm = true
	back.ca, back.remade, err = ps.startGateway(ctx, r, c, w)
	return back, err
}

// endForGateway ends the running pod of sandbox c as a pause does (its
// work recorded first, and refused when that would lose files its branch
// does not hold), so that resume makes it again: a linked sandbox's pod
// finds its gateway by the address the gateway had at the pod's start
// (provider.GatewayLinks), and one made again has another, which the new
// pod is given (provider/kubernetes's Resume).
func (ps *Pauser) endForGateway(ctx context.Context, r *api.Repo, c provider.Sandbox, w *way) error {
	if _, err := ps.snapshotBeforePause(ctx, r, c, false); err != nil {
		// A message to the user, which starts as such messages do; the
		// snapshot's error is wrapped for its kind (and exit code).
		why := fmt.Sprintf("Sandbox '%s' was not resumed: its egress gateway %s is gone, and on this engine making it again makes the sandbox's pod again too, which ends it as a pause does.", w.slug, w.rec.Gateway)
		return fmt.Errorf("%s\n%w\nThen `litterbox resume %s` makes both again", why, err, w.slug)
	}
	if _, err := ps.Provider.Pause(ctx, c.Ref); err != nil {
		return fmt.Errorf("resume sandbox '%s': end its pod, to make it again beside its new egress gateway: %w", w.slug, err)
	}
	return nil
}

// start brings back the stopped sandbox c: its gateway first, then its
// container, its /src from its branch, its services' definitions, and its
// way out.
func (ps *Pauser) start(ctx context.Context, r *api.Repo, c provider.Sandbox) (api.Outcome, error) {
	out := api.Outcome{Name: c.Labels[api.LabelSlug], Repo: c.Labels[api.LabelRepo], GitDir: c.Labels[api.LabelGitDir]}
	r, err := ps.ownerRepo(ctx, r, c)
	if err != nil {
		return out, err
	}
	h := core.HandleOf(r, c)
	if !state.IsReady(r.Git.CommonDir, h.Slug, c.Ref.ID) {
		// A create cut short: there is nothing to bring back.
		return out, core.StoppedError(h.Slug)
	}
	w, err := ps.wayOut(r, c)
	if err != nil {
		return out, err
	}
	tip, ok, err := r.Git.ResolveRef(ctx, api.BranchRef(h.Slug))
	if err != nil || !ok {
		return out, fmt.Errorf("resume sandbox '%s': read its branch %s%s (%v), which /src is filled from: recreate it with `litterbox create --from-branch %s`", h.Slug, api.BranchPrefix, h.Slug, err, h.Slug)
	}
	ca, remade := "", false
	if w != nil {
		if ca, remade, err = ps.startGateway(ctx, r, c, w); err != nil {
			return out, err
		}
		if remade {
			out.Gateway = w.rec.Gateway
		}
	}
	eng, _ := netgate.Engine(ps.Provider)
	if err := eng.Start(ctx, c.Ref); err != nil {
		return out, fmt.Errorf("resume sandbox '%s': start its container %s: %w", h.Slug, c.Name, err)
	}
	var setup []string
	if w != nil {
		setup = []string{"sh", "-c", egress.WaitReady}
	}
	trust := make(chan error, 1)
	go func() {
		if w == nil || ca == "" {
			trust <- nil
			return
		}
		trust <- egress.WriteTrust(ctx, ps.Provider, c.Ref, []byte(ca))
	}()
	var so, se bytes.Buffer
	err = ps.guest.CopyAndSetup(ctx, ps.branchArchive(ctx, r, h.Slug, tip), c.Ref, h.Image, setup, &so, &se)
	if terr := <-trust; terr != nil {
		err = errors.Join(err, fmt.Errorf("sandbox '%s': %w", h.Slug, terr))
	}
	if err != nil && egress.NotReady(se.String()) {
		return out, netgate.NotListening(h.Slug, w.rec, err)
	}
	if err != nil {
		return out, fmt.Errorf("resume sandbox '%s': copy its branch %s%s into %s: %w", h.Slug, api.BranchPrefix, h.Slug, api.Workdir, err)
	}
	if err := state.WriteSince(r, h.Slug, guest.TakeStamp(&so)); err != nil {
		ps.Log.Warn("could not record the scan stamp; the next snapshot will scan all of /src", "err", err)
	}
	if _, err := ps.services.InstallSaved(ctx, h); err != nil {
		ps.Log.Warn("could not install the services again", "sandbox", h.Slug, "err", err)
	}
	return out, nil
}
