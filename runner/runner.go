package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/log"
)

// Result is what a finished command produced. Stdout and Stderr are empty when
// the Cmd streamed them elsewhere (a failure's ExitError still holds the end
// of a streamed stderr).
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	Duration time.Duration
}

// Runner runs commands. The exec implementation is Exec; unit tests use Fake.
type Runner interface {
	// Run runs c to completion. A non-zero exit is an *ExitError; a missing
	// program is a *NotInstalledError.
	Run(ctx context.Context, c *Cmd) (Result, error)
}

// ExitError is a command that ran and exited non-zero. It keeps the exit code
// and standard error so callers can branch on them.
type ExitError struct {
	Command  string // shell-quoted argv
	ExitCode int
	Stderr   string
}

func (e *ExitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", e.Command, e.ExitCode)
	}
	return fmt.Sprintf("%s: exit status %d: %s", e.Command, e.ExitCode, msg)
}

// NotInstalledError is a program that is not on PATH.
type NotInstalledError struct {
	Program string
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("%s is not installed or not on PATH: install it and try again", e.Program)
}

// ExitCode reports the exit code of err when it is an *ExitError, else -1.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode
	}
	return -1
}

// Stderr returns the captured standard error of err when it is an *ExitError.
func Stderr(err error) string {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Stderr
	}
	return ""
}

// Exec runs commands as real processes and logs each one at debug level: the
// pasteable argv, its directory, exit code, duration, and stderr on failure.
type Exec struct {
	Log *log.Logger
}

// Run implements Runner.
func (r Exec) Run(ctx context.Context, c *Cmd) (Result, error) {
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Stdin = c.Stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		// Streamed stderr still ends in the ExitError and the log line: it
		// is what says why a command failed.
		cmd.Stderr = io.MultiWriter(c.Stderr, &tail{buf: &stderr})
	}
	// Killing only the direct child can leave a grandchild holding our pipes
	// open; WaitDelay bounds how long Wait then blocks.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Duration: time.Since(start)}
	if c.Stderr == nil {
		res.Stderr = stderr.Bytes()
	}
	res.ExitCode = cmd.ProcessState.ExitCode()

	fields := []any{"cmd", c.String(), "exit", res.ExitCode, "ms", res.Duration.Milliseconds()}
	if c.Dir != "" {
		fields = append(fields, "dir", c.Dir)
	}
	if err == nil {
		r.logger().Debug("ran", fields...)
		return res, nil
	}

	if errors.Is(err, exec.ErrNotFound) {
		r.logger().Debug("not installed", fields...)
		return res, &NotInstalledError{Program: c.Args[0]}
	}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		if ctx.Err() != nil {
			r.logger().Debug("cancelled", fields...)
			return res, fmt.Errorf("%s: %w", c.String(), ctx.Err())
		}
		if st, ok := xe.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.ExitCode = 128 + int(st.Signal())
		}
		fields = append(fields, "stderr", strings.TrimSpace(stderr.String()))
		r.logger().Debug("failed", fields...)
		return res, &ExitError{Command: c.String(), ExitCode: res.ExitCode, Stderr: stderr.String()}
	}
	r.logger().Debug("failed to start", append(fields, "err", err)...)
	return res, fmt.Errorf("%s: %w", c.String(), err)
}

func (r Exec) logger() *log.Logger {
	if r.Log == nil {
		return log.Default()
	}
	return r.Log
}

// tailSize is how much of a streamed stderr is kept for errors.
const tailSize = 4 << 10

// tail keeps the last tailSize bytes written to it.
type tail struct {
	buf *bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if extra := t.buf.Len() - tailSize; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}
