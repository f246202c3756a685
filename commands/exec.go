package commands

import (
	"context"
	"errors"
	"os"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// ExitCodeError carries the exit code of a command run in a sandbox, so main
// can pass it through.
type ExitCodeError struct {
	Code int
}

func (e *ExitCodeError) Error() string { return "command exited non-zero" }

// ExitCode is the code to exit with.
func (e *ExitCodeError) ExitCode() int { return e.Code }

// Shell opens an interactive shell in a sandbox.
type Shell struct {
	sandboxName
}

// Run starts sh in /src as the sandbox user, with a TTY when there is one.
func (s *Shell) Run(ctx context.Context, env *Env) error {
	return runIn(ctx, env, s.Name, []string{"sh"})
}

// Exec runs one command in a sandbox.
type Exec struct {
	Name string   `arg:"" predictor:"sandbox" help:"Sandbox name."`
	Cmd  []string `arg:"" passthrough:"" help:"Command and arguments, after --."`
}

// Validate refuses an empty command.
func (e *Exec) Validate() error {
	if len(e.Cmd) > 0 && e.Cmd[0] == "--" {
		e.Cmd = e.Cmd[1:]
	}
	if _, err := api.Slugify(e.Name); err != nil {
		return err
	}
	if len(e.Cmd) == 0 {
		return errors.New("give a command to run: litterbox exec NAME -- CMD [ARGS...]")
	}
	return nil
}

// Run runs the command and passes its exit code through.
func (e *Exec) Run(ctx context.Context, env *Env) error {
	return runIn(ctx, env, e.Name, e.Cmd)
}

func runIn(ctx context.Context, env *Env, name string, cmd []string) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	tty := isTerminal(os.Stdin) && isTerminal(os.Stdout)
	code, err := env.Sandboxes.Exec(ctx, r, name, api.ExecOptions{
		Cmd: cmd, TTY: tty, Interactive: true,
		Stdin: os.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
	})
	if err != nil {
		return err
	}
	if code != 0 {
		return &ExitCodeError{Code: code}
	}
	return nil
}
