package provision

import (
	"context"
	"errors"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// The bootstrap: the ignored files of the user's working tree a new
// sandbox gets beside its commit (guest/bootstrap.go). What goes in is the
// user's to say, never an agent's: .worktreeinclude is read from the
// working tree and [bootstrap] include from the local file only (the
// committed file cannot set it), both read anew at each create, a fork's
// and a recreate's too. They come in once and never go back: the record
// of their paths (state.Bootstrapped) keeps every snapshot from recording
// them, so no branch, diff, apply or merge holds them.

// planBootstrap reads the files before anything is made: one past the
// bounds, behind a link out of the repository or with a name git refuses
// refuses the create here.
func (c *creation) planBootstrap(ctx context.Context) error {
	files, err := guest.Bootstrap(ctx, c.r, c.cfg.BootstrapInclude)
	var e *api.Error
	if errors.As(err, &e) {
		what := fmt.Sprintf("Cannot create sandbox '%s': ", c.slug)
		return &api.Error{Kind: e.Kind, Msg: what + e.Msg, Agent: what + e.Agent}
	}
	if err != nil {
		return fmt.Errorf("create sandbox %q: %w", c.slug, err)
	}
	c.bootstrap = files
	c.bootstrapped = guest.Paths(files)
	return nil
}

// recordBootstrap keeps the paths of the files copied in, for the
// snapshots that must never record them.
func (c *creation) recordBootstrap() error {
	if err := state.WriteBootstrap(c.r, c.slug, c.bootstrapped); err != nil {
		return fmt.Errorf("create sandbox %q: record the files copied in from your working tree in %s: %w", c.slug, c.r.StateDir(c.slug), err)
	}
	return nil
}
