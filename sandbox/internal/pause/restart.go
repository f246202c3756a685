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
// a gateway may also die on its own. Resume brings such a sandbox back on
// an engine that runs gateways (Docker, Podman, ssh, the VM engine), in
// this order: the gateway (netgate.Gate.Start: the policy as `litterbox
// net` left it, the secrets' values fetched again), then the sandbox,
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

// startGateway starts w's gateway with what it held; ca is its new CA when
// the sandbox holds secrets.
func (ps *Pauser) startGateway(ctx context.Context, r *api.Repo, w *way) (ca string, err error) {
	head, err := r.Git.Head(ctx)
	if err != nil {
		return "", err
	}
	// The secrets' declarations are the user's files' (the local file,
	// their own), never the committed file's, so HEAD's configuration
	// is the one to read.
	cfg, err := ps.LoadConfig(ctx, r, head)
	if err != nil {
		return "", err
	}
	return ps.gate.Start(ctx, r, w.slug, w.rec, cfg.Secrets)
}

// armSandbox gives the running sandbox ref the gateway's CA (when there
// is one) and waits until its way out answers.
func (ps *Pauser) armSandbox(ctx context.Context, ref provider.Ref, w *way, ca string) error {
	if ca != "" {
		if err := egress.WriteTrust(ctx, ps.Provider, ref, []byte(ca)); err != nil {
			return fmt.Errorf("sandbox '%s': %w", w.slug, err)
		}
	}
	return ps.gate.WaitRelay(ctx, w.slug, ref, w.rec)
}

// resumeGateway brings back the gateway of c, a running or paused
// sandbox, when gws (the engine's gateways, from the list resume made)
// says it is not running, or it runs but does not serve the sandbox (the
// engine started it again by itself: it waits for its policy and
// secrets); fixed says it did. On an engine whose pause ends the sandbox
// there is no gateway.
func (ps *Pauser) resumeGateway(ctx context.Context, r *api.Repo, c provider.Sandbox, gws map[string]provider.State) (fixed bool, err error) {
	if !ps.canStart() {
		return false, nil
	}
	if r, err = ps.ownerRepo(ctx, r, c); err != nil {
		// Its records are not to be found: the resume of the container
		// says what it can.
		return false, nil
	}
	w, err := ps.wayOut(r, c)
	if err != nil {
		return false, err
	}
	if w == nil {
		return false, nil
	}
	if gws[w.rec.Gateway] == provider.StatePaused {
		// The idle pause pauses a sandbox's gateway with it (idle.go).
		_, err := ps.Provider.Resume(ctx, provider.Ref{ID: w.rec.Gateway})
		return true, err
	}
	if gws[w.rec.Gateway] == provider.StateRunning {
		if serving, err := ps.gate.Serving(ctx, w.rec); err != nil || serving {
			return false, err
		}
	}
	return true, ps.restartGateway(ctx, r, c, w)
}

// restartGateway brings back the dead gateway of a running (or paused)
// sandbox c: its own relay still runs, and takes the new gateway's sockets.
func (ps *Pauser) restartGateway(ctx context.Context, r *api.Repo, c provider.Sandbox, w *way) error {
	ca, err := ps.startGateway(ctx, r, w)
	if err != nil {
		return err
	}
	if _, err := ps.Provider.Resume(ctx, c.Ref); err != nil {
		return err
	}
	return ps.armSandbox(ctx, c.Ref, w, ca)
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
	ca := ""
	if w != nil {
		if ca, err = ps.startGateway(ctx, r, w); err != nil {
			return out, err
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
