// Package docker holds the typed docker operations Litterbox uses, built as
// argv over a runner.Runner, and the parsers for their output. Nothing here
// knows about sandboxes; see package sandbox for that.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/litterbox-dev/litterbox/runner"
)

// ErrUnavailable means the docker CLI is missing or the engine does not answer.
var ErrUnavailable = errors.New("docker is unavailable")

// ErrNoSuchContainer means the named container does not exist.
var ErrNoSuchContainer = errors.New("no such container")

// ErrPaused means the container is paused, so it cannot run commands.
var ErrPaused = errors.New("container is paused")

// ErrNotRunning means the container exists but is stopped.
var ErrNotRunning = errors.New("container is not running")

// UnavailableError explains why docker cannot be used and what to do.
type UnavailableError struct {
	Reason string
}

func (e *UnavailableError) Error() string { return e.Reason }

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Client runs docker commands.
type Client struct {
	R runner.Runner
}

// Cmd starts a docker command line.
func Cmd(args ...string) *runner.Cmd {
	return runner.New("docker", args...)
}

// Run runs a docker command and turns the engine's well-known failures into
// typed errors: an absent CLI or engine becomes ErrUnavailable, a missing,
// paused or stopped container becomes ErrNoSuchContainer, ErrPaused or
// ErrNotRunning (wrapping the original *runner.ExitError).
func (c *Client) Run(ctx context.Context, cmd *runner.Cmd) (runner.Result, error) {
	res, err := c.R.Run(ctx, cmd)
	return res, Classify(err)
}

// Classify maps a docker CLI failure to the package's typed errors. Docker's
// exit codes do not tell these apart, so stderr decides.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var ni *runner.NotInstalledError
	if errors.As(err, &ni) {
		return &UnavailableError{Reason: "the docker CLI is not installed: install Docker (https://docs.docker.com/engine/install/) and try again"}
	}
	stderr := runner.Stderr(err)
	switch {
	case strings.Contains(stderr, "Cannot connect to the Docker daemon"),
		strings.Contains(stderr, "Is the docker daemon running"),
		strings.Contains(stderr, "error during connect"),
		strings.Contains(stderr, "permission denied while trying to connect to the Docker daemon"):
		return &UnavailableError{Reason: "Docker is not running: start it (for example `sudo systemctl start docker`, or `scripts/ensure-docker.sh` in the litterbox repository) and try again"}
	case strings.Contains(stderr, "No such container"):
		return fmt.Errorf("%w: %w", ErrNoSuchContainer, err)
	case strings.Contains(stderr, "is paused"):
		return fmt.Errorf("%w: %w", ErrPaused, err)
	case strings.Contains(stderr, "is not running"):
		return fmt.Errorf("%w: %w", ErrNotRunning, err)
	}
	return err
}

// Ping checks that the engine answers.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.Run(ctx, Cmd("version", "--format", "{{.Server.Version}}"))
	return err
}

// Pause freezes every process of a container. already reports a container
// that was paused before the call; that is not an error.
func (c *Client) Pause(ctx context.Context, name string) (already bool, err error) {
	_, err = c.Run(ctx, Cmd("pause", name))
	if err != nil && strings.Contains(runner.Stderr(err), "is already paused") {
		return true, nil
	}
	return false, err
}

// Unpause thaws a paused container. already reports a container that was not
// paused; that is not an error. A stopped container is ErrNotRunning.
func (c *Client) Unpause(ctx context.Context, name string) (already bool, err error) {
	_, err = c.Run(ctx, Cmd("unpause", name))
	if err != nil && strings.Contains(runner.Stderr(err), "is not paused") {
		return true, nil
	}
	return false, err
}

// Remove force-removes a container with its anonymous volumes. A container
// that is already gone is ErrNoSuchContainer: `docker rm --force` exits 0 in
// that case, so stderr decides.
func (c *Client) Remove(ctx context.Context, name string) error {
	res, err := c.Run(ctx, Cmd("rm", "--force", "--volumes", name))
	if err == nil && strings.Contains(string(res.Stderr), "No such container") {
		return ErrNoSuchContainer
	}
	return err
}

// NetworkCreate creates a bridge network with labels.
func (c *Client) NetworkCreate(ctx context.Context, name string, labels map[string]string) error {
	cmd := Cmd("network", "create", "--driver", "bridge")
	for _, kv := range SortedLabels(labels) {
		cmd.Arg("--label", kv)
	}
	_, err := c.Run(ctx, cmd.Arg(name))
	return err
}

// NetworkRemove removes a network. A network that is already gone is not an
// error.
func (c *Client) NetworkRemove(ctx context.Context, name string) error {
	_, err := c.Run(ctx, Cmd("network", "rm", name))
	if err != nil && strings.Contains(runner.Stderr(err), "not found") {
		return nil
	}
	return err
}

// ExecSpec is one command to run inside a running container.
type ExecSpec struct {
	Container   string
	Cmd         []string
	User        string
	Workdir     string
	Env         []string
	Stdin       io.Reader // when set, stdin is attached (-i)
	Interactive bool      // attach stdin even when Stdin is nil (the caller's own)
	TTY         bool
	Detach      bool
	Stdout      io.Writer
	Stderr      io.Writer
}

// ExecArgs builds the argv of `docker exec` for s.
func ExecArgs(s ExecSpec) []string {
	args := []string{"exec"}
	if s.Stdin != nil || s.Interactive {
		args = append(args, "--interactive")
	}
	if s.TTY {
		args = append(args, "--tty")
	}
	if s.Detach {
		args = append(args, "--detach")
	}
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	if s.Workdir != "" {
		args = append(args, "--workdir", s.Workdir)
	}
	for _, e := range s.Env {
		args = append(args, "--env", e)
	}
	args = append(args, s.Container)
	return append(args, s.Cmd...)
}

// Exec runs a command in a container. A non-zero exit of the command itself
// is a *runner.ExitError carrying its code; callers that treat exit codes as
// data use runner.ExitCode.
func (c *Client) Exec(ctx context.Context, s ExecSpec) (runner.Result, error) {
	cmd := Cmd(ExecArgs(s)...).WithStdin(s.Stdin)
	if s.Stdout != nil {
		cmd.WithStdout(s.Stdout)
	}
	if s.Stderr != nil {
		cmd.WithStderr(s.Stderr)
	}
	return c.Run(ctx, cmd)
}

// Networks lists the ids of networks carrying every filter label.
func (c *Client) Networks(ctx context.Context, filters []string) ([]string, error) {
	args := []string{"network", "ls", "--quiet", "--no-trunc"}
	for _, f := range filters {
		args = append(args, "--filter", "label="+f)
	}
	res, err := c.Run(ctx, Cmd(args...))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(res.Stdout)), nil
}
