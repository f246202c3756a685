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
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
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

// Outcome is the result of pausing or resuming one sandbox.
type Outcome struct {
	Name    string `json:"name"`
	Repo    string `json:"repo"`
	Already bool   `json:"already"` // it was already in the asked-for state
	// Skipped says why --all-envs/--all-repos left this sandbox alone: it is
	// stopped (nothing to pause or resume) or its container vanished meanwhile.
	Skipped string `json:"skipped,omitempty"`
	// Lost are the files a forced pause that ended the sandbox (Kubernetes)
	// lost: its branch does not hold them.
	Lost []recording.Skipped `json:"lost,omitempty"`
	// Ended says the pause ended the sandbox (Kubernetes: its pod was
	// deleted), so what its branch does not hold (its processes, /tmp) is
	// gone.
	Ended bool `json:"ended,omitempty"`
	// GitDir is the common git dir the sandbox's labels name: where its
	// activity record is, when the repository was not given.
	GitDir string `json:"-"`
}

// Pause freezes a sandbox's processes, keeping all its state. Pausing a
// paused sandbox is not an error: Outcome.Already says so. Where a pause
// ends the sandbox (Kubernetes), one that would lose files its branch does
// not hold is refused (ErrWouldLose) unless force.
func (ps *Pauser) Pause(ctx context.Context, r *core.Repo, name string, force bool) (Outcome, error) {
	return ps.toggle(ctx, r, name, true, force)
}

// Resume thaws a paused sandbox. Resuming an active one is not an error.
// On an engine that runs gateways, it also starts a stopped one again (an
// engine restart stops them), and a confined sandbox's gateway that is not
// running (restart.go).
func (ps *Pauser) Resume(ctx context.Context, r *core.Repo, name string) (Outcome, error) {
	return ps.toggle(ctx, r, name, false, false)
}

func (ps *Pauser) toggle(ctx context.Context, r *core.Repo, name string, pause, force bool) (Outcome, error) {
	slug, err := core.Slugify(name)
	if err != nil {
		return Outcome{}, err
	}
	// With their gateways, whose state resume reads from the same list.
	objs, _, err := ps.inv.Objects(ctx, r, slug)
	if err != nil {
		return Outcome{}, err
	}
	gws := inventory.GatewayStates(objs)
	sbs := slices.DeleteFunc(objs, netgate.IsGateway)
	i := slices.IndexFunc(sbs, func(sb provider.Sandbox) bool { return sb.State != provider.StateNone })
	if i < 0 {
		if _, ok, _ := r.Git.ResolveRef(ctx, core.BranchRef(slug)); ok {
			return Outcome{}, core.NoContainerError(slug)
		}
		return Outcome{}, core.NotFoundError(slug)
	}
	if st := sbs[i].State; st != provider.StateRunning && st != provider.StatePaused {
		if !pause && ps.canStart() {
			return ps.start(ctx, r, sbs[i])
		}
		return Outcome{}, core.StoppedError(slug)
	}
	return ps.toggleContainer(ctx, r, sbs[i], gws, pause, force)
}

// toggleContainer pauses or resumes c; gws are the states of the engine's
// gateways (inventory.GatewayStates), for a resume.
func (ps *Pauser) toggleContainer(ctx context.Context, r *core.Repo, c provider.Sandbox, gws map[string]provider.State, pause, force bool) (Outcome, error) {
	out := Outcome{Name: c.Labels[core.LabelSlug], Repo: c.Labels[core.LabelRepo], GitDir: c.Labels[core.LabelGitDir]}
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
		var fixed bool
		if fixed, err = ps.resumeGateway(ctx, r, c, gws); err != nil {
			return out, err
		}
		out.Already, err = ps.Provider.Resume(ctx, c.Ref)
		if err == nil && !out.Already && ends {
			err = ps.refillAfterResume(ctx, r, c)
		}
		out.Already = out.Already && !fixed
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
func (ps *Pauser) PauseAll(ctx context.Context, r *core.Repo, force bool) ([]Outcome, error) {
	return ps.toggleAll(ctx, r, true, force)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is nil.
func (ps *Pauser) ResumeAll(ctx context.Context, r *core.Repo) ([]Outcome, error) {
	return ps.toggleAll(ctx, r, false, false)
}

func (ps *Pauser) toggleAll(ctx context.Context, r *core.Repo, pause, force bool) ([]Outcome, error) {
	objs, _, err := ps.inv.Objects(ctx, r, "")
	if err != nil {
		return nil, err
	}
	gws := inventory.GatewayStates(objs)
	sbs := slices.DeleteFunc(objs, netgate.IsGateway)
	cts := slices.DeleteFunc(sbs, func(sb provider.Sandbox) bool { return sb.State == provider.StateNone })
	outs := make([]Outcome, len(cts))
	errs := make([]error, len(cts))
	var wg sync.WaitGroup
	for i, c := range cts {
		if c.State != provider.StateRunning && c.State != provider.StatePaused && !pause && ps.canStart() {
			// Resuming all after an engine restart starts them again.
			wg.Add(1)
			go func() {
				defer wg.Done()
				if outs[i], errs[i] = ps.start(ctx, r, c); errs[i] != nil {
					outs[i] = Outcome{}
				}
			}()
			continue
		}
		if c.State != provider.StateRunning && c.State != provider.StatePaused {
			// A stopped sandbox is neither active nor paused: pausing "all
			// active sandboxes" leaves it alone, and says so.
			outs[i] = Outcome{Name: c.Labels[core.LabelSlug], Repo: c.Labels[core.LabelRepo], Skipped: "stopped"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = ps.toggleContainer(ctx, r, c, gws, pause, force)
			switch {
			case errors.Is(errs[i], core.ErrStopped):
				outs[i].Skipped, errs[i] = "stopped", nil
			case errors.Is(errs[i], provider.ErrNotFound):
				outs[i].Skipped, errs[i] = "gone", nil
			case errs[i] != nil:
				outs[i] = Outcome{} // not done: the error says why
			}
		}()
	}
	wg.Wait()
	return outs, errors.Join(errs...)
}
