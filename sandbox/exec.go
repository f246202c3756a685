package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
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
		return nil, noContainerError(f.slug)
	}
	switch f.container.State {
	case provider.StateRunning:
		return f, nil
	case provider.StatePaused:
		return nil, pausedError(f.slug)
	}
	return nil, stoppedError(f.slug)
}

func pausedError(slug string) error {
	return newError(ErrPaused, "Sandbox '%s' is paused: resume it with `litterbox resume %s`.", slug, slug)
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
		Ref:  f.container.Ref, Cmd: o.Cmd, Workdir: Workdir, Env: sandboxEnv(f.slug),
		TTY: o.TTY, Interactive: o.Interactive, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	switch {
	case errors.Is(err, provider.ErrPaused):
		return 0, pausedError(f.slug)
	case errors.Is(err, provider.ErrNotFound):
		return 0, notFound(f.slug)
	case errors.Is(err, provider.ErrStopped):
		return 0, stoppedError(f.slug)
	case err != nil:
		return 0, err
	}
	return res.ExitCode, nil
}

// exec runs a command in h's sandbox for the service itself, for which a
// non-zero exit is a failure: it comes back as a *runner.ExitError holding
// the code and stderr, as a failed git command would. Output it captures
// is bounded (bounded.go): stdout at execOutputCap, past which the exec
// fails with ErrTooMuchOutput; of stderr only the end an error quotes is
// kept.
func (s *Service) exec(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
	return s.execCapped(ctx, req, execOutputCap)
}

// execCapped is exec with stdout, when captured, bounded at limit bytes.
func (s *Service) execCapped(ctx context.Context, req provider.ExecRequest, limit int) (provider.ExecResult, error) {
	var out *cappedBuffer
	if req.Stdout == nil {
		out = &cappedBuffer{max: limit}
		req.Stdout = out
	}
	if req.Stderr == nil {
		// The runner still keeps its last few KiB for the error.
		req.Stderr = io.Discard
	}
	res, err := s.Provider.Exec(ctx, req)
	if out != nil {
		if out.over {
			return res, fmt.Errorf("%w: more than %d bytes, and nothing past that was read. A program in the sandbox (they run as the agent's user) was tampered with: retry, and if it repeats, recreate the sandbox",
				ErrTooMuchOutput, limit)
		}
		res.Stdout = out.Bytes()
	}
	if err == nil && res.ExitCode != 0 {
		err = &runner.ExitError{Command: runner.Quote(req.Cmd...), ExitCode: res.ExitCode, Stderr: string(res.Stderr)}
	}
	return res, err
}
