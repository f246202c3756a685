package recording

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Lost commits what changed in h's /src to its branch, before the engine
// ends the sandbox (a pause on Kubernetes), and says what the branch still
// lacks: files no snapshot can record (over the size cap, unreadable, in a
// folder that cannot be read, a name git refuses), and files that kept
// changing while they were recorded. message is the snapshot's.
func (rec *Recorder) Lost(ctx context.Context, h *api.Handle, message string) (lost []api.Skipped, err error) {
	var res *api.SnapshotResult
	// A file written during the snapshot is not recorded from that read;
	// the next snapshot would take it, so take it now.
	for try := 0; try < 3; try++ {
		if res, err = rec.Snapshot(ctx, h, message); err != nil {
			return nil, fmt.Errorf("snapshot before pausing (nothing was paused): %w", err)
		}
		if len(res.Torn) == 0 && !res.Incomplete {
			break
		}
	}
	if lost, err = rec.unrecordable(ctx, h); err != nil {
		return nil, fmt.Errorf("look for what the pause would lose (nothing was paused): %w", err)
	}
	for _, p := range res.Torn {
		lost = append(lost, api.Skipped{Path: p, Reason: "it kept changing while it was recorded: stop what writes it"})
	}
	if res.Incomplete {
		lost = append(lost, api.Skipped{Path: ".", Reason: "files kept appearing while they were recorded: stop what writes them"})
	}
	return lost, nil
}

// unrecordable audits h's /src (wire.Options.Audit) for what its branch
// lacks and no snapshot can record: a file the audit names is lost unless
// the branch holds it as it is (a big file the user committed), or it is
// ignored and untracked (ignored files are not kept, by design).
func (rec *Recorder) unrecordable(ctx context.Context, h *api.Handle) ([]api.Skipped, error) {
	o := rec.scanOptions(ctx, h)
	o.Audit, o.Journal = true, false
	sc, err := rec.scan(ctx, h, o, nil)
	if err != nil {
		return nil, err
	}
	defer sc.release()
	lost := slices.Clone(sc.meta.Skipped)
	if len(sc.meta.Unrecordable) == 0 {
		return lost, nil
	}
	tip, ok, err := h.Repo.Git.ResolveRef(ctx, api.BranchRef(h.Slug))
	if err != nil || !ok {
		return nil, fmt.Errorf("read branch %s%s: %v", api.BranchPrefix, h.Slug, err)
	}
	var dirs []string
	for _, u := range sc.meta.Unrecordable {
		dirs = append(dirs, parentDir(u.Path))
	}
	slices.Sort(dirs)
	trees, err := h.Repo.Git.Trees(ctx, tip, slices.Compact(dirs))
	if err != nil {
		return nil, err
	}
	for _, u := range sc.meta.Unrecordable {
		te, ok := trees[parentDir(u.Path)][path.Base(u.Path)]
		tracked := ok && !te.IsTree() && te.Mode != "160000"
		if u.Ignored && !tracked || tracked && u.ID != "" && u.ID == te.ID && te.Mode != "120000" {
			continue
		}
		lost = append(lost, api.Skipped{Path: u.Path, Reason: u.Reason})
	}
	return lost, nil
}
