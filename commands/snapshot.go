package commands

import (
	"context"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Snapshot records what changed in a sandbox's /src as a commit on its
// branch, as the MCP tools do after each mutation.
type Snapshot struct {
	sandboxName
	Message string `short:"m" default:"snapshot" help:"Commit message."`
}

// Run takes the snapshot.
func (c *Snapshot) Run(ctx context.Context, env *Env) error {
	h, err := env.Handle(ctx, c.Name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Snapshot(ctx, h, c.Message)
	if err != nil {
		return err
	}
	saySkipped(env, res.Skipped)
	if res.Committed {
		env.outf("Committed %s on %s%s\n", res.Commit, api.BranchPrefix, h.Slug)
	} else {
		env.outf("No changes\n")
	}
	return nil
}

// saySkipped names the files a snapshot left out, and why, on stderr.
func saySkipped(env *Env, skipped []api.Skipped) {
	for _, sk := range skipped {
		env.errf("skipped %s: %s\n", termtext.Quote(sk.Path), termtext.Escape(sk.Reason))
	}
}

// Milestone squashes a sandbox's snapshot commits since the last milestone
// into one commit.
type Milestone struct {
	sandboxName
	Message string `short:"m" required:"" help:"Message of the milestone commit."`
}

// Run squashes.
func (c *Milestone) Run(ctx context.Context, env *Env) error {
	h, err := env.Handle(ctx, c.Name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Milestone(ctx, h, c.Message)
	if err != nil {
		return err
	}
	if res.Commit == "" {
		env.outf("%s\n", res.Note)
		return nil
	}
	env.outf("Squashed %d commit(s) into %s\n", res.Squashed, res.Commit)
	return nil
}
