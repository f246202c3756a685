// Package pause pauses and resumes sandboxes, one or all of them. On an
// engine whose pause ends the sandbox (Kubernetes), pause first records the
// work and refuses to lose what no snapshot can record, and resume fills
// the new sandbox from its branch (ends.go).
package pause

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Pauser pauses and resumes c's sandboxes; inv finds them, and where a
// pause ends a sandbox, rec records its work first, and g and sv fill the
// new one on resume.
type Pauser struct {
	*core.Common
	inv      *inventory.Inventory
	rec      *recording.Recorder
	guest    *guest.Guest
	services *services.Supervisor
	// gate brings back a stopped sandbox's gateway (restart.go).
	gate *netgate.Gate
}

// New is the pause and resume of c's sandboxes.
func New(c *core.Common, inv *inventory.Inventory, rec *recording.Recorder, g *guest.Guest, sv *services.Supervisor, gate *netgate.Gate) *Pauser {
	return &Pauser{Common: c, inv: inv, rec: rec, guest: g, services: sv, gate: gate}
}

// Pause freezes a sandbox's processes, keeping all its state. Pausing a
// paused sandbox is not an error: Outcome.Already says so. Where a pause
// ends the sandbox (Kubernetes), one that would lose files its branch does
// not hold is refused (ErrWouldLose) unless force.
func (ps *Pauser) Pause(ctx context.Context, r *api.Repo, name string, force bool) (api.Outcome, error) {
	return ps.toggle(ctx, r, name, true, force)
}

// Resume thaws a paused sandbox. Resuming an active one is not an error.
// On an engine that runs gateways, it also starts a stopped one again (an
// engine restart stops them), and a confined sandbox's gateway that is not
// running, or makes it again when it is gone (restart.go).
func (ps *Pauser) Resume(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
	return ps.toggle(ctx, r, name, false, false)
}

func (ps *Pauser) toggle(ctx context.Context, r *api.Repo, name string, pause, force bool) (api.Outcome, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return api.Outcome{}, err
	}
	// With their gateways, whose state resume reads from the same list.
	objs, _, err := ps.inv.Objects(ctx, r, slug)
	if err != nil {
		return api.Outcome{}, err
	}
	gws := inventory.GatewayStates(objs)
	sbs := slices.DeleteFunc(objs, netgate.IsGateway)
	i := slices.IndexFunc(sbs, func(sb provider.Sandbox) bool { return sb.State != provider.StateNone })
	if i < 0 {
		if _, ok, _ := r.Git.ResolveRef(ctx, api.BranchRef(slug)); ok {
			return api.Outcome{}, core.NoContainerError(slug)
		}
		return api.Outcome{}, core.NotFoundError(slug)
	}
	if st := sbs[i].State; st != provider.StateRunning && st != provider.StatePaused {
		if !pause && ps.canStart() {
			return ps.start(ctx, r, sbs[i])
		}
		return api.Outcome{}, core.StoppedError(slug)
	}
	return ps.toggleContainer(ctx, r, sbs[i], gws, pause, force)
}

// toggleContainer pauses or resumes c; gws are the states of the engine's
// gateways (inventory.GatewayStates), for a resume.
func (ps *Pauser) toggleContainer(ctx context.Context, r *api.Repo, c provider.Sandbox, gws map[string]provider.State, pause, force bool) (api.Outcome, error) {
	out := api.Outcome{Name: c.Labels[api.LabelSlug], Repo: c.Labels[api.LabelRepo], GitDir: c.Labels[api.LabelGitDir]}
	ends := ps.pauseEnds()
	var err error
	if pause {
		if ends && c.State == provider.StateRunning {
			if out.Lost, err = ps.snapshotBeforePause(ctx, r, c, force); err != nil {
				return out, err
			}
		}
		out.Already, err = ps.Provider.Pause(ctx, c.Ref)
		out.Ended = ends && !out.Already
	} else {
		var back *gatewayBack
		if back, err = ps.resumeGateway(ctx, r, c, gws); err != nil {
			return out, err
		}
		out.Already, err = ps.Provider.Resume(ctx, c.Ref)
		if err == nil && !out.Already && ends {
			err = ps.refillAfterResume(ctx, r, c)
		}
		if err == nil && back != nil && back.arm {
			err = ps.armSandbox(ctx, c.Ref, back.w, back.ca)
		}
		if back != nil {
			out.Already = false
			out.Ended = back.ended
			if back.remade {
				out.Gateway = back.w.rec.Gateway
			}
		}
	}
	if err == nil && out.GitDir != "" {
		// Paused or resumed by someone: no longer the idle pause's to undo.
		_ = state.UnmarkIdlePaused(out.GitDir, out.Name)
	}
	if errors.Is(err, provider.ErrStopped) {
		return out, core.StoppedError(out.Name)
	}
	if err != nil {
		verb := "resume"
		if pause {
			verb = "pause"
		}
		return out, fmt.Errorf("%s sandbox %q: %w", verb, out.Name, err)
	}
	return out, nil
}

// PauseAll pauses every sandbox of r, or of every repository when r is nil.
// One that cannot be paused (a pause that would lose work, unless force)
// does not stop the others: its error is among those returned.
func (ps *Pauser) PauseAll(ctx context.Context, r *api.Repo, force bool) ([]api.Outcome, error) {
	return ps.toggleAll(ctx, r, true, force)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is nil.
func (ps *Pauser) ResumeAll(ctx context.Context, r *api.Repo) ([]api.Outcome, error) {
	return ps.toggleAll(ctx, r, false, false)
}

func (ps *Pauser) toggleAll(ctx context.Context, r *api.Repo, pause, force bool) ([]api.Outcome, error) {
	objs, _, err := ps.inv.Objects(ctx, r, "")
	if err != nil {
		return nil, err
	}
	gws := inventory.GatewayStates(objs)
	sbs := slices.DeleteFunc(objs, netgate.IsGateway)
	cts := slices.DeleteFunc(sbs, func(sb provider.Sandbox) bool { return sb.State == provider.StateNone })
	outs := make([]api.Outcome, len(cts))
	errs := make([]error, len(cts))
	var wg sync.WaitGroup
	for i, c := range cts {
		if c.State != provider.StateRunning && c.State != provider.StatePaused && !pause && ps.canStart() {
			// Resuming all after an engine restart starts them again.
			wg.Add(1)
			go func() {
				defer wg.Done()
				if outs[i], errs[i] = ps.start(ctx, r, c); errs[i] != nil {
					outs[i] = api.Outcome{}
				}
			}()
			continue
		}
		if c.State != provider.StateRunning && c.State != provider.StatePaused {
			// A stopped sandbox is neither active nor paused: pausing "all
			// active sandboxes" leaves it alone, and says so.
			outs[i] = api.Outcome{Name: c.Labels[api.LabelSlug], Repo: c.Labels[api.LabelRepo], Skipped: "stopped"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = ps.toggleContainer(ctx, r, c, gws, pause, force)
			switch {
			case errors.Is(errs[i], api.ErrStopped):
				outs[i].Skipped, errs[i] = "stopped", nil
			case errors.Is(errs[i], provider.ErrNotFound):
				outs[i].Skipped, errs[i] = "gone", nil
			case errs[i] != nil:
				outs[i] = api.Outcome{} // not done: the error says why
			}
		}()
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}
