package inventory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/cache"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Found is what Lookup knows about one sandbox.
type Found struct {
	Slug string
	// Container is its newest container; nil when there is none.
	Container *provider.Sandbox
	// Objects is all the engine holds of it: containers, and networks left
	// without one.
	Objects  []provider.Sandbox
	BranchID string // empty when there is no branch
	// Ready: the container holds a copy of the repository verified complete.
	Ready bool
	// Journal is set while a create of this sandbox has not finished (it
	// runs now, or was cut short).
	Journal *state.Journal
	// HasState: the sandbox has a state directory (only lookupAll).
	HasState bool
	// phases times the delete's phases for the debug log.
	phases *core.Phases
}

// Lookup finds a sandbox's container and branch in parallel. A name with
// neither is ErrNotFound.
func (inv *Inventory) Lookup(ctx context.Context, r *api.Repo, name string) (*Found, error) {
	f, err := inv.find(ctx, r, name)
	if err == nil && f.Container == nil && f.BranchID == "" {
		return nil, core.NotFoundError(f.Slug)
	}
	return f, err
}

// lookupAll finds whatever a sandbox left: containers, networks and branch;
// hasState tells whether it has a state directory. A name with none of these is
// ErrNotFound.
func (inv *Inventory) lookupAll(ctx context.Context, r *api.Repo, name string, hasState bool) (*Found, error) {
	f, err := inv.find(ctx, r, name)
	if err != nil {
		return nil, err
	}
	f.HasState = hasState
	if len(f.Objects) == 0 && f.BranchID == "" && !f.HasState {
		return nil, core.NotFoundError(f.Slug)
	}
	return f, nil
}

func (inv *Inventory) find(ctx context.Context, r *api.Repo, name string) (*Found, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	f := &Found{Slug: slug}
	var listErr, refErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		f.Objects, listErr = inv.withGateways(ctx, r, slug)
	}()
	go func() {
		defer wg.Done()
		f.BranchID, _, refErr = r.Git.ResolveRef(ctx, api.BranchRef(slug))
	}()
	wg.Wait()
	if err := errors.Join(listErr, refErr); err != nil {
		return nil, err
	}
	for i := range f.Objects {
		if f.Objects[i].State != provider.StateNone && !netgate.IsGateway(f.Objects[i]) {
			f.Container = &f.Objects[i]
			f.Ready = state.IsReady(r.Git.CommonDir, slug, f.Container.Ref.ID)
			break
		}
	}
	f.Journal = state.ReadJournal(r.Git.CommonDir, slug)
	return f, nil
}

// Usable refuses a sandbox whose container is not marked ready, or whose
// create journal says a create has not finished: that create is running now,
// or was cut short with /src holding any part of the repository. Every
// operation on a sandbox's container checks this first.
func (f *Found) Usable(gitDir string) error {
	if f.Ready || (f.Container == nil && f.Journal == nil) {
		return nil
	}
	if state.BeingCreated(gitDir, f.Slug) {
		return state.CreatingError(f.Slug)
	}
	return state.IncompleteError(gitDir, f.Slug)
}

// Delete removes a sandbox's container, networks, branch and host-side state
// and whatever part of them an interrupted create or delete left. It
// refuses, changing nothing, when the branch has commits that are not in HEAD
// (for an incomplete sandbox: beyond the commit it was made at), unless force
// is set: that work would be lost. Every removal is idempotent, and the state
// directory goes last, only once everything else is gone: a delete cut short
// at any point is finished by running it again.
//
// A sandbox whose create finished goes in the order its user sees it go
// (deleteReady): its container, its branch, then the rest, which detach
// may hand to another process.
func (inv *Inventory) Delete(ctx context.Context, r *api.Repo, name string, force bool, detach api.Detach) (*api.DeleteReport, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	ph := core.StartPhases(inv.Log, "delete")
	defer ph.End()
	// Taken before looking, so a create of the name cannot be halfway
	// through while this removes its parts.
	lock, lockErr := state.TakeCreate(ctx, r, slug, nil)
	// Read once the lock is taken: a delete finishing meanwhile removed it.
	hasState := state.HasState(r.Git.CommonDir, slug)
	if lockErr != nil && (!force || !errors.Is(lockErr, api.ErrIncomplete)) {
		if errors.Is(lockErr, api.ErrIncomplete) && !state.Deleting(r.Git.CommonDir, slug) {
			return nil, core.NewError(api.ErrIncomplete, "Sandbox '%s' is being created by another litterbox process right now. Wait for it to finish, then delete it; or delete it now with `litterbox delete --force %s`, which makes that create fail.", slug, slug)
		}
		return nil, lockErr
	}
	if lockErr == nil {
		if rep, done, err := inv.deleteReady(ctx, r, slug, force, lock, detach, ph); done {
			return rep, err
		}
		defer lock.Unlock()
	}
	f, err := inv.lookupAll(ctx, r, slug, hasState)
	if err != nil {
		if errors.Is(err, api.ErrNotFound) && !hasState && lockErr == nil {
			_ = state.Remove(r, slug) // made by lockCreate just now
		}
		return nil, err
	}
	if f.BranchID != "" && !force {
		base, beyond := "HEAD", "that are not in HEAD"
		if j := f.Journal; j != nil && !f.Ready && !j.FromBranch {
			// An interrupted create: its branch is its base commit, whatever
			// HEAD is now.
			base, beyond = j.Base, "beyond the commit it was made at"
		}
		n, err := r.Git.CountCommits(ctx, base, f.BranchID)
		if err != nil {
			return nil, fmt.Errorf("count unmerged commits of %s%s: %w", api.BranchPrefix, slug, err)
		}
		if n > 0 {
			return nil, core.NewError(api.ErrUnmerged, "Sandbox '%s' has %d commit(s) on %s%s %s; deleting it would lose them. Review them with `litterbox diff %s`, bring them in with `litterbox merge %s` or `litterbox apply %s`, or delete anyway with `litterbox delete --force %s`.", slug, n, api.BranchPrefix, slug, beyond, slug, slug, slug, slug)
		}
	}
	ph.Done("checks and lookup")
	f.phases = ph
	remove := state.Remove
	if lockErr != nil {
		remove = state.Clear // --force past a running create: its lock stays its own
	}
	return inv.RemoveSandbox(ctx, r, f, func() error { return remove(r, slug) })
}

// deleteReady deletes a sandbox whose create finished (its ready mark names
// its container; no create journal is there) in the order its user sees
// it go, with no engine lookup first: its container (one engine call),
// its branch, and then what is left, which list shows only as its row's
// gateway: the gateway, their volume, networks, the state. detach may
// hand that rest to another process, with lock; otherwise it goes here.
// The deleting mark, written before anything goes, makes a delete cut
// short after the branch went a row of list (StatusLeftover) that delete
// finishes. done is false, with nothing changed, for any other sandbox,
// or when its branch holds commits HEAD lacks and force is not set: the
// lookup's path then deletes it, or refuses.
func (inv *Inventory) deleteReady(ctx context.Context, r *api.Repo, slug string, force bool, lock *state.CreateLock, detach api.Detach, ph *core.Phases) (rep *api.DeleteReport, done bool, err error) {
	gitDir := r.Git.CommonDir
	id, name := state.ReadyMark(gitDir, slug)
	if id == "" || state.ReadJournal(gitDir, slug) != nil {
		return nil, false, nil
	}
	// One git call finds the branch's tip and HEAD: a tip at HEAD (a
	// sandbox with no work, the usual one to delete) has nothing HEAD
	// lacks, and no second call counts it.
	ref := api.BranchRef(slug)
	ids, err := r.Git.Commits(ctx, "HEAD", ref)
	if err != nil {
		return nil, false, nil
	}
	head, tip := ids[0], ids[1]
	if !force && tip != head {
		if n, err := r.Git.CountCommits(ctx, head, tip); err != nil || n > 0 {
			return nil, false, nil
		}
	}
	finished := false
	defer func() {
		if !finished {
			lock.Unlock()
		}
	}()
	if err := state.MarkDeleting(r, slug, id); err != nil {
		return nil, true, fmt.Errorf("delete sandbox '%s': nothing was removed: %w", slug, err)
	}
	ph.Done("checks")
	rep = &api.DeleteReport{Name: slug, Removed: []string{}}
	// A sandbox with a gateway has no network of its own.
	rec, confined, _ := netgate.Read(gitDir, slug)
	removed, err := inv.gate.RemoveContainer(ctx, id, confined && rec.Gateway != "")
	if err != nil {
		state.UnmarkDeleting(gitDir, slug) // the sandbox is whole
		return rep, true, core.NewError(api.ErrPartialDelete, "delete sandbox '%s': could not remove its container: %v\nNothing was removed; run `litterbox delete %s` again.", slug, core.ErrText(err), slug)
	}
	if removed {
		rep.Removed = append(rep.Removed, "container "+cmp.Or(name, r.ContainerName(slug)))
	}
	// The mark names a container no more: a delete run again does not
	// remove, and name, it twice. Its pool claim stays until its gateway
	// is gone (RemoveSandbox).
	_ = state.Unready(gitDir, slug)
	ph.Done("container")
	if err := r.Git.DeleteRef(ctx, ref, tip); err != nil {
		return rep, true, core.NewError(api.ErrPartialDelete, "delete sandbox '%s' was partial; still present:\n  branch %s%s (%s)\nRun `litterbox delete %s` again.", slug, api.BranchPrefix, slug, core.ErrText(err), slug)
	}
	rep.Removed = append(rep.Removed, "branch "+api.BranchPrefix+slug)
	ph.Done("branch")
	// A gateway that publishes the sandbox's ports holds them on the host
	// until it goes: it goes here, before the delete returns, so that a
	// create right after finds them free.
	gatewayGone := false
	if confined && rec.Gateway != "" && len(rec.Ports) > 0 && detach != nil {
		removed, err := inv.gate.RemoveContainer(ctx, rec.Gateway, false)
		if gatewayGone = err == nil; removed {
			rep.Removed = append(rep.Removed, "container "+rec.Gateway)
		}
		ph.Done("gateway, which holds its ports")
	}
	if detach != nil {
		err := detach(slug, lock.File())
		if err == nil {
			lock.Release()
			finished = true
			rep.Removing = gatewayOf(rec, gatewayGone)
			ph.Done("the rest handed to another process")
			return rep, true, nil
		}
		inv.Log.Debug("could not hand the end of the delete to another process: finishing here", "err", err)
	}
	rest, err := inv.finish(ctx, r, slug)
	if rest != nil {
		rep.Removed = append(rep.Removed, rest.Removed...)
	}
	return rep, true, err
}

// gatewayOf names, for a report, the gateway container (unless it is
// gone) and volume that the sandbox's egress record rec (nil for none)
// names. rec is the one read before the rest was handed on: the process
// it went to may have removed the state since.
func gatewayOf(rec *netgate.NetFile, gone bool) []string {
	if rec == nil || rec.Gateway == "" {
		return nil
	}
	var out []string
	if !gone {
		out = append(out, "container "+rec.Gateway)
	}
	if rec.Volume != "" {
		out = append(out, "volume "+rec.Volume)
	}
	return out
}

// finish removes what a delete leaves after the container and the branch
// of sandbox slug (deleteReady): whatever the engine holds of it (its
// gateway, other containers, networks), the gateway's volume, then its
// state. The caller holds its create lock. It never removes a branch: a
// branch of that name is not the one the delete removed.
func (inv *Inventory) finish(ctx context.Context, r *api.Repo, slug string) (*api.DeleteReport, error) {
	f, err := inv.find(ctx, r, slug)
	if err != nil {
		return nil, err
	}
	f.BranchID = ""
	return inv.RemoveSandbox(ctx, r, f, func() error { return state.Remove(r, slug) })
}

// Finish is FinishDelete: the end of a delete of sandbox name that another
// process handed this one, with lock, its create lock, which is let go
// once done (or when this process dies: a delete cut short, which list
// shows and delete finishes).
func (inv *Inventory) Finish(ctx context.Context, r *api.Repo, name string, lock *os.File) error {
	l := state.Adopt(lock)
	defer l.Unlock()
	slug, err := api.Slugify(name)
	if err != nil {
		return err
	}
	ph := core.StartPhases(inv.Log, "delete, its end")
	defer ph.End()
	if _, err = inv.finish(ctx, r, slug); err != nil {
		// No one reads this process's errors: list's leftover row does.
		state.NoteDeleteFailed(r.Git.CommonDir, slug, core.ErrText(err))
	}
	return err
}

// RemoveSandbox removes a sandbox's container, networks, state (with
// clearState, once the container and networks are gone) and branch, each only
// if still there and each idempotent (already gone is done). A container
// that cannot be removed stops it before anything else goes, so the sandbox
// stays whole rather than half gone; otherwise it removes what it can and
// names what is left. The branch goes last: a removal cut short at any point
// leaves something list shows and a new delete finds.
func (inv *Inventory) RemoveSandbox(ctx context.Context, r *api.Repo, f *Found, clearState func() error) (*api.DeleteReport, error) {
	slug := f.Slug
	rep := &api.DeleteReport{Name: slug, Removed: []string{}}
	ph := f.phases
	if ph == nil {
		ph = core.StartPhases(inv.Log, "remove")
		defer ph.End()
	}
	for _, c := range f.Objects {
		if c.State == provider.StateNone {
			continue
		}
		if err := inv.Provider.Remove(ctx, provider.Ref{ID: c.Ref.ID}); err != nil {
			if len(rep.Removed) == 0 {
				return rep, core.NewError(api.ErrPartialDelete, "delete sandbox '%s': could not remove container %s: %v\nNothing was removed; run `litterbox delete %s` again.", slug, c.Name, core.ErrText(err), slug)
			}
			return rep, core.NewError(api.ErrPartialDelete, "delete sandbox '%s' was partial: could not remove container %s: %v\nRun `litterbox delete %s` again.", slug, c.Name, core.ErrText(err), slug)
		}
		rep.Removed = append(rep.Removed, "container "+c.Name)
		if c.Labels[api.LabelPool] != "" {
			// A container of the warm pool: its claim goes with it.
			if err := pool.Forget(r.Git.CommonDir, c.Ref.ID); err != nil {
				inv.Log.Warn("could not remove the pool's record of the container", "container", c.Name, "err", err)
			}
		}
	}
	ph.Done("containers")
	var left []string
	// A gateway's volume, once its containers are gone: the record names
	// it, and so does a gateway's container (its volume has its name).
	vols := map[string]bool{}
	if rec, ok, _ := netgate.Read(r.Git.CommonDir, slug); ok {
		vols[rec.Volume] = true
	}
	for _, c := range f.Objects {
		if netgate.IsGateway(c) && c.State != provider.StateNone {
			vols[c.Name] = true
		}
	}
	for _, v := range slices.Sorted(maps.Keys(vols)) {
		if v == "" || !inv.gate.Volumes() {
			continue
		}
		if err := inv.gate.RemoveVolume(ctx, v); err != nil {
			left = append(left, fmt.Sprintf("volume %s (%s)", v, core.ErrText(err)))
		} else {
			rep.Removed = append(rep.Removed, "volume "+v)
		}
	}
	ph.Done("volumes")
	for _, n := range f.Objects {
		if n.Ref.NetworkID == "" {
			continue
		}
		if err := inv.Provider.Remove(ctx, provider.Ref{NetworkID: n.Ref.NetworkID}); err != nil {
			left = append(left, fmt.Sprintf("network %s (%s)", n.Network, core.ErrText(err)))
		} else {
			rep.Removed = append(rep.Removed, "network "+n.Network)
		}
	}
	ph.Done("networks")
	if len(left) == 0 {
		// The pool claim of a container a delete removed before (its
		// gateway, a pool member's, was its by the claim), then the
		// state, once nothing on the engine needs them; with anything
		// left they stay, so a new delete finds the sandbox.
		if id := state.DeletingID(r.Git.CommonDir, slug); id != "" {
			if err := pool.Forget(r.Git.CommonDir, id); err != nil {
				inv.Log.Warn("could not remove the pool's record of the container", "container", id, "err", err)
			}
		}
		if err := clearState(); err != nil {
			left = append(left, fmt.Sprintf("state %s (%v)", r.StateDir(slug), err))
		} else if f.HasState && len(rep.Removed) == 0 && f.BranchID == "" {
			rep.Removed = append(rep.Removed, "leftover state in "+r.StateDir(slug))
		}
	}
	ph.Done("state")
	if f.BranchID != "" {
		if err := r.Git.DeleteRef(ctx, api.BranchRef(slug), f.BranchID); err != nil {
			left = append(left, fmt.Sprintf("branch %s%s (%s)", api.BranchPrefix, slug, core.ErrText(err)))
		} else {
			rep.Removed = append(rep.Removed, "branch "+api.BranchPrefix+slug)
		}
		ph.Done("branch")
	}
	if len(left) > 0 {
		return rep, core.NewError(api.ErrPartialDelete, "delete sandbox '%s' was partial; still present:\n  %s\nRun `litterbox delete %s` again, or remove them by hand.", slug, strings.Join(left, "\n  "), slug)
	}
	return rep, nil
}

// Prune removes the containers and networks of sandboxes whose repository no
// longer exists (its git dir is gone, or holds another repository, one with
// another id): nothing can record their work any
// more, and delete, which works in a repository, cannot reach them. list
// --all-repos shows them first, as orphans. Extra labels narrow it as they do
// every lookup.
func (inv *Inventory) Prune(ctx context.Context) ([]api.Pruned, error) {
	sbs, members, err := inv.Objects(ctx, nil, "")
	if err != nil {
		return nil, err
	}
	// The warm pools of those repositories go too.
	sbs = append(sbs, members...)
	name := func(labels map[string]string) string {
		if labels[api.LabelSlug] == "" && labels[api.LabelPool] != "" {
			return "(warm pool)"
		}
		return labels[api.LabelSlug]
	}
	gone := func(labels map[string]string) bool {
		gd := labels[api.LabelGitDir]
		if gd == "" {
			return false
		}
		_, err := os.Stat(gd)
		if errors.Is(err, os.ErrNotExist) {
			return true
		}
		// Another repository (another id) is at that path now.
		id := labels[api.LabelRepoID]
		there := core.ReadRepoID(gd)
		return err == nil && id != "" && there != "" && there != id
	}
	out := []api.Pruned{}
	var errs []error
	var gateways []provider.Sandbox
	// Containers first: a network is in use while its container exists.
	for _, c := range sbs {
		if c.State == provider.StateNone || !gone(c.Labels) {
			continue
		}
		if err := inv.Provider.Remove(ctx, provider.Ref{ID: c.Ref.ID}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %s", c.Name, core.ErrText(err)))
			continue
		}
		out = append(out, api.Pruned{Kind: "container", Name: c.Name, Sandbox: name(c.Labels), Repo: c.Labels[api.LabelRepo]})
		if netgate.IsGateway(c) && inv.gate.Volumes() {
			gateways = append(gateways, c)
		}
	}
	// A gateway's volume once every container is gone: its sandbox (a
	// pool's member, say, listed after it) mounts it too.
	for _, c := range gateways {
		if err := inv.gate.RemoveVolume(ctx, c.Name); err != nil {
			errs = append(errs, err)
		} else {
			out = append(out, api.Pruned{Kind: "volume", Name: c.Name, Sandbox: name(c.Labels), Repo: c.Labels[api.LabelRepo]})
		}
	}
	for _, n := range sbs {
		if n.Ref.NetworkID == "" || !gone(n.Labels) {
			continue
		}
		if err := inv.Provider.Remove(ctx, provider.Ref{NetworkID: n.Ref.NetworkID}); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %s", n.Network, core.ErrText(err)))
			continue
		}
		out = append(out, api.Pruned{Kind: "network", Name: n.Network, Sandbox: name(n.Labels), Repo: n.Labels[api.LabelRepo]})
	}
	// The shared caches of those repositories, once no container mounts
	// them.
	caches, err := cache.New(inv.Common).Prune(ctx, gone)
	if err != nil {
		errs = append(errs, err)
	}
	for _, v := range slices.Sorted(maps.Keys(caches)) {
		out = append(out, api.Pruned{Kind: "volume", Name: v, Repo: caches[v]})
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("prune was partial: %w\nRun `litterbox prune` again", errors.Join(errs...))
	}
	return out, nil
}

// RemoveLeftovers removes whatever the engine holds of sandbox slug of r,
// but the containers named in keep (a create's own gateway, made already);
// removed says whether there was anything.
func (inv *Inventory) RemoveLeftovers(ctx context.Context, r *api.Repo, slug string, keep ...string) (removed bool, err error) {
	sbs, err := inv.withGateways(ctx, r, slug)
	if err != nil {
		return false, err
	}
	sbs = slices.DeleteFunc(sbs, func(sb provider.Sandbox) bool { return slices.Contains(keep, sb.Name) })
	var errs []error
	for _, sb := range sbs {
		errs = append(errs, inv.Provider.Remove(ctx, sb.Ref))
	}
	for _, sb := range sbs {
		if netgate.IsGateway(sb) {
			errs = append(errs, inv.gate.RemoveVolume(ctx, sb.Name))
		}
	}
	return len(sbs) > 0, errors.Join(errs...)
}

// Running finds a sandbox whose container is running. Missing, incomplete,
// paused and stopped sandboxes are errors that say what to do.
func (inv *Inventory) Running(ctx context.Context, r *api.Repo, name string) (*Found, error) {
	f, err := inv.Lookup(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if err := f.Usable(r.Git.CommonDir); err != nil {
		return nil, err
	}
	if f.Container == nil {
		return nil, core.NoContainerError(f.Slug)
	}
	if inv.Wake != nil && (f.Container.State == provider.StateRunning || f.Container.State == provider.StatePaused) {
		resumed, err := inv.Wake(ctx, core.HandleOf(r, *f.Container))
		if err != nil {
			return nil, err
		}
		if resumed {
			f.Container.State = provider.StateRunning
		}
	}
	switch f.Container.State {
	case provider.StateRunning:
		return f, nil
	case provider.StatePaused:
		return nil, core.PausedError(f.Slug)
	}
	return nil, core.StoppedError(f.Slug)
}

// Handle resolves a running sandbox. Missing, incomplete, paused and stopped
// Sandboxes are errors that say what to do.
func (inv *Inventory) Handle(ctx context.Context, r *api.Repo, name string) (*api.Handle, error) {
	f, err := inv.Running(ctx, r, name)
	if err != nil {
		return nil, err
	}
	return core.HandleOf(r, *f.Container), nil
}
