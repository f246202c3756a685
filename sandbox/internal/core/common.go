package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Common is what every concern of the service shares: the engine, the
// runner of host commands (git), the log and the options. Each concern's
// type embeds it.
type Common struct {
	Provider provider.Provider
	Runner   runner.Runner
	Log      *log.Logger
	api.Options
}

// Warn logs what the user should know of their configuration.
func (c *Common) Warn(msg string) { c.Log.Warn(msg) }

// LoadConfig reads the configuration of commit of r (see config.Load).
func (c *Common) LoadConfig(ctx context.Context, r *api.Repo, commit string) (*config.Config, error) {
	return config.Load(ctx, r.Git, commit, c.Warn)
}

// EngineRuntime is the engine's name for runtime (provider.RuntimeGVisor
// is "runsc" on Docker), asked before anything is made: a runtime the
// engine does not offer is ErrNoRuntime, with the runtimes it offers and
// how to install gVisor. "" (the engine's default) is "". An engine that
// cannot say takes the name as it is, and refuses it at Create.
func (c *Common) EngineRuntime(ctx context.Context, runtime string) (string, error) {
	rc, ok := c.Provider.(provider.RuntimeChecker)
	if runtime == "" || !ok {
		return runtime, nil
	}
	name, err := rc.CheckRuntime(ctx, runtime)
	if errors.Is(err, provider.ErrNoRuntime) {
		return "", NoRuntimeError(err)
	}
	return name, err
}

// NoRuntimeError words the engine's refusal of a runtime for the user and
// for an agent: what the engine offers, how to install gVisor, and that
// nothing was made.
func NoRuntimeError(err error) error {
	msg := err.Error()
	// ensure-gvisor.sh registers runsc with Docker or Podman; a cluster's
	// refusal (it names a RuntimeClass) says itself what to install.
	if !strings.Contains(msg, "ensure-gvisor.sh") && !strings.Contains(msg, "RuntimeClass") {
		msg += ". For gVisor, `scripts/ensure-gvisor.sh` in the litterbox repository builds runsc and registers it with the engine"
	}
	return &api.Error{Kind: api.ErrNoRuntime,
		Msg:   "The sandbox was not created: " + msg + " (docs/kernels.md). Set the runtime with `runtime` in .litterbox.toml or .litterbox.local.toml, or `litterbox create --runtime NAME`. Nothing was made.",
		Agent: "The sandbox was not created: the engine cannot run the runtime the user configured for sandboxes (" + msg + "). Tell the user; nothing was made."}
}

// Made is the context of calls that make something: they run to their end
// even when ctx is cancelled (Ctrl-C), since killing a client does not stop
// what it asked for, and then nothing would remove it. Once the call
// returns, the undo knows what exists.
func Made(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// SandboxEnv is the environment every command of the sandbox's own runs
// with: its name, which a pooled container's environment cannot hold (it was
// made before the name was known).
func SandboxEnv(slug string) []string { return []string{"LITTERBOX_SANDBOX=" + slug} }

// What the host reads from a sandbox is bounded twice. The scripts cut and
// count inside the sandbox (grep's lines, ls's bytes, read's size), so an
// honest answer is small whatever the files look like; and the host reads
// every exec's output through a limit, failing cleanly past it, because the
// programs that answer run as uid 1000, the agent's, which can tamper with
// them (/proc/PID/mem) to send more. Unbounded, one grep over 11 hard links
// to a 30 MB line took the MCP server from 25 MiB to 1.4 GiB
// (security_memory.txtar).

// ErrTooMuchOutput is an exec that sent more than litterbox asked for: a
// program in the sandbox was tampered with. Nothing past the limit was read.
var ErrTooMuchOutput = errors.New("the sandbox sent too much")

// execOutputCap is what the host reads of an exec's output when its
// caller sets no other limit: the service's own small commands (service
// status and logs, setup, installs).
const execOutputCap = 4 << 20

// Exec runs a command in a sandbox for the service itself, for which a
// non-zero exit is a failure: it comes back as a *runner.ExitError holding
// the code and stderr, as a failed git command would. Output it captures is
// bounded: stdout at execOutputCap, past which the exec fails with
// ErrTooMuchOutput; of stderr only the end an error quotes is kept.
func (c *Common) Exec(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
	return c.ExecCapped(ctx, req, execOutputCap)
}

// ExecCapped is Exec with stdout, when captured, bounded at limit bytes.
func (c *Common) ExecCapped(ctx context.Context, req provider.ExecRequest, limit int) (provider.ExecResult, error) {
	var out *cappedBuffer
	if req.Stdout == nil {
		out = &cappedBuffer{max: limit}
		req.Stdout = out
	}
	if req.Stderr == nil {
		// The runner still keeps its last few KiB for the error.
		req.Stderr = io.Discard
	}
	res, err := c.Provider.Exec(ctx, req)
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

// ExecError turns a failed exec in h's sandbox into an error that says
// what to do.
func ExecError(h *api.Handle, what string, err error) error {
	if serr := StateError(h.Slug, err); serr != nil {
		return serr
	}
	return fmt.Errorf("%s in sandbox '%s': %w", what, h.Slug, err)
}

// StateError is the error that says what to do when the engine refused a
// command because sandbox slug is paused, stopped or gone; nil for any
// other err.
func StateError(slug string, err error) error {
	switch {
	case errors.Is(err, provider.ErrPaused):
		return PausedError(slug)
	case errors.Is(err, provider.ErrNotFound):
		return NotFoundError(slug)
	case errors.Is(err, provider.ErrStopped):
		return StoppedError(slug)
	}
	return nil
}

// cappedBuffer collects up to max bytes; the write that would pass max
// fails, which makes the exec's client see a closed pipe and stop. It
// keeps chunks and joins them once, at the end: a buffer that doubles
// held three times a big output while it grew.
type cappedBuffer struct {
	chunks [][]byte
	n      int
	max    int
	over   bool
}

const chunkSize = 1 << 20

var errOverCap = errors.New("output over its limit")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.over || c.n+len(p) > c.max {
		c.over = true
		return 0, errOverCap
	}
	c.n += len(p)
	for rest := p; len(rest) > 0; {
		last := len(c.chunks) - 1
		if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
			c.chunks = append(c.chunks, make([]byte, 0, min(chunkSize, max(4<<10, c.n))))
			last++
		}
		k := copy(c.chunks[last][len(c.chunks[last]):cap(c.chunks[last])], rest)
		c.chunks[last] = c.chunks[last][:len(c.chunks[last])+k]
		rest = rest[k:]
	}
	return len(p), nil
}

// Bytes is what was written.
func (c *cappedBuffer) Bytes() []byte {
	switch len(c.chunks) {
	case 0:
		return nil
	case 1:
		return c.chunks[0]
	}
	all := bytes.Join(c.chunks, nil)
	c.chunks = [][]byte{all}
	return all
}

// WithStderr puts a failed command's stderr into its error.
func WithStderr(err error, stderr string) error {
	var ee *runner.ExitError
	if errors.As(err, &ee) && ee.Stderr == "" {
		ee.Stderr = CapText(stderr)
	}
	return err
}

// NewCommon is what the concerns share: engine p, git's runner r, logger
// (the default one when nil) and opts, with their defaults filled in.
func NewCommon(p provider.Provider, r runner.Runner, logger *log.Logger, opts api.Options) *Common {
	if logger == nil {
		logger = log.Default()
	}
	if opts.Image == "" {
		opts.Image = api.DefaultImage
	}
	if opts.ExtraLabels == nil {
		opts.ExtraLabels = map[string]string{}
	}
	return &Common{Provider: p, Runner: r, Log: logger, Options: opts}
}
