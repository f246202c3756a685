package inventory

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// Branch is a sandbox's branch with the commit its work started from.
type Branch struct {
	Slug string
	Tip  string // branch tip
	Base string // where the sandbox's changes start
}

// ResolveBranch resolves a sandbox's branch and base. The base is the commit the
// container was made from (its base label) while the container exists and
// that commit is still an ancestor of the branch; otherwise the merge base of
// HEAD and the branch, which is the same commit until the user merges.
func (inv *Inventory) ResolveBranch(ctx context.Context, r *api.Repo, name string) (*Branch, error) {
	f, err := inv.Lookup(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if f.BranchID == "" {
		return nil, core.NewError(api.ErrNotFound, "Sandbox '%s' has no branch %s%s, so no work of it was recorded. Delete its container with `litterbox delete %s`.", f.Slug, api.BranchPrefix, f.Slug, f.Slug)
	}
	rv := &Branch{Slug: f.Slug, Tip: f.BranchID}
	if f.Container != nil {
		if b := f.Container.Labels[api.LabelBase]; b != "" {
			if ok, err := r.Git.IsAncestor(ctx, b, rv.Tip); err == nil && ok {
				rv.Base = b
				return rv, nil
			}
		}
	}
	base, ok, err := r.Git.CommonAncestor(ctx, "HEAD", rv.Tip)
	if err != nil {
		return nil, fmt.Errorf("find the base of %s%s: %w", api.BranchPrefix, f.Slug, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s%s shares no history with HEAD, so its changes cannot be told apart", api.BranchPrefix, f.Slug)
	}
	rv.Base = base
	return rv, nil
}
