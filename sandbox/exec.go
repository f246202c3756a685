package sandbox

import (
	"context"
	"errors"
	"io"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// running finds a sandbox whose container is running. Missing, incomplete,
// paused and stopped sandboxes are errors that say what to do.
func (s *Service) running(ctx context.Context, r *Repo, name string) (*found, error) {
	f, err := s.lookup(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if err := f.usable(r.Git.CommonDir); err != nil {
		return nil, err
	}
	if f.container == nil {
		return nil, core.NoContainerError(f.slug)
	}
	switch f.container.State {
	case provider.StateRunning:
		return f, nil
	case provider.StatePaused:
		return nil, core.PausedError(f.slug)
	}
	return nil, core.StoppedError(f.slug)
}

// Handle resolves a running sandbox. Missing, incomplete, paused and stopped
// sandboxes are errors that say what to do.
func (s *Service) Handle(ctx context.Context, r *Repo, name string) (*Handle, error) {
	f, err := s.running(ctx, r, name)
	if err != nil {
		return nil, err
	}
	return core.HandleOf(r, *f.container), nil
}

// ExecOptions describe a command to run in a sandbox for a human: streams are
// passed through and the exit code is returned.
type ExecOptions struct {
	Cmd         []string
	TTY         bool
	Interactive bool // attach the caller's stdin
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
}

// Exec runs a command in a running sandbox, in /src, as the sandbox user, and
// returns its exit code. Only failures to run it at all are errors.
func (s *Service) Exec(ctx context.Context, r *Repo, name string, o ExecOptions) (int, error) {
	f, err := s.running(ctx, r, name)
	if err != nil {
		return 0, err
	}
	res, err := s.Provider.Exec(ctx, provider.ExecRequest{
		Kind: runner.Stream, // the user's command: it runs until done or Ctrl-C
		Ref:  f.container.Ref, Cmd: o.Cmd, Workdir: Workdir, Env: core.SandboxEnv(f.slug),
		TTY: o.TTY, Interactive: o.Interactive, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	switch {
	case errors.Is(err, provider.ErrPaused):
		return 0, core.PausedError(f.slug)
	case errors.Is(err, provider.ErrNotFound):
		return 0, core.NotFoundError(f.slug)
	case errors.Is(err, provider.ErrStopped):
		return 0, core.StoppedError(f.slug)
	case err != nil:
		return 0, err
	}
	return res.ExitCode, nil
}
