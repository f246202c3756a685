// Package review is the human side of a sandbox's work: log, diff, apply
// and merge. They read the branch, which is the record of a sandbox's work,
// so they work whether or not its container still exists. apply and merge
// are the only operations that change the user's working tree: both check
// everything before they write anything, and a journal (txn.go) lets the
// next merge, apply or list roll back one that was cut short.
package review

import (
	"context"
	"errors"
	"fmt"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Reviewer reviews c's sandboxes' branches; inv finds a sandbox's branch
// and base, and deletes a merged sandbox.
type Reviewer struct {
	*core.Common
	inv *inventory.Inventory
}

// New is the review of c's sandboxes.
func New(c *core.Common, inv *inventory.Inventory) *Reviewer { return &Reviewer{Common: c, inv: inv} }

// ListDir lists the sandboxes of the repository open finds and its warm
// pool, at about the cost of one engine list (open runs beside it). It first finishes an
// interrupted merge or apply of this working tree (RecoverWorktree).
func (rw *Reviewer) ListDir(ctx context.Context, open func(context.Context) (*api.Repo, map[string]string, error)) ([]api.Sandbox, []api.PoolEntry, error) {
	r, list, members, err := rw.inv.ListDir(ctx, open)
	if err != nil {
		return nil, nil, err
	}
	if err := rw.RecoverWorktree(ctx, r); err != nil {
		// The message says what to do; the list is still worth showing.
		rw.Log.Warn(err.Error())
	}
	return list, pool.Entries(r, members), nil
}

// History lists the snapshot and milestone commits of a sandbox's branch
// since its base, newest first (litterbox log).
func (rw *Reviewer) History(ctx context.Context, r *api.Repo, name string) (*api.History, error) {
	rv, err := rw.inv.ResolveBranch(ctx, r, name)
	if err != nil {
		return nil, err
	}
	commits, err := r.Git.Log(ctx, rv.Base, rv.Tip)
	if err != nil {
		return nil, fmt.Errorf("log of %s%s: %w", api.BranchPrefix, rv.Slug, err)
	}
	if commits == nil {
		commits = []git.Commit{}
	}
	return &api.History{Name: rv.Slug, Branch: api.BranchPrefix + rv.Slug, Base: rv.Base, Commits: commits}, nil
}

// Diff writes the sandbox's changes against its base to w, as git diff shows
// them (or a diffstat); with opts.Hold, it lists every file in res.Files,
// then holds what the limits allow of the patch in res.Patch. The branch
// is resolved once: what is shown is the diff of res.Tip, even when the
// branch moves meanwhile.
func (rw *Reviewer) Diff(ctx context.Context, r *api.Repo, name string, opts git.DiffOptions, w io.Writer) (*api.DiffResult, error) {
	rv, err := rw.inv.ResolveBranch(ctx, r, name)
	if err != nil {
		return nil, err
	}
	res := &api.DiffResult{Name: rv.Slug, Base: rv.Base, Tip: rv.Tip}
	if opts.Hold != nil {
		res.Files, err = r.Git.ListFiles(ctx, rv.Base, rv.Tip, opts.Hold.Files, opts.Hold.NameBytes)
		if err != nil {
			return nil, err
		}
		res.Empty = res.Files.Total == 0
		paths := make([]string, len(res.Files.Files))
		for i, f := range res.Files.Files {
			paths[i] = f.Path
		}
		res.ConfigFiles = configFiles(paths)
		if res.Empty {
			return res, nil
		}
		res.Patch, err = r.Git.HoldPatch(ctx, rv.Base, rv.Tip, res.Files, *opts.Hold)
		return res, err
	}
	res.Paths, err = r.Git.ChangedPaths(ctx, rv.Base, rv.Tip)
	if err != nil {
		return nil, err
	}
	if len(res.Paths) == 0 {
		res.Empty = true
		return res, nil
	}
	res.ConfigFiles = configFiles(res.Paths)
	return res, r.Git.Diff(ctx, rv.Base, rv.Tip, opts, w)
}

// Apply puts the sandbox's changes (base..branch) into the working tree,
// uncommitted, and keeps the sandbox. The index and HEAD are left alone, so
// the user reviews and stages the result as their own edit.
//
// It refuses with ErrConflict, having changed nothing, when the changes touch
// the user's local settings (config.LocalFile), when a file they touch has
// uncommitted changes (staged or not) or is untracked, when a file git does
// not track (an ignored .env, a virtualenv) is where they add one, and when
// the patch does not apply to the working tree. git apply checks every
// hunk before it writes, and a journal (see txn.go) lets the next merge,
// apply or list roll back an apply killed while it wrote: nothing is ever
// left half-applied.
//
// at, when set, is the commit a review showed (DiffResult.Tip, `diff`'s
// line): Apply refuses with ErrMoved unless the branch is there, and then
// applies exactly that commit's changes, since the patch is made of it
// and not of the branch.
func (rw *Reviewer) Apply(ctx context.Context, r *api.Repo, name, at string) (*api.ApplyResult, error) {
	rv, unlock, err := rw.writeFrom(ctx, r, name, "apply", at)
	if err != nil {
		return nil, err
	}
	defer unlock()
	res := &api.ApplyResult{Name: rv.Slug, Base: rv.Base, Tip: rv.Tip}
	var (
		changes           []git.RawChange
		dirty             []string
		patch             []byte
		pErr, dErr, chErr error
		wg                sync.WaitGroup
	)
	wg.Add(3)
	go func() { defer wg.Done(); changes, chErr = r.Git.RawDiff(ctx, rv.Base, rv.Tip) }()
	go func() { defer wg.Done(); dirty, dErr = r.Git.Dirty(ctx) }()
	go func() { defer wg.Done(); patch, pErr = r.Git.Patch(ctx, rv.Base, rv.Tip) }()
	wg.Wait()
	for _, err := range []error{chErr, dErr, pErr} {
		if err != nil {
			return nil, fmt.Errorf("apply sandbox %q: %w", rv.Slug, err)
		}
	}
	paths := changedNames(changes)
	res.Files = paths
	if len(paths) == 0 {
		res.Empty = true
		return res, nil
	}
	if err := refuseLocalSettings("apply", rv.Slug, paths); err != nil {
		return nil, err
	}
	res.ConfigFiles = configFiles(paths)
	if overlap := intersect(paths, dirty); len(overlap) > 0 {
		// Files holding exactly the sandbox's changes are dirty too: that is
		// an apply done before, not a conflict.
		if back, _, _, err := r.Git.ApplyCheck(ctx, patch, true); err == nil && back {
			res.Already = true
			return res, nil
		}
		return nil, inTheWay("apply", rv.Slug, overlap)
	}
	// What git does not track where the changes add a file (an ignored
	// .env, a virtualenv) is the user's own: say so, rather than let git
	// apply's refusal read as a conflict that merge would solve (merge
	// refuses the same files).
	if theirs, err := rw.untrackedInTheWay(ctx, r, changes); err != nil {
		return nil, fmt.Errorf("apply sandbox %q: %w", rv.Slug, err)
	} else if len(theirs) > 0 {
		if back, _, _, err := r.Git.ApplyCheck(ctx, patch, true); err == nil && back {
			res.Already = true
			return res, nil
		}
		return nil, untrackedError("apply", rv.Slug, theirs)
	}
	ok, bad, msg, err := r.Git.ApplyCheck(ctx, patch, false)
	if err != nil {
		return nil, fmt.Errorf("apply sandbox %q: %w", rv.Slug, err)
	}
	if !ok {
		if back, _, _, err := r.Git.ApplyCheck(ctx, patch, true); err == nil && back {
			res.Already = true
			return res, nil
		}
		files := bulletsOf(bad, termtext.Escape) // git's text: quoted as git quotes
		if len(bad) == 0 {
			files = "  " + strings.ReplaceAll(msg, "\n", "\n  ")
		}
		return nil, core.NewError(api.ErrConflict, "Cannot apply sandbox '%s': its changes do not apply to your working tree, which differs from the sandbox's base %s in:\n%s\nMerge it instead with `litterbox merge %s` (a three-way merge that refuses conflicts before changing anything), or with git: `git merge %s%s`. Nothing was changed.",
			rv.Slug, core.Short(rv.Base), files, rv.Slug, api.BranchPrefix, rv.Slug)
	}
	// The journal names each path with its content before and after, so a
	// kill while git writes the files is rolled back by the next merge,
	// apply or list. The after side comes from applying the patch to a
	// private index.
	t := &worktreeTxn{Op: "apply", Sandbox: rv.Slug, Started: time.Now().UTC()}
	if changes, err := r.Git.ApplyPreview(ctx, patch); err == nil {
		t.Paths = txnPaths(changes, true)
	} else {
		rw.Log.Debug("no preview of the apply; a rollback keeps a copy of every file it undoes", "err", err)
		for _, p := range paths {
			t.Paths = append(t.Paths, txnPath{Path: []byte(p)})
		}
		if err := rw.fillOld(ctx, r, t); err != nil {
			return nil, fmt.Errorf("apply sandbox %q (nothing was changed): %w", rv.Slug, err)
		}
	}
	if err := rw.fillDisk(ctx, r, t, true); err != nil {
		return nil, fmt.Errorf("apply sandbox %q (nothing was changed): %w", rv.Slug, err)
	}
	if err := writeTxn(r, t); err != nil {
		return nil, fmt.Errorf("apply sandbox %q (nothing was changed): %w", rv.Slug, err)
	}
	if err := r.Git.Apply(ctx, patch); err != nil {
		return nil, rw.undoWrite(ctx, r, t, fmt.Errorf("apply sandbox %q: %w", rv.Slug, err))
	}
	if err := removeTxn(r); err != nil {
		rw.Log.Warn("could not remove the apply's journal", "err", err)
	}
	return res, nil
}

// writeFrom readies an apply or merge (verb) of sandbox name into r's
// working tree: it checks at (see checkAt), takes the working tree's
// merge/apply lock, waiting for another merge or apply to end, first
// finishes one that was cut short, and resolves the sandbox's branch and
// base, refusing with ErrMoved when at is set and the branch is not there.
func (rw *Reviewer) writeFrom(ctx context.Context, r *api.Repo, name, verb, at string) (*inventory.Branch, func(), error) {
	if err := checkAt(verb, at); err != nil {
		return nil, nil, err
	}
	unlock, _, err := lockWorktree(ctx, r, true)
	if err != nil {
		return nil, nil, err
	}
	if err := rw.recoverLocked(ctx, r); err != nil {
		unlock()
		return nil, nil, err
	}
	rv, err := rw.inv.ResolveBranch(ctx, r, name)
	if err == nil && at != "" {
		err = rw.pinned(ctx, r, verb, rv, at)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return rv, unlock, nil
}

// checkAt refuses an --at that is not a commit id: a name (litterbox/NAME,
// HEAD) moves, so it would pin nothing.
func checkAt(verb, at string) error {
	if at == "" {
		return nil
	}
	if len(at) < 7 || len(at) > 64 || strings.Trim(at, "0123456789abcdef") != "" {
		return core.NewError(api.ErrBadArgument, "Cannot %s at %q: --at takes the commit id a review showed (`litterbox diff NAME` prints it: 7 to 64 hex digits), not a name, which could move. Nothing was changed.", verb, at)
	}
	return nil
}

// pinned checks that the branch rv is at the commit at names, and refuses
// with ErrMoved, saying how it moved, when it is not.
func (rw *Reviewer) pinned(ctx context.Context, r *api.Repo, verb string, rv *inventory.Branch, at string) error {
	id, ok, err := r.Git.ResolveRef(ctx, at)
	if err != nil {
		return fmt.Errorf("%s sandbox %q at %s: %w", verb, rv.Slug, at, err)
	}
	if !ok || !strings.HasPrefix(id, at) {
		return core.NewError(api.ErrBadArgument, "Cannot %s sandbox '%s' at %s: no commit here has the id %s. `litterbox diff %s` prints the commit it shows. Nothing was changed.", verb, rv.Slug, at, at, rv.Slug)
	}
	if id == rv.Tip {
		return nil
	}
	return rw.moved(ctx, r, verb, rv.Slug, at, id, rv.Tip, "since that commit was reviewed")
}

// moved is the refusal of an apply or merge of commit id (at, as given)
// when the branch is at tip ("" when gone); when says when it moved.
func (rw *Reviewer) moved(ctx context.Context, r *api.Repo, verb, slug, at, id, tip, when string) error {
	if tip == "" {
		return core.NewError(api.ErrMoved, "Cannot %s sandbox '%s' at %s: its branch %s%s was deleted %s. Nothing was changed.", verb, slug, at, api.BranchPrefix, slug, when)
	}
	how := "it does not hold that commit (a milestone or rewind rewrote it, or the id is of another branch)"
	if ok, err := r.Git.IsAncestor(ctx, id, tip); err == nil && ok {
		if n, err := r.Git.CountCommits(ctx, id, tip); err == nil {
			how = fmt.Sprintf("%d commit(s) were added since", n)
		}
	}
	return core.NewError(api.ErrMoved, "Cannot %s sandbox '%s' at %s: its branch %s%s moved %s: it is now at %s, and %s. Nothing was changed.\nRead what it holds now with `litterbox diff %s`, then %s exactly that with `litterbox %s %s --at %s`.",
		verb, slug, at, api.BranchPrefix, slug, when, core.Short(tip), how, slug, verb, verb, slug, core.Short(tip))
}

// undoWrite rolls back a merge or apply whose write step failed, and returns
// cause with what became of the working tree.
func (rw *Reviewer) undoWrite(ctx context.Context, r *api.Repo, t *worktreeTxn, cause error) error {
	ctx = context.WithoutCancel(ctx)
	rescued, err := rw.rollback(ctx, r, t, t.Started)
	if err != nil {
		return fmt.Errorf("%w\nrolling it back failed too (%v); `litterbox list` retries the rollback (journal %s)", cause, err, txnFile(r))
	}
	if err := removeTxn(r); err != nil {
		rw.Log.Warn("could not remove the journal", "err", err)
	}
	if len(rescued) > 0 {
		return fmt.Errorf("%w\nIt was rolled back.%s", cause, rescued.text())
	}
	return fmt.Errorf("%w\nIt was rolled back: nothing was changed", cause)
}

// fillOld sets the before side of t's paths to their HEAD entries, which is
// what a working tree whose files are clean holds.
func (rw *Reviewer) fillOld(ctx context.Context, r *api.Repo, t *worktreeTxn) error {
	paths := make([]string, len(t.Paths))
	for i, p := range t.Paths {
		paths[i] = string(p.Path)
	}
	idx, err := r.Git.IndexEntries(ctx, paths)
	if err != nil {
		return err
	}
	for i := range t.Paths {
		t.Paths[i].Old = idx[paths[i]]
	}
	return nil
}

// Merge merges a sandbox's branch into the current branch, then deletes the
// sandbox. A branch whose commits are all in HEAD already (an empty sandbox
// too) has nothing to merge; the sandbox is deleted all the same, since
// nothing of it would be lost.
//
// Before it writes anything it refuses, with ErrConflict, on a detached HEAD,
// when the merge would conflict (git merge-tree), when it changes the user's
// local settings (config.LocalFile), and when a file the merge changes has
// uncommitted changes or a file git does not track, ignored or not, is in
// the way. It
// fast-forwards when it can; otherwise it makes the merge commit with
// commit-tree, so no hooks run and a signing failure cannot stop it (it falls
// back to an unsigned commit and says so). Then, with a journal written first
// (see txn.go), read-tree -m -u moves the working tree and index and
// update-ref moves the branch, compare-and-swap; if either fails, or the
// process is killed between them, the working tree and index are rolled back.
// merge.ff from the user's config is honoured: false always makes a merge
// commit, only refuses what cannot be fast-forwarded.
//
// It merges the commit the branch was at when it looked (res.Tip), never
// a later one: at, when set, is the commit a review showed, and Merge
// refuses with ErrMoved unless the branch is there; and the move of HEAD
// is one git transaction with a check that the branch is still there, so
// a snapshot landing during the merge makes it refuse (rolled back) too.
func (rw *Reviewer) Merge(ctx context.Context, r *api.Repo, name, at string) (*api.MergeResult, error) {
	if res, ok, err := rw.finishMerged(ctx, r, name); ok {
		return res, err
	}
	rv, unlock, err := rw.writeFrom(ctx, r, name, "merge", at)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ref, attached, err := r.Git.CurrentBranch(ctx)
	if err != nil {
		return nil, err
	}
	if !attached {
		return nil, core.NewError(api.ErrConflict, "Cannot merge sandbox '%s': HEAD is detached, so there is no branch to merge into. Switch to one (`git switch BRANCH`) and run `litterbox merge %s` again. Nothing was changed.", rv.Slug, rv.Slug)
	}
	if ref == api.BranchRef(rv.Slug) {
		return nil, core.NewError(api.ErrConflict, "Cannot merge sandbox '%s' into its own branch: switch to the branch to merge into and run `litterbox merge %s` again. Nothing was changed.", rv.Slug, rv.Slug)
	}
	into := strings.TrimPrefix(ref, "refs/heads/")
	head, err := r.Git.Head(ctx)
	if err != nil {
		return nil, err
	}
	res := &api.MergeResult{Name: rv.Slug, Into: into, From: head, Commit: head, Tip: rv.Tip, Files: []string{}}

	merged, err := r.Git.IsAncestor(ctx, rv.Tip, head)
	if err != nil {
		return nil, err
	}
	if merged {
		res.NothingToMerge = true
		return rw.deleteMerged(ctx, r, res)
	}

	ff, err := r.Git.IsAncestor(ctx, head, rv.Tip)
	if err != nil {
		return nil, err
	}
	switch r.Git.MergeFF(ctx) {
	case "false":
		ff = false // merge.ff=false: the user wants a merge commit every time
	case "only":
		if !ff {
			return nil, core.NewError(api.ErrConflict, "Cannot merge sandbox '%s' into %s: merge.ff=only is set and %s has moved on since the sandbox started, so it cannot be fast-forwarded. Rebase the branch with git (`git rebase %s %s%s`), or merge it with `git merge --no-ff %s%s`. Nothing was changed.",
				rv.Slug, into, into, into, api.BranchPrefix, rv.Slug, api.BranchPrefix, rv.Slug)
		}
	}
	target := rv.Tip // the tree the working tree moves to
	if !ff {
		tree, conflicts, err := r.Git.MergeTree(ctx, head, rv.Tip)
		if err != nil {
			return nil, fmt.Errorf("merge sandbox %q: %w", rv.Slug, err)
		}
		if len(conflicts) > 0 {
			return nil, core.NewError(api.ErrConflict, "Cannot merge sandbox '%s' into %s: both changed the same lines in:\n%s\nResolve it with git: `git merge %s%s`, fix the conflicts and commit, then `litterbox delete %s`. Nothing was changed.",
				rv.Slug, into, bullets(conflicts), api.BranchPrefix, rv.Slug, rv.Slug)
		}
		target = tree
	}
	var dirty []string
	var dErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); dirty, dErr = r.Git.Dirty(ctx) }()
	changes, err := r.Git.RawDiff(ctx, head, target)
	for _, c := range changes {
		res.Files = append(res.Files, c.Path)
	}
	wg.Wait()
	if err == nil {
		err = dErr
	}
	if err != nil {
		return nil, fmt.Errorf("merge sandbox %q: %w", rv.Slug, err)
	}
	if err := refuseLocalSettings("merge", rv.Slug, res.Files); err != nil {
		return nil, err
	}
	res.ConfigFiles = configFiles(res.Files)
	if overlap := intersect(res.Files, dirty); len(overlap) > 0 {
		return nil, inTheWay("merge", rv.Slug, overlap)
	}
	// read-tree -u overwrites ignored files without a word (git counts them
	// expendable): a .env or a virtualenv of the user's must stop the merge.
	if theirs, err := rw.untrackedInTheWay(ctx, r, changes); err != nil {
		return nil, fmt.Errorf("merge sandbox %q: %w", rv.Slug, err)
	} else if len(theirs) > 0 {
		return nil, untrackedError("merge", rv.Slug, theirs)
	}

	// The journal goes first: the working tree and index move, then the
	// branch, and a kill between those steps (or during the first) is
	// rolled back, or recognised as done, by the next merge, apply or list.
	t := &worktreeTxn{Op: "merge", Sandbox: rv.Slug, Ref: ref, From: head, Index: true,
		Started: time.Now().UTC(), Paths: txnPaths(changes, true)}
	if err := rw.fillDisk(ctx, r, t, false); err != nil {
		return nil, fmt.Errorf("merge sandbox %q (nothing was changed): %w", rv.Slug, err)
	}
	if hidden := t.hidden(); len(hidden) > 0 {
		return nil, core.NewError(api.ErrConflict, "Cannot merge sandbox '%s': it changes files whose content in your working tree differs from what git has, although git status shows nothing (they are marked --skip-worktree or --assume-unchanged, see `git ls-files -v`):\n%s\nThe merge would write over that content. Keep a copy of each, clear its mark (`git update-index --no-skip-worktree FILE` for an S in `git ls-files -v`, `git update-index --no-assume-unchanged FILE` for a lowercase letter), commit or stash the change, and run `litterbox merge %s` again. Nothing was changed.",
			rv.Slug, bullets(hidden), rv.Slug)
	}
	commit := rv.Tip
	res.FastForward = ff
	if !ff {
		if commit, err = rw.mergeCommit(ctx, r, res, target, head, rv.Tip); err != nil {
			return nil, err
		}
	}
	t.To = commit
	if err := writeTxn(r, t); err != nil {
		return nil, fmt.Errorf("merge sandbox %q (nothing was changed): %w", rv.Slug, err)
	}
	if err := r.Git.CheckoutTree(ctx, head, commit); err != nil {
		cause := core.NewError(api.ErrConflict, "Cannot merge sandbox '%s': git refused to update the working tree:\n  %s\nCommit or stash your changes and run `litterbox merge %s` again.",
			rv.Slug, strings.ReplaceAll(core.ErrText(err), "\n", "\n  "), rv.Slug)
		return nil, rw.undoWrite(ctx, r, t, cause)
	}
	msg := "litterbox merge " + rv.Slug + ": "
	if ff {
		msg += "fast-forward"
	} else {
		msg += "merge " + api.BranchPrefix + rv.Slug
	}
	if err := r.Git.UpdateRefIf(ctx, "HEAD", commit, head, api.BranchRef(rv.Slug), rv.Tip, msg); err != nil {
		// HEAD or the sandbox's branch moved under us: put the working
		// tree back where it was.
		cause := core.NewError(api.ErrConflict, "Cannot merge sandbox '%s': %s moved while merging (%s); run `litterbox merge %s` again.", rv.Slug, into, core.ErrText(err), rv.Slug)
		if now, ok, rerr := r.Git.ResolveRef(ctx, api.BranchRef(rv.Slug)); rerr == nil && (!ok || now != rv.Tip) {
			cause = rw.moved(ctx, r, "merge", rv.Slug, core.Short(rv.Tip), rv.Tip, now, "while merging")
		}
		return nil, rw.undoWrite(ctx, r, t, cause)
	}
	if err := removeTxn(r); err != nil {
		rw.Log.Warn("could not remove the merge's journal", "err", err)
	}
	res.Commit = commit
	res.Unnormalized = rw.unnormalized(ctx, r, changes)
	return rw.deleteMerged(ctx, r, res)
}

// mergeCommit makes the two-parent merge commit of tree. It honours
// commit.gpgSign, but when signing fails (no key, no agent) it makes the
// commit unsigned instead and says so in res: the merge is the user's
// request and nothing has been written yet that signing could protect.
func (rw *Reviewer) mergeCommit(ctx context.Context, r *api.Repo, res *api.MergeResult, tree, head, tip string) (string, error) {
	msg := fmt.Sprintf("Merge branch '%s%s'", api.BranchPrefix, res.Name)
	if r.Git.SignsCommits(ctx) {
		id, err := r.Git.CommitMerge(ctx, tree, msg, true, head, tip)
		if err == nil {
			return id, nil
		}
		res.Unsigned, res.SignFailure = true, strings.TrimSpace(core.ErrText(err))
		rw.Log.Debug("signed merge commit failed; making it unsigned", "err", err)
	}
	id, err := r.Git.CommitMerge(ctx, tree, msg, false, head, tip)
	if err != nil {
		return "", fmt.Errorf("merge sandbox %q: make the merge commit (nothing was changed): %w", res.Name, err)
	}
	return id, nil
}

// deleteMerged deletes a sandbox whose branch is now in HEAD. Delete checks
// again that no commit would be lost, so a snapshot that landed during the
// merge keeps the sandbox.
// finishMerged finishes the delete of a merge cut short once the branch was
// gone (list shows the sandbox leftover): the merge was done, and what is
// left is removed as `delete` would. ok is false for any other sandbox.
func (rw *Reviewer) finishMerged(ctx context.Context, r *api.Repo, name string) (*api.MergeResult, bool, error) {
	slug, err := api.Slugify(name)
	if err != nil || !slices.Contains(state.CutShort(r.Git.CommonDir), slug) {
		return nil, false, nil
	}
	if _, ok, err := r.Git.ResolveRef(ctx, api.BranchRef(slug)); err != nil || ok {
		return nil, false, nil
	}
	ref, _, err := r.Git.CurrentBranch(ctx)
	if err != nil {
		return nil, true, err
	}
	res := &api.MergeResult{Name: slug, Into: strings.TrimPrefix(ref, "refs/heads/"), NothingToMerge: true, Files: []string{}}
	res, err = rw.deleteMerged(ctx, r, res)
	return res, true, err
}

func (rw *Reviewer) deleteMerged(ctx context.Context, r *api.Repo, res *api.MergeResult) (*api.MergeResult, error) {
	rep, err := rw.inv.Delete(ctx, r, res.Name, false, nil)
	res.Deleted = rep
	if err != nil {
		what := "merged into " + res.Into
		if res.NothingToMerge {
			what = "had nothing to merge"
		}
		return res, fmt.Errorf("sandbox '%s' %s, but was not deleted: %w", res.Name, what, err)
	}
	return res, nil
}

// inTheWay refuses an apply or merge whose files have local changes.
func inTheWay(verb, slug string, paths []string) error {
	return core.NewError(api.ErrConflict, "Cannot %s sandbox '%s': it changes files that have uncommitted changes, or are untracked, in your working tree:\n%s\nCommit or stash them (`git stash --include-untracked`), then run `litterbox %s %s` again. Nothing was changed.",
		verb, slug, bullets(paths), verb, slug)
}

// changedNames lists the paths of changes.
func changedNames(changes []git.RawChange) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

// configFiles picks, from changed paths, the files that steer git or
// litterbox once landed (see ConfigRole). The agent may have written any of
// them; review names them so a human reads them.
func configFiles(paths []string) []string {
	var out []string
	for _, p := range paths {
		if ConfigRole(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// ConfigRole says what the file at path p decides, when it is one that
// steers git or litterbox: what git ignores (.gitignore), how it converts
// and diffs files (.gitattributes), where submodules come from
// (.gitmodules), how sandboxes are made (config.File) and what agents may do
// (config.LocalFile, which apply and merge refuse). "" for any other file.
func ConfigRole(p string) string {
	switch {
	case config.IsFile(p):
		return "how sandboxes are made"
	case config.IsLocalFile(p):
		return "your local settings: what agents may do"
	}
	switch path.Base(p) {
	case ".gitignore":
		return "what git ignores"
	case ".gitattributes":
		return "how git converts, diffs and merges files"
	case ".gitmodules":
		return "where submodules are fetched from"
	}
	return ""
}

// refuseLocalSettings refuses an apply or merge that would add, change or
// remove the user's local settings: they decide what agents may do
// (agent_images, allow_unisolated), so they come only from a file the user
// wrote, never from a sandbox's branch.
//
// A name that is the same file on a case- or normalisation-insensitive
// file system (.LITTERBOX.LOCAL.TOML: macOS's default) is refused as well:
// merged there, it would be read as the user's file.
func refuseLocalSettings(verb, slug string, paths []string) error {
	var found []string
	for _, p := range paths {
		if config.IsLocalFile(p) {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return nil
	}
	first := termtext.Quote(found[0])
	return core.NewError(api.ErrConflict, "Cannot %s sandbox '%s': its branch changes your local settings (%s, or a file that is %s on a case-insensitive file system):\n%s\nOnly you write that file: it decides what agents may do (agent_images, allow_unisolated), so litterbox never takes it from a sandbox, and never reads one git tracks. Nothing was changed.\nRead it with `git show %s%s:%s` and copy what you want into your own by hand. To %s the rest, delete it in the sandbox (`litterbox exec %s -- rm -f %s`, then `litterbox snapshot %s`) and run `litterbox %s %s` again.",
		verb, slug, config.LocalFile, config.LocalFile, bullets(found), api.BranchPrefix, slug, first, verb, slug, first, slug, verb, slug)
}

// untrackedInTheWay lists where the changes would write over what git does
// not track (ignored files above all: status does not list them, and
// read-tree -u overwrites them): for each path they add, the path itself
// when anything is there, or a parent that is a file or a symlink (git
// would replace it with a directory). Paths in the index are left to the
// other checks (a staged file is dirty; a committed one makes the patch
// fail). Its cost follows the number of added paths.
func (rw *Reviewer) untrackedInTheWay(ctx context.Context, r *api.Repo, changes []git.RawChange) ([]string, error) {
	removed := map[string]bool{}
	for _, c := range changes {
		if c.Old.Present() && !c.New.Present() {
			removed[c.Path] = true
		}
	}
	var found []string
	seen := map[string]bool{}
	for _, c := range changes {
		if c.Old.Present() || !c.New.Present() {
			continue
		}
		hit, err := obstacle(r.Root(), c.Path, removed)
		if err != nil {
			return nil, err
		}
		if hit != "" && !seen[hit] {
			seen[hit] = true
			found = append(found, hit)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	idx, err := r.Git.IndexEntries(ctx, found)
	if err != nil {
		return nil, err
	}
	var theirs []string
	for _, p := range found {
		if _, tracked := idx[p]; !tracked {
			theirs = append(theirs, p)
		}
	}
	return theirs, nil
}

// obstacle is what stands in the working tree at root where p is to be
// created: p itself (a directory only when it holds more than the tracked
// files the change removes), or the first of its parents that is not a
// directory; "" when nothing does. Parents the change removes (tracked
// files) are not obstacles.
func obstacle(root, p string, removed map[string]bool) (string, error) {
	parts := strings.Split(p, "/")
	for i := 1; i <= len(parts); i++ {
		q := strings.Join(parts[:i], "/")
		st, err := os.Lstat(filepath.Join(root, q))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			return "", nil // nothing here, so nothing below
		case err != nil:
			return "", err
		case i == len(parts) && st.IsDir():
			// A directory where a file comes: git removes what it tracks
			// there, and anything else in it (ignored files) with it.
			if mine, err := holdsUntracked(root, q, removed); err != nil || mine {
				return q, err
			}
			return "", nil
		case i == len(parts):
			return q, nil
		case removed[q]:
			return "", nil // a tracked file the change replaces with a directory
		case !st.IsDir():
			return q, nil
		}
	}
	return "", nil
}

// holdsUntracked reports whether the directory dir (relative to root)
// holds a file or symlink that is not one of the tracked paths the change
// removes. Empty directories do not count: git removes them.
func holdsUntracked(root, dir string, removed map[string]bool) (bool, error) {
	found := errors.New("found")
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if !removed[filepath.ToSlash(rel)] {
			return found
		}
		return nil
	})
	if err == found {
		return true, nil
	}
	return false, err
}

// untrackedError refuses an apply or merge that would overwrite files of the
// user's that git does not track.
func untrackedError(verb, slug string, paths []string) error {
	return core.NewError(api.ErrConflict, "Cannot %s sandbox '%s': it adds files where your working tree has files of your own that git ignores or does not track (a .env, a virtualenv, build output...), which it would overwrite:\n%s\nNothing was changed. Review the sandbox's files with `litterbox diff %s`; to take them, move yours aside first (`mv FILE FILE.mine`), then run `litterbox %s %s` again.",
		verb, slug, bullets(paths), slug, verb, slug)
}

// unnormalized lists the files the merge wrote that git would store
// otherwise than the merged commit holds them: `git add` of each (with the
// working tree's .gitattributes: eol, text, filters) gives another blob, so
// git status shows it modified. A snapshot records /src's bytes as they are,
// so a file the agent wrote with CRLF endings where .gitattributes says
// `text eol=crlf` is one. It is a warning, so a failure to tell is only
// logged.
func (rw *Reviewer) unnormalized(ctx context.Context, r *api.Repo, changes []git.RawChange) []string {
	var files, ids []string
	for _, c := range changes {
		if c.New.Mode == "100644" || c.New.Mode == "100755" {
			files, ids = append(files, c.Path), append(ids, c.New.ID)
		}
	}
	if len(files) == 0 {
		return nil
	}
	got, err := r.Git.HashFiles(ctx, files)
	if err != nil {
		rw.Log.Debug("could not check the merged files' line endings", "err", err)
		return nil
	}
	var out []string
	for i, p := range files {
		if got[i] != ids[i] {
			out = append(out, p)
		}
	}
	return out
}

// intersect returns the paths of a that are in b, in a's order.
func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, p := range b {
		in[p] = true
	}
	var out []string
	for _, p := range a {
		if in[p] {
			out = append(out, p)
		}
	}
	return out
}

// bullets lists paths one per line, indented, at most 20 of them, quoted
// as git quotes names: they are an agent's, and reach a terminal.
func bullets(paths []string) string { return bulletsOf(paths, termtext.Quote) }

// bulletsOf lists lines as bullets does, each shown by show.
func bulletsOf(lines []string, show func(string) string) string {
	const max = 20
	var b strings.Builder
	for i, l := range lines {
		if i == max {
			fmt.Fprintf(&b, "  … and %d more\n", len(lines)-max)
			break
		}
		b.WriteString("  " + show(l) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
