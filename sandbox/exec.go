package sandbox

import (
	"context"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// Exec runs a command in a running sandbox, in /src, as the sandbox user, and
// returns its exit code. Only failures to run it at all are errors.
func (s *Sandboxes) Exec(ctx context.Context, r *api.Repo, name string, o api.ExecOptions) (int, error) {
	f, err := s.inv.Running(ctx, r, name)
	if err != nil {
		return 0, err
	}
	return s.execIn(ctx, r, f.Slug, f.Container.Ref, o)
}

// execIn is Exec in sandbox slug, found running as ref.
func (s *Sandboxes) execIn(ctx context.Context, r *api.Repo, slug string, ref provider.Ref, o api.ExecOptions) (int, error) {
	// A session can last hours (a shell): its start is an event of its
	// own, so the feed shows someone is in the sandbox meanwhile.
	start := time.Now()
	e := activity.Event{Kind: activity.KindExec, Args: runner.Quote(o.Cmd...)}
	e.Action = "start"
	s.note(ctx, r, slug, e, time.Time{}, nil)
	e.Action, e.Start = "end", start
	res, err := s.c.Provider.Exec(ctx, provider.ExecRequest{
		Kind: runner.Stream, // the user's command: it runs until done or Ctrl-C
		Ref:  ref, Cmd: o.Cmd, Workdir: api.Workdir, Env: append(core.SandboxEnv(slug), o.Env...),
		TTY: o.TTY, Interactive: o.Interactive, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	if serr := core.StateError(slug, err); serr != nil {
		err = serr
	}
	if err != nil {
		s.note(ctx, r, slug, e, start, err)
		return 0, err
	}
	e.Exit = &res.ExitCode
	s.note(ctx, r, slug, e, start, nil)
	return res.ExitCode, nil
}
