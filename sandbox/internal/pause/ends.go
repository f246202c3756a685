package pause

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// On an engine whose pause ends the sandbox (provider.PauseEnder: a
// Kubernetes pod cannot be frozen, so pause deletes it and resume makes a
// new one), pause first snapshots /src to the branch, and resume copies the
// branch back into the new sandbox's /src, with its services' definitions.
// What the branch does not hold is gone across a pause there: the
// processes, /tmp, and files the repository ignores. Files of /src no
// snapshot can record would be gone too, so such a pause is refused unless
// forced (snapshotBeforePause).

// pauseEnds reports whether pausing on s's engine ends the sandbox.
func (ps *Pauser) pauseEnds() bool {
	pe, ok := ps.Provider.(provider.PauseEnder)
	return ok && pe.PauseEnds()
}

// ownerRepo is the repository of c: r, or, when r is nil (every
// repository), the one at c's repo label, provided it owns c.
func (ps *Pauser) ownerRepo(ctx context.Context, r *api.Repo, c provider.Sandbox) (*api.Repo, error) {
	if r != nil {
		return r, nil
	}
	r, err := core.OpenRepo(ctx, ps.Runner, c.Labels[api.LabelRepo])
	if err != nil || !r.Owns(c.Labels) {
		return nil, fmt.Errorf("sandbox %q: its repository %s is not where its labels say (%v): pause or resume it from its repository", c.Labels[api.LabelSlug], c.Labels[api.LabelRepo], err)
	}
	return r, nil
}

// snapshotBeforePause commits what changed in c's /src to its branch, before
// its pause ends it, and says what the branch still lacks (lost). Unless
// force, a pause that would lose any of it is refused (ErrWouldLose),
// naming it; nothing is paused then.
func (ps *Pauser) snapshotBeforePause(ctx context.Context, r *api.Repo, c provider.Sandbox, force bool) (lost []api.Skipped, err error) {
	all := r == nil
	r, err = ps.ownerRepo(ctx, r, c)
	if err != nil {
		return nil, err
	}
	h := core.HandleOf(r, c)
	if lost, err = ps.rec.Lost(ctx, h, "pause: the work so far (the engine ends the sandbox while paused)"); err != nil {
		return nil, err
	}
	if len(lost) == 0 || force {
		return lost, nil
	}
	return nil, wouldLoseError(h, lost, all)
}

// maxNamedLost bounds the files a refused pause names.
const maxNamedLost = 20

// wouldLoseError says which files a pause of h would lose, and what to do.
// all: the pause was one of --all or --all-repos.
func wouldLoseError(h *api.Handle, lost []api.Skipped, all bool) error {
	var b strings.Builder
	lb := "litterbox"
	if all {
		lb += " --repo " + runner.Quote(h.Repo.Git.Root)
	}
	slices.SortFunc(lost, func(a, b api.Skipped) int { return strings.Compare(a.Path, b.Path) })
	folders := 0
	for _, l := range lost {
		if strings.HasSuffix(l.Path, "/") {
			folders++
		}
	}
	what := plural(len(lost)-folders, "file")
	switch {
	case folders > 0 && folders == len(lost):
		what = plural(folders, "folder")
	case folders > 0:
		what += " and " + plural(folders, "folder")
	}
	fmt.Fprintf(&b, "Pausing %s would lose %s its branch %s%s does not hold: on this engine a pause ends the sandbox, and resume fills /src from the branch. It was not paused (what could be recorded is committed).\n", h.Slug, what, api.BranchPrefix, h.Slug)
	b.WriteString(lostList(lost))
	fmt.Fprintf(&b, "To keep them, make them recordable and pause again: shrink, split or remove files over the size cap (or raise LITTERBOX_SNAPSHOT_MAX_FILE_SIZE), or copy them out first (`%s cp %s:PATH DIR`); make files readable (chmod u+r) and folders readable and searchable (chmod u+rx); rename names git refuses. To pause anyway, losing them: `%s pause --force %s`.", lb, h.Slug, lb, h.Slug)
	return core.NewError(api.ErrWouldLose, "%s", b.String())
}

// lostList is lost as indented lines, names quoted as git quotes them, at
// most maxNamedLost of them.
func lostList(lost []api.Skipped) string {
	var b strings.Builder
	for i, l := range lost {
		if i == maxNamedLost {
			fmt.Fprintf(&b, "  ... and %d more\n", len(lost)-i)
			break
		}
		fmt.Fprintf(&b, "  %s: %s\n", termtext.Quote(l.Path), termtext.Escape(l.Reason))
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// refillAfterResume copies c's branch into the /src of its new sandbox,
// writes its gateway's CA there (when it holds secrets), records the scan
// stamp, and installs its services' definitions again.
func (ps *Pauser) refillAfterResume(ctx context.Context, r *api.Repo, c provider.Sandbox) error {
	r, err := ps.ownerRepo(ctx, r, c)
	if err != nil {
		return err
	}
	h := core.HandleOf(r, c)
	tip, ok, err := r.Git.ResolveRef(ctx, api.BranchRef(h.Slug))
	if err != nil || !ok {
		return fmt.Errorf("resume: read branch %s%s (%v): the sandbox runs with an empty %s; delete it and create it again from the branch", api.BranchPrefix, h.Slug, err, api.Workdir)
	}
	// The gateway kept its secrets and CA: the new sandbox trusts it
	// again, beside the copy.
	trust := make(chan error, 1)
	go func() { trust <- ps.gate.Retrust(ctx, r.Git.CommonDir, h.Slug, c.Ref) }()
	var so, se bytes.Buffer
	err = ps.guest.CopyAndSetup(ctx, ps.branchArchive(ctx, r, h.Slug, tip), c.Ref, h.Image, nil, &so, &se)
	terr := <-trust
	if err != nil {
		return fmt.Errorf("resume: copy branch %s%s into %s: %w", api.BranchPrefix, h.Slug, api.Workdir, err)
	}
	if terr != nil {
		return fmt.Errorf("resume: %w", terr)
	}
	if err := state.WriteSince(r, h.Slug, guest.TakeStamp(&so)); err != nil {
		ps.Log.Warn("could not record the scan stamp; the next snapshot will scan all of /src", "err", err)
	}
	if _, err := ps.services.InstallSaved(ctx, h); err != nil {
		ps.Log.Warn("could not install the services again", "sandbox", h.Slug, "err", err)
	}
	return nil
}

// branchArchive is the copy of sandbox slug's branch tip for a container
// whose /src is gone, with its bootstrap read again from the working tree
// (guest/bootstrap.go): one that cannot be read is left out, with a warning.
func (ps *Pauser) branchArchive(ctx context.Context, r *api.Repo, slug, tip string) *guest.Archive {
	bs, _, err := netgate.ReadSecrets(r.Git.CommonDir, slug)
	var extra []git.ArchiveFile
	if err == nil {
		extra, err = guest.Rebootstrap(r, slug, netgate.Bindings(bs))
	}
	if err != nil {
		ps.Log.Warn("the files copied in at create from your working tree are not copied in again", "sandbox", slug, "err", err)
	}
	return guest.StartArchive(ctx, r, tip, extra)
}
