package runner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/log"
	"github.com/mattn/go-isatty"
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

// Runner runs commands. The exec implementation is Exec; unit tests use
// runnertest.Fake.
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

// Error quotes the command and its stderr, each cut to a few KiB (the ends
// kept, the middle dropped with a note): an argv or stderr of megabytes must
// not become a message of megabytes.
func (e *ExitError) Error() string {
	cmd := clip(e.Command, maxQuoted, 0)
	msg := clip(strings.TrimSpace(e.Stderr), 1<<10, 2<<10)
	if msg == "" {
		return fmt.Sprintf("%s: exit status %d", cmd, e.ExitCode)
	}
	return fmt.Sprintf("%s: exit status %d: %s", cmd, e.ExitCode, msg)
}

// clip keeps the first head and last tail bytes of s (at UTF-8 boundaries)
// and says how much it cut between them.
func clip(s string, head, tail int) string {
	if len(s) <= head+tail {
		return s
	}
	h, t := head, len(s)-tail
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	if tail == 0 {
		return fmt.Sprintf("%s... (%d more bytes)", s[:h], len(s)-h)
	}
	return fmt.Sprintf("%s [... %d bytes cut] %s", s[:h], t-h, s[t:])
}

// NotInstalledError is a program that is not on PATH.
type NotInstalledError struct {
	Program string
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("%s is not installed or not on PATH: install it and try again", e.Program)
}

// ErrTimeout is a command that ran past its time limit and was killed.
var ErrTimeout = errors.New("command timed out")

// TimeoutError is a command that Exec killed at its time limit (see Kind):
// the program, or the engine it talks to, did not answer in time.
type TimeoutError struct {
	Command string // shell-quoted argv, cut to a readable length
	Kind    Kind
	Limit   time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no answer within %s, so litterbox stopped it; if it is only slow, raise %s", e.Command, e.Limit, e.Setting())
}

// Setting is the environment variable that sets the limit e hit.
func (e *TimeoutError) Setting() string {
	return "LITTERBOX_" + strings.ToUpper(e.Kind.String()) + "_TIMEOUT"
}

// Is makes errors.Is(err, ErrTimeout) hold.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Limits are the time limits Exec gives each Kind of command; a zero field
// takes its default. Stream commands have none.
type Limits struct {
	Control time.Duration // default DefaultControlLimit
	Work    time.Duration // default DefaultWorkLimit
}

// Default time limits. Control calls take well under a second on a healthy
// engine; the minute leaves room for a loaded machine or a slow remote
// engine, and for `docker rm` of a container that wrote a lot.
const (
	DefaultControlLimit = time.Minute
	DefaultWorkLimit    = 10 * time.Minute
)

// of returns the limit for k; 0 means none.
func (l Limits) of(k Kind) time.Duration {
	switch k {
	case Control:
		return cmp.Or(l.Control, DefaultControlLimit)
	case Work:
		return cmp.Or(l.Work, DefaultWorkLimit)
	}
	return 0
}

// maxQuoted is how much of a command line an error quotes: enough to see
// what ran, never megabytes of argv.
const maxQuoted = 300

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
// It kills a command that runs past the limit of its Kind.
type Exec struct {
	Log    *log.Logger
	Limits Limits
}

// Run implements Runner. A command killed at its time limit is a
// *TimeoutError.
func (r Exec) Run(ctx context.Context, c *Cmd) (Result, error) {
	var yielded time.Duration
	if g := yieldOf(ctx); g != nil {
		yielded = g.wait(ctx)
	}
	runCtx := ctx
	limit := r.Limits.of(c.Kind)
	if limit > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, c.Args[0], c.Args[1:]...)
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
	if !onTerminal(c) {
		// Its own process group, killed whole: killing only the direct child
		// would leave its children running (docker's ssh to a remote engine,
		// a wrapper script's). A command on the user's terminal stays in the
		// foreground group, which it needs to read the terminal; Ctrl-C
		// reaches it there.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
	// A grandchild outside the group can still hold our pipes open;
	// WaitDelay bounds how long Wait then blocks.
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
	if yielded >= time.Millisecond {
		fields = append(fields, "yielded_ms", yielded.Milliseconds())
	}
	if err == nil {
		r.logger().Debug("ran", fields...)
		return res, nil
	}

	if runCtx.Err() != nil && ctx.Err() == nil {
		r.logger().Debug("timed out", append(fields, "limit", limit)...)
		return res, &TimeoutError{Command: clip(c.String(), maxQuoted, 0), Kind: c.Kind, Limit: limit}
	}
	if errors.Is(err, exec.ErrNotFound) {
		r.logger().Debug("not installed", fields...)
		return res, &NotInstalledError{Program: c.Args[0]}
	}
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		if ctx.Err() != nil {
			r.logger().Debug("cancelled", fields...)
			return res, fmt.Errorf("%s: %w", clip(c.String(), maxQuoted, 0), ctx.Err())
		}
		if st, ok := xe.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.ExitCode = 128 + int(st.Signal())
		}
		fields = append(fields, "stderr", strings.TrimSpace(stderr.String()))
		r.logger().Debug("failed", fields...)
		return res, &ExitError{Command: c.String(), ExitCode: res.ExitCode, Stderr: stderr.String()}
	}
	r.logger().Debug("failed to start", append(fields, "err", err)...)
	return res, fmt.Errorf("%s: %w", clip(c.String(), maxQuoted, 0), err)
}

// onTerminal reports whether any of c's streams is a terminal.
func onTerminal(c *Cmd) bool {
	for _, s := range []any{c.Stdin, c.Stdout, c.Stderr} {
		if f, ok := s.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			return true
		}
	}
	return false
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
