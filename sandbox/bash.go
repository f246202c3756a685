package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits of Bash.
const (
	// MaxBashTimeout is the longest timeout allowed.
	MaxBashTimeout = time.Hour
	// MaxStreamBytes caps each of stdout and stderr; the rest is dropped,
	// with a marker.
	MaxStreamBytes = DefaultOutputCap
)

// BashOptions tune Bash.
type BashOptions struct {
	Workdir string        // absolute or relative to /src; default /src
	Timeout time.Duration // default DefaultRunTimeout
	Message string        // snapshot commit message
}

// BashResult is what a command did. A non-zero exit is a result, not an
// error.
type BashResult struct {
	RunResult
	Workdir    string `json:"workdir"`
	DurationMs int64  `json:"durationMs"`
}

// Bash runs a shell command for an agent and snapshots what it changed, in
// one docker exec (see Run), and marks truncated output and timeouts in the
// text so an agent cannot miss them. The snapshot's error, when the command
// ran, comes with its result rather than instead of it.
func (s *Service) Bash(ctx context.Context, h *Handle, command string, o BashOptions) (*BashResult, *SnapshotResult, error) {
	if strings.TrimSpace(command) == "" {
		return nil, nil, newError(ErrBadPath, "give a command to run")
	}
	wd, err := ContainerPath(o.Workdir)
	if err != nil {
		return nil, nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultRunTimeout
	}
	if timeout > MaxBashTimeout {
		return nil, nil, newError(ErrBadPath, "timeout %s is over the limit of %s", timeout, MaxBashTimeout)
	}
	start := time.Now()
	run, snap, err := s.Run(ctx, h, RunSpec{Command: command, Workdir: wd, Timeout: timeout, Cap: MaxStreamBytes, Message: o.Message})
	if run == nil {
		if err == nil {
			err = errors.New("the command sent no result")
		}
		return nil, nil, err
	}
	if run.ExitCode == 127 && run.Stdout == "" && strings.HasPrefix(run.Stderr, "fork/exec /bin/sh:") {
		// The shell could not start: in a busybox sandbox that means the
		// workdir is missing, and Go's error names the shell instead.
		return nil, nil, newError(ErrNoFile, "workdir %s does not exist or is not a directory. Use ls to find it.", DisplayPath(wd))
	}
	res := &BashResult{RunResult: *run, Workdir: DisplayPath(wd), DurationMs: time.Since(start).Milliseconds()}
	marker := fmt.Sprintf("\n[litterbox: output truncated: only the first %d bytes are shown]\n", MaxStreamBytes)
	if res.StdoutTruncated {
		res.Stdout += marker
	}
	if res.StderrTruncated {
		res.Stderr += marker
	}
	if res.TimedOut {
		res.Stderr += fmt.Sprintf("\n[litterbox: timed out after %s; the command's process group was killed]\n", timeout)
	}
	return res, snap, err
}
