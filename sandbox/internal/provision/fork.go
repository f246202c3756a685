package provision

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// Forks and rewinds work on a sandbox's branch, the record of its work.

// Fork creates the sandbox newName from the tip of name's branch, so two
// agents can try variations from one starting point. A running name is
// snapshotted first, so nothing it holds is missed. The fork point is the
// new sandbox's base: its diff and log show what it did after the fork,
// while a merge brings its whole branch, the fork point's history
// included (git then merges as usual: after name was merged, only what the
// fork added remains).
func (pv *Provisioner) Fork(ctx context.Context, r *api.Repo, name, newName string, opts api.CreateOptions) (*api.Forked, error) {
	newSlug, err := api.Slugify(newName)
	if err != nil {
		return nil, err
	}
	f, err := pv.inv.Lookup(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if f.BranchID == "" {
		return nil, core.NewError(api.ErrNotFound, "Sandbox '%s' has no branch %s%s, so there is nothing to fork.", f.Slug, api.BranchPrefix, f.Slug)
	}
	out := &api.Forked{From: f.Slug}
	if f.Container != nil && f.Container.State == provider.StateRunning && f.Ready {
		var err error
		if out.Snapshot, err = pv.rec.Snapshot(ctx, core.HandleOf(r, *f.Container), "snapshot: before fork into "+newSlug); err != nil {
			return nil, fmt.Errorf("snapshot %s before forking it (nothing was created): %w", f.Slug, err)
		}
	}
	tip, ok, err := r.Git.ResolveRef(ctx, api.BranchRef(f.Slug))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, core.NewError(api.ErrNotFound, "Sandbox '%s' lost its branch %s%s while it was being forked.", f.Slug, api.BranchPrefix, f.Slug)
	}
	// A fork never takes a warm pool's sandbox (docs/pool.md): one made
	// for HEAD would do when the tip is HEAD, and the MCP server's refill
	// follows sandbox-create only.
	opts.From, opts.NoPool, opts.ForkOf = tip, true, f.Slug
	c, err := pv.Create(ctx, r, newName, opts)
	if c != nil {
		out.Created = *c
		return out, err
	}
	return nil, err
}
