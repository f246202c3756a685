package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A bash tool call and the snapshot after it share one docker exec: the
// scanner runs the command itself, then scans, and sends the command's
// output ahead of the scan in the same stream. That halves the round trips
// an agent waits for on every call.

// RunSpec is one shell command for Service.Run.
type RunSpec struct {
	Command string        `json:"command"`
	Workdir string        `json:"workdir"`       // absolute in the container
	Timeout time.Duration `json:"timeout"`       // 0 means DefaultRunTimeout
	Cap     int           `json:"cap"`           // bytes kept per stream; 0 means DefaultOutputCap
	Env     []string      `json:"env,omitempty"` // extra KEY=VALUE
	Message string        `json:"message"`       // snapshot commit message
	// Args are the script's positional parameters ($1...), and Stdin its
	// input: the agent's values travel as data, never inside Command.
	Args  []string `json:"args,omitempty"`
	Stdin []byte   `json:"stdin,omitempty"`
}

// Defaults of RunSpec.
const (
	DefaultRunTimeout = 2 * time.Minute
	DefaultOutputCap  = 1 << 20
)

// RunResult is what the command did.
type RunResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exitCode"`
	TimedOut        bool   `json:"timedOut,omitempty"`
	StdoutTruncated bool   `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool   `json:"stderrTruncated,omitempty"`
}

const (
	runStdoutName = "/litterbox-run-stdout"
	runStderrName = "/litterbox-run-stderr"
	runResultName = "/litterbox-run-result"
)

// Run runs a shell command in the sandbox as the sandbox user, then snapshots
// what it changed, in one docker exec. A non-zero exit is a result, not an
// error. The snapshot error, if any, comes with the command's result: the
// command ran either way.
func (s *Service) Run(ctx context.Context, h *Handle, spec RunSpec) (*RunResult, *SnapshotResult, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultRunTimeout
	}
	if spec.Cap <= 0 {
		spec.Cap = DefaultOutputCap
	}
	if spec.Workdir == "" {
		spec.Workdir = Workdir
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	opts := s.scanOptions(ctx, h)
	sc, err := s.scan(ctx, h, opts, bytes.NewReader(in))
	if err != nil {
		return nil, nil, err
	}
	if sc.run == nil {
		return nil, nil, errors.New("the scanner sent no command result")
	}
	snap, err := s.commitScan(ctx, h, sc, opts, spec.Message)
	return sc.run, snap, err
}

// runInContainer is the scanner's half of Run: it runs the command and
// returns what to send ahead of the scan.
func runInContainer(stdin io.Reader) (*RunResult, []byte, []byte, error) {
	var spec RunSpec
	if err := json.NewDecoder(stdin).Decode(&spec); err != nil {
		return nil, nil, nil, fmt.Errorf("read run spec: %w", err)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", spec.Command, "sh"}, spec.Args...)...)
	cmd.Dir = spec.Workdir
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	cmd.Env = append(os.Environ(), spec.Env...)
	// Its own process group, so a timeout kills everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, stderr := &capped{max: spec.Cap}, &capped{max: spec.Cap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A background job that keeps our pipes open must not hold the call.
	cmd.WaitDelay = 500 * time.Millisecond
	res := &RunResult{}
	if err := cmd.Start(); err != nil {
		res.ExitCode = 127
		stderr.Write([]byte(err.Error() + "\n"))
	} else {
		timer := time.AfterFunc(spec.Timeout, func() {
			res.TimedOut = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
		err := cmd.Wait()
		timer.Stop()
		res.ExitCode = cmd.ProcessState.ExitCode()
		if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.ExitCode = 128 + int(st.Signal())
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
			stderr.Write([]byte(err.Error() + "\n"))
		}
	}
	res.StdoutTruncated, res.StderrTruncated = stdout.dropped > 0, stderr.dropped > 0
	return res, stdout.buf.Bytes(), stderr.buf.Bytes(), nil
}

// capped keeps the first max bytes written and counts the rest.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := min(max(c.max-c.buf.Len(), 0), len(p))
	c.buf.Write(p[:room])
	c.dropped += len(p) - room
	return len(p), nil
}
