package sandbox

import (
	"context"
	"errors"
	"io"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// Running finds a sandbox whose container is running and returns it with the
// container's id in Container. Missing, paused and stopped sandboxes are
// errors that say what to do.
func (s *Service) Running(ctx context.Context, r *Repo, name string) (Sandbox, error) {
	f, err := s.lookup(ctx, r, name)
	if err != nil {
		return Sandbox{}, err
	}
	if f.container == nil {
		return Sandbox{}, noContainerError(f.slug)
	}
	c := f.container
	switch c.State {
	case "running":
	case "paused":
		return Sandbox{}, pausedError(f.slug)
	default:
		return Sandbox{}, stoppedError(f.slug)
	}
	return Sandbox{
		Name: f.slug, Status: containerStatus(c.State, r.Git.CommonDir, f.slug), Branch: BranchPrefix + f.slug,
		Container: c.ID, Repo: r.Root(), Base: c.Labels[LabelBase], Created: c.Created,
	}, nil
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
	sb, err := s.Running(ctx, r, name)
	if err != nil {
		return 0, err
	}
	_, err = s.Docker.Exec(ctx, docker.ExecSpec{
		Container: sb.Container, Cmd: o.Cmd, Workdir: Workdir,
		TTY: o.TTY, Interactive: o.Interactive, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	var ee *runner.ExitError
	if errors.As(err, &ee) && !errors.Is(err, docker.ErrUnavailable) {
		switch {
		case errors.Is(err, docker.ErrPaused):
			return 0, pausedError(sb.Name)
		case errors.Is(err, docker.ErrNoSuchContainer):
			return 0, notFound(sb.Name)
		}
		return ee.ExitCode, nil
	}
	return 0, err
}
