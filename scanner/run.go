package scanner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// A bash tool call and the snapshot after it share one exec: the scanner
// runs the command itself, then scans, and sends the command's output ahead
// of the scan in the same stream. That halves the round trips an agent waits
// for on every call.

// RunSpec is one shell command to run before a scan (Options.Run).
type RunSpec struct {
	Command string        `json:"command"`
	Workdir string        `json:"workdir"`       // absolute in the container
	Timeout time.Duration `json:"timeout"`       // the host fills in its default
	Env     []string      `json:"env,omitempty"` // extra KEY=VALUE
	Message string        `json:"message"`       // snapshot commit message
	// Cap is how much output the result shows, both streams together, as
	// JSON bytes (see output.go); the host fills in its default.
	Cap int `json:"cap"`
	// KeepOutput keeps the whole of a stream that was cut in a file under
	// OutputDir, named in the result.
	KeepOutput bool `json:"keepOutput,omitempty"`
	// ID names the run: its output files, and the LITTERBOX_RUN variable
	// that marks every process it starts. Run sets it.
	ID string `json:"id"`
	// Args are the script's positional parameters ($1...), and Stdin its
	// input: the agent's values travel as data, never inside Command.
	Args  []string `json:"args,omitempty"`
	Stdin []byte   `json:"stdin,omitempty"`
	// Refusals names the file where the sandbox's gateway records the
	// connections it refuses, owned by RefusalsUID (see refusals.go): the
	// result holds what it gained during the command.
	Refusals    string `json:"refusals,omitempty"`
	RefusalsUID int    `json:"refusalsUid,omitempty"`
}

// RunResult is what the command did. Stdout and Stderr are what is shown,
// fitted into the spec's Cap; the Bytes fields count all of each stream,
// and the File fields name the files that keep the whole of a stream cut.
type RunResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exitCode"`
	TimedOut        bool   `json:"timedOut,omitempty"`
	Cancelled       bool   `json:"cancelled,omitempty"`
	StdoutTruncated bool   `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool   `json:"stderrTruncated,omitempty"`
	StdoutBytes     int64  `json:"stdoutBytes"`
	StderrBytes     int64  `json:"stderrBytes"`
	StdoutFile      string `json:"stdoutFile,omitempty"`
	StderrFile      string `json:"stderrFile,omitempty"`
	// Refusals are the lines the spec's refusals file gained during the
	// command, when RefusalsRead: false when the spec named none or that
	// file could not be trusted or read.
	Refusals     string `json:"refusals,omitempty"`
	RefusalsRead bool   `json:"refusalsRead,omitempty"`
}

const (
	runStdoutName = "/litterbox-run-stdout"
	runStderrName = "/litterbox-run-stderr"
	runResultName = "/litterbox-run-result"
)

// runInContainer is the scanner's half of Run: it runs the command and
// returns its result, the output fitted into the spec's Cap. Closing stdin
// (after the spec) stops the command.
func runInContainer(stdin io.Reader) (*RunResult, error) {
	dec := json.NewDecoder(stdin)
	var spec RunSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, fmt.Errorf("read run spec: %w", err)
	}
	cmd := exec.Command("/bin/sh", append([]string{"-c", spec.Command, "sh"}, spec.Args...)...)
	cmd.Dir = spec.Workdir
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	cmd.Env = append(os.Environ(), spec.Env...)
	mark := ""
	if spec.ID != "" {
		mark = runMark + "=" + spec.ID
		cmd.Env = append(cmd.Env, mark)
	}
	// Its own process group, so a timeout kills everything it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, stderr := &capture{max: spec.Cap}, &capture{max: spec.Cap}
	if spec.KeepOutput && spec.ID != "" {
		stdout.path = filepath.Join(OutputDir, spec.ID+"-stdout")
		stderr.path = filepath.Join(OutputDir, spec.ID+"-stderr")
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A background job that keeps our pipes open must not hold the call.
	cmd.WaitDelay = 500 * time.Millisecond
	res := &RunResult{}
	refusals := markRefusals(&spec)
	if err := cmd.Start(); err != nil {
		res.ExitCode = 127
		stderr.Write([]byte(err.Error() + "\n"))
	} else {
		var mu sync.Mutex // guards res's flags against the killers
		stopWith := func(flag *bool) {
			mu.Lock()
			*flag = true
			mu.Unlock()
			killTree(cmd.Process.Pid, mark)
		}
		timer := time.AfterFunc(spec.Timeout, func() { stopWith(&res.TimedOut) })
		exited := make(chan struct{})
		go func() {
			// The host closes stdin to cancel; until then it sends nothing.
			_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), stdin))
			select {
			case <-exited:
			default:
				stopWith(&res.Cancelled)
			}
		}()
		err := cmd.Wait()
		close(exited)
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		res.ExitCode = cmd.ProcessState.ExitCode()
		if st, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.ExitCode = 128 + int(st.Signal())
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
			stderr.Write([]byte(err.Error() + "\n"))
		}
	}
	readRefusals(&spec, refusals, res)
	finish(res, stdout, stderr, spec.Cap)
	return res, nil
}
