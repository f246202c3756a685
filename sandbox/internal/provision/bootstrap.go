package provision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
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
	if err != nil {
		return c.refused(err)
	}
	c.bootstrap = files
	c.bootstrapped = guest.Paths(files)
	var short []string
	if c.dotenv, short, err = guest.DotenvSecrets(c.r.Root(), c.cfg.Dotenv, files); err != nil {
		return c.refused(err)
	}
	if len(short) > 0 {
		c.pv.Log.Warn("values of the dotenv files copied in are copied as they are: too short to be secrets (under 8 bytes), though dotenv = \"placeholders\"; mark the keys that hold secrets in dotenv_secrets", "sandbox", c.slug, "keys", strings.Join(short, ","))
	}
	return nil
}

// refused is err, the bootstrap refused, as create says it.
func (c *creation) refused(err error) error {
	var e *api.Error
	if errors.As(err, &e) {
		what := fmt.Sprintf("Cannot create sandbox '%s': ", c.slug)
		return &api.Error{Kind: e.Kind, Msg: what + e.Msg, Agent: what + cmp.Or(e.Agent, e.Msg)}
	}
	return fmt.Errorf("create sandbox %q: %w", c.slug, err)
}

// placehold puts the placeholders of the marked values of the dotenv files
// in the sandbox's copies of them, once the secrets are bound: their
// values never enter the sandbox.
func (c *creation) placehold() error {
	if len(c.dotenv) == 0 {
		return nil
	}
	var err error
	c.bootstrap, err = guest.Placehold(c.r.Root(), c.bootstrap, netgate.Bindings(c.secrets.bound))
	if err != nil {
		return c.refused(err)
	}
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
