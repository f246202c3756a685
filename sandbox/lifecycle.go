package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// found is what lookup knows about one sandbox.
type found struct {
	slug string
	// container is its newest container; nil when there is none.
	container *provider.Sandbox
	// objects is all the engine holds of it: containers, and networks left
	// without one.
	objects  []provider.Sandbox
	branchID string // empty when there is no branch
	// ready: the container holds a copy of the repository verified complete.
	ready bool
	// journal is set while a create of this sandbox has not finished (it
	// runs now, or was cut short).
	journal *state.Journal
	// state: the sandbox has a state directory (only lookupAll).
	state bool
	// early is the removal of its ready container that Delete started
	// before the lookup ended; nil when none.
	early *earlyRemoval
}

// lookup finds a sandbox's container and branch in parallel. A name with
// neither is ErrNotFound.
func (s *Service) lookup(ctx context.Context, r *Repo, name string) (*found, error) {
	f, err := s.find(ctx, r, name)
	if err == nil && f.container == nil && f.branchID == "" {
		return nil, core.NotFoundError(f.slug)
	}
	return f, err
}

// lookupAll finds whatever a sandbox left: containers, networks and branch;
// state tells whether it has a state directory. A name with none of these is
// ErrNotFound.
func (s *Service) lookupAll(ctx context.Context, r *Repo, name string, state bool) (*found, error) {
	f, err := s.find(ctx, r, name)
	if err != nil {
		return nil, err
	}
	f.state = state
	if len(f.objects) == 0 && f.branchID == "" && !f.state {
		return nil, core.NotFoundError(f.slug)
	}
	return f, nil
}

func (s *Service) find(ctx context.Context, r *Repo, name string) (*found, error) {
	slug, err := Slugify(name)
	if err != nil {
		return nil, err
	}
	f := &found{slug: slug}
	var listErr, refErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		f.objects, listErr = s.sandboxes(ctx, r, slug)
	}()
	go func() {
		defer wg.Done()
		f.branchID, _, refErr = r.Git.ResolveRef(ctx, BranchRef(slug))
	}()
	wg.Wait()
	if err := errors.Join(listErr, refErr); err != nil {
		return nil, err
	}
	for i := range f.objects {
		if f.objects[i].State != provider.StateNone {
			f.container = &f.objects[i]
			f.ready = state.IsReady(r.Git.CommonDir, slug, f.container.Ref.ID)
			break
		}
	}
	f.journal = state.ReadJournal(r.Git.CommonDir, slug)
	return f, nil
}

// usable refuses a sandbox whose container is not marked ready, or whose
// create journal says a create has not finished: that create is running now,
// or was cut short with /src holding any part of the repository. Every
// operation on a sandbox's container checks this first.
func (f *found) usable(gitDir string) error {
	if f.ready || (f.container == nil && f.journal == nil) {
		return nil
	}
	if state.BeingCreated(gitDir, f.slug) {
		return state.CreatingError(f.slug)
	}
	return state.IncompleteError(gitDir, f.slug)
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
	Lost []Skipped `json:"lost,omitempty"`
}

// Pause freezes a sandbox's processes, keeping all its state. Pausing a
// paused sandbox is not an error: Outcome.Already says so. Where a pause
// ends the sandbox (Kubernetes), one that would lose files its branch does
// not hold is refused (ErrWouldLose) unless force.
func (s *Service) Pause(ctx context.Context, r *Repo, name string, force bool) (Outcome, error) {
	return s.toggle(ctx, r, name, true, force)
}

// Resume thaws a paused sandbox. Resuming an active one is not an error.
func (s *Service) Resume(ctx context.Context, r *Repo, name string) (Outcome, error) {
	return s.toggle(ctx, r, name, false, false)
}

func (s *Service) toggle(ctx context.Context, r *Repo, name string, pause, force bool) (Outcome, error) {
	slug, err := Slugify(name)
	if err != nil {
		return Outcome{}, err
	}
	sbs, err := s.sandboxes(ctx, r, slug)
	if err != nil {
		return Outcome{}, err
	}
	i := slices.IndexFunc(sbs, func(sb provider.Sandbox) bool { return sb.State != provider.StateNone })
	if i < 0 {
		if _, ok, _ := r.Git.ResolveRef(ctx, BranchRef(slug)); ok {
			return Outcome{}, core.NoContainerError(slug)
		}
		return Outcome{}, core.NotFoundError(slug)
	}
	if st := sbs[i].State; st != provider.StateRunning && st != provider.StatePaused {
		return Outcome{}, core.StoppedError(slug)
	}
	return s.toggleContainer(ctx, r, sbs[i], pause, force)
}

func (s *Service) toggleContainer(ctx context.Context, r *Repo, c provider.Sandbox, pause, force bool) (Outcome, error) {
	out := Outcome{Name: c.Labels[LabelSlug], Repo: c.Labels[LabelRepo]}
	ends := s.pauseEnds()
	var err error
	if pause {
		if ends && c.State == provider.StateRunning {
			if out.Lost, err = s.snapshotBeforePause(ctx, r, c, force); err != nil {
				return out, err
			}
		}
		out.Already, err = s.Provider.Pause(ctx, c.Ref)
	} else {
		out.Already, err = s.Provider.Resume(ctx, c.Ref)
		if err == nil && !out.Already && ends {
			err = s.refillAfterResume(ctx, r, c)
		}
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
func (s *Service) PauseAll(ctx context.Context, r *Repo, force bool) ([]Outcome, error) {
	return s.toggleAll(ctx, r, true, force)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is nil.
func (s *Service) ResumeAll(ctx context.Context, r *Repo) ([]Outcome, error) {
	return s.toggleAll(ctx, r, false, false)
}

func (s *Service) toggleAll(ctx context.Context, r *Repo, pause, force bool) ([]Outcome, error) {
	sbs, err := s.sandboxes(ctx, r, "")
	if err != nil {
		return nil, err
	}
	cts := slices.DeleteFunc(sbs, func(sb provider.Sandbox) bool { return sb.State == provider.StateNone })
	outs := make([]Outcome, len(cts))
	errs := make([]error, len(cts))
	var wg sync.WaitGroup
	for i, c := range cts {
		if c.State != provider.StateRunning && c.State != provider.StatePaused {
			// A stopped sandbox is neither active nor paused: pausing "all
			// active sandboxes" (FR2.2) leaves it alone, and says so.
			outs[i] = Outcome{Name: c.Labels[LabelSlug], Repo: c.Labels[LabelRepo], Skipped: "stopped"}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.toggleContainer(ctx, r, c, pause, force)
			switch {
			case errors.Is(errs[i], ErrStopped):
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

// DeleteReport says what Delete removed.
type DeleteReport struct {
	Name    string   `json:"name"`
	Removed []string `json:"removed"`
}

// Delete removes a sandbox's container, networks, branch and host-side state
// (AC3.3), and whatever part of them an interrupted create or delete left. It
// refuses, changing nothing, when the branch has commits that are not in HEAD
// (for an incomplete sandbox: beyond the commit it was made at), unless force
// is set: that work would be lost. Every removal is idempotent, and the state
// directory goes last, only once everything else is gone: a delete cut short
// at any point is finished by running it again.
func (s *Service) Delete(ctx context.Context, r *Repo, name string, force bool) (*DeleteReport, error) {
	slug, err := Slugify(name)
	if err != nil {
		return nil, err
	}
	// Taken before looking, so a create of the name cannot be halfway
	// through while this removes its parts.
	_, statErr := os.Stat(r.StateDir(slug))
	unlock, lockErr := state.LockCreate(ctx, r, slug)
	if lockErr != nil && (!force || !errors.Is(lockErr, ErrIncomplete)) {
		if errors.Is(lockErr, ErrIncomplete) {
			return nil, core.NewError(ErrIncomplete, "Sandbox '%s' is being created by another litterbox process right now. Wait for it to finish, then delete it; or delete it now with `litterbox delete --force %s`, which makes that create fail.", slug, slug)
		}
		return nil, lockErr
	}
	if lockErr == nil {
		defer unlock()
	}
	var early *earlyRemoval
	if lockErr == nil {
		early = s.startEarlyRemoval(ctx, r, slug, force)
	}
	f, err := s.lookupAll(ctx, r, slug, statErr == nil)
	if err != nil {
		if early != nil {
			<-early.done
		}
		if errors.Is(err, ErrNotFound) && os.IsNotExist(statErr) && lockErr == nil {
			_ = state.Remove(r, slug) // made by lockCreate just now
		}
		return nil, err
	}
	if early != nil {
		<-early.decided
		if early.started {
			// The check below was made before the container went.
			f.early, force = early, true
		}
	}
	if f.branchID != "" && !force {
		base, beyond := "HEAD", "that are not in HEAD"
		if j := f.journal; j != nil && !f.ready && !j.FromBranch {
			// An interrupted create: its branch is its base commit, whatever
			// HEAD is now.
			base, beyond = j.Base, "beyond the commit it was made at"
		}
		n, err := r.Git.CountCommits(ctx, base, f.branchID)
		if err != nil {
			return nil, fmt.Errorf("count unmerged commits of %s%s: %w", BranchPrefix, slug, err)
		}
		if n > 0 {
			return nil, core.NewError(ErrUnmerged, "Sandbox '%s' has %d commit(s) on %s%s %s; deleting it would lose them. Review them with `litterbox diff %s`, bring them in with `litterbox merge %s` or `litterbox apply %s`, or delete anyway with `litterbox delete --force %s`.", slug, n, BranchPrefix, slug, beyond, slug, slug, slug, slug)
		}
	}
	remove := state.Remove
	if lockErr != nil {
		remove = state.Clear // --force past a running create: its lock stays its own
	}
	return s.removeSandbox(ctx, r, f, func() error { return remove(r, slug) })
}

// removeSandbox removes a sandbox's container, networks, state (with
// clearState, once the container and networks are gone) and branch, each only
// if still there and each idempotent (already gone is done). A container
// that cannot be removed stops it before anything else goes, so the sandbox
// stays whole rather than half gone; otherwise it removes what it can and
// names what is left. The branch goes last: a removal cut short at any point
// leaves something list shows and a new delete finds.
func (s *Service) removeSandbox(ctx context.Context, r *Repo, f *found, clearState func() error) (*DeleteReport, error) {
	slug := f.slug
	rep := &DeleteReport{Name: slug, Removed: []string{}}
	if e := f.early; e != nil {
		<-e.done
		if e.err != nil && !errors.Is(e.err, provider.ErrNotFound) {
			return rep, core.NewError(ErrPartialDelete, "delete sandbox '%s': could not remove its container: %v\nNothing was removed; run `litterbox delete %s` again.", slug, core.ErrText(e.err), slug)
		}
		// Removed before the lookup listed it, or not: named either way,
		// by the lookup's name, else the mark's.
		name := e.name
		for _, c := range f.objects {
			if c.Ref.ID == e.id {
				name = c.Name
			}
		}
		if e.err == nil {
			rep.Removed = append(rep.Removed, "container "+name)
		}
		if err := pool.Forget(r.Git.CommonDir, e.id); err != nil {
			s.Log.Warn("could not remove the pool's record of the container", "container", e.id, "err", err)
		}
	}
	for _, c := range f.objects {
		if c.State == provider.StateNone || (f.early != nil && c.Ref.ID == f.early.id) {
			continue
		}
		if err := s.Provider.Remove(ctx, provider.Ref{ID: c.Ref.ID}); err != nil {
			if len(rep.Removed) == 0 {
				return rep, core.NewError(ErrPartialDelete, "delete sandbox '%s': could not remove container %s: %v\nNothing was removed; run `litterbox delete %s` again.", slug, c.Name, core.ErrText(err), slug)
			}
			return rep, core.NewError(ErrPartialDelete, "delete sandbox '%s' was partial: could not remove container %s: %v\nRun `litterbox delete %s` again.", slug, c.Name, core.ErrText(err), slug)
		}
		rep.Removed = append(rep.Removed, "container "+c.Name)
		if c.Labels[core.LabelPool] != "" {
			// A container of the warm pool: its claim goes with it.
			if err := pool.Forget(r.Git.CommonDir, c.Ref.ID); err != nil {
				s.Log.Warn("could not remove the pool's record of the container", "container", c.Name, "err", err)
			}
		}
	}
	var left []string
	for _, n := range f.objects {
		if n.Ref.NetworkID == "" {
			continue
		}
		if err := s.Provider.Remove(ctx, provider.Ref{NetworkID: n.Ref.NetworkID}); err != nil {
			left = append(left, fmt.Sprintf("network %s (%s)", n.Network, core.ErrText(err)))
		} else {
			rep.Removed = append(rep.Removed, "network "+n.Network)
		}
	}
	if len(left) == 0 {
		// The state goes once nothing on the engine needs it; with
		// anything left it stays, so a new delete finds the sandbox.
		if err := clearState(); err != nil {
			left = append(left, fmt.Sprintf("state %s (%v)", r.StateDir(slug), err))
		} else if f.state && len(rep.Removed) == 0 && f.branchID == "" {
			rep.Removed = append(rep.Removed, "leftover state in "+r.StateDir(slug))
		}
	}
	if f.branchID != "" {
		if err := r.Git.DeleteRef(ctx, BranchRef(slug), f.branchID); err != nil {
			left = append(left, fmt.Sprintf("branch %s%s (%s)", BranchPrefix, slug, core.ErrText(err)))
		} else {
			rep.Removed = append(rep.Removed, "branch "+BranchPrefix+slug)
		}
	}
	if len(left) > 0 {
		return rep, core.NewError(ErrPartialDelete, "delete sandbox '%s' was partial; still present:\n  %s\nRun `litterbox delete %s` again, or remove them by hand.", slug, strings.Join(left, "\n  "), slug)
	}
	return rep, nil
}

// Pruned is a container or network Prune removed.
type Pruned struct {
	Kind    string `json:"kind"` // "container" or "network"
	Name    string `json:"name"`
	Sandbox string `json:"sandbox"`
	Repo    string `json:"repo"`
}

// Prune removes the containers and networks of sandboxes whose repository no
// longer exists (its git dir is gone, or holds another repository, one with
// another id): nothing can record their work any
// more, and delete, which works in a repository, cannot reach them. list
// --all-repos shows them first, as orphans. Extra labels narrow it as they do
// every lookup.
func (s *Service) Prune(ctx context.Context) ([]Pruned, error) {
	sbs, members, err := s.objects(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	// The warm pools of those repositories go too.
	sbs = append(sbs, members...)
	name := func(labels map[string]string) string {
		if labels[LabelSlug] == "" && labels[core.LabelPool] != "" {
			return "(warm pool)"
		}
		return labels[LabelSlug]
	}
	gone := func(labels map[string]string) bool {
		gd := labels[LabelGitDir]
		if gd == "" {
			return false
		}
		_, err := os.Stat(gd)
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		// Another repository (another id) is at that path now.
		id := labels[LabelRepoID]
		there := core.ReadRepoID(gd)
		return err == nil && id != "" && there != "" && there != id
	}
	out := []Pruned{}
	var errs []error
	// Containers first: a network is in use while its container exists.
	for _, c := range sbs {
		if c.State == provider.StateNone || !gone(c.Labels) {
			continue
		}
		if err := s.Provider.Remove(ctx, provider.Ref{ID: c.Ref.ID}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %s", c.Name, core.ErrText(err)))
			continue
		}
		out = append(out, Pruned{Kind: "container", Name: c.Name, Sandbox: name(c.Labels), Repo: c.Labels[LabelRepo]})
	}
	for _, n := range sbs {
		if n.Ref.NetworkID == "" || !gone(n.Labels) {
			continue
		}
		if err := s.Provider.Remove(ctx, provider.Ref{NetworkID: n.Ref.NetworkID}); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %s", n.Network, core.ErrText(err)))
			continue
		}
		out = append(out, Pruned{Kind: "network", Name: n.Network, Sandbox: name(n.Labels), Repo: n.Labels[LabelRepo]})
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("prune was partial: %w\nRun `litterbox prune` again", errors.Join(errs...))
	}
	return out, nil
}

// removeLeftovers removes whatever the engine holds of sandbox slug of r;
// removed says whether there was anything.
func (s *Service) removeLeftovers(ctx context.Context, r *Repo, slug string) (removed bool, err error) {
	sbs, err := s.sandboxes(ctx, r, slug)
	if err != nil {
		return false, err
	}
	var errs []error
	for _, sb := range sbs {
		errs = append(errs, s.Provider.Remove(ctx, sb.Ref))
	}
	return len(sbs) > 0, errors.Join(errs...)
}

// earlyRemoval is a delete's removal of the container its sandbox's ready
// mark names, started beside the lookup that finds whatever else the
// sandbox has (networks, what earlier creates left): a delete then costs
// about one docker rm, not a lookup and then a docker rm.
type earlyRemoval struct {
	id, name string
	decided  chan struct{} // closed once started is known
	started  bool          // the checks passed, and the removal began
	done     chan struct{} // closed once the removal ended, or never began
	err      error
}

// startEarlyRemoval removes the ready container of slug unless its branch
// holds commits HEAD lacks (and force is not set), or a create of it never
// finished (its journal is there: what a delete then removes is found by
// the lookup alone). nil when there is no such container.
func (s *Service) startEarlyRemoval(ctx context.Context, r *Repo, slug string, force bool) *earlyRemoval {
	id, name := state.ReadyMark(r.Git.CommonDir, slug)
	if id == "" || state.ReadJournal(r.Git.CommonDir, slug) != nil {
		return nil
	}
	e := &earlyRemoval{id: id, name: cmp.Or(name, r.ContainerName(slug)), decided: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		decide := func(ok bool) {
			e.started = ok
			close(e.decided)
		}
		if !force {
			// One git call: a branch that is not there fails it, and
			// leaves the decision to the lookup.
			if n, err := r.Git.CountCommits(ctx, "HEAD", BranchRef(slug)); err != nil || n > 0 {
				decide(false)
				return
			}
		}
		decide(true)
		e.err = s.Provider.Remove(ctx, provider.Ref{ID: id})
		if e.err == nil {
			// The mark names a container no more: a delete run again
			// (this one partial) does not remove, and name, it twice.
			_ = state.Unready(r.Git.CommonDir, slug)
		}
	}()
	return e
}
