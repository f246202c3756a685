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

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// A bash tool call and the snapshot after it share one exec: the scanner
// runs the command itself, then scans, and sends the command's output ahead
// of the scan in the same stream. That halves the round trips an agent waits
// for on every call.

// runInContainer is the scanner's half of Run: it runs the command and
// returns its result, the output fitted into the spec's Cap. Closing stdin
// (after the spec) stops the command.
func runInContainer(stdin io.Reader) (*wire.RunResult, error) {
	dec := json.NewDecoder(stdin)
	var spec wire.RunSpec
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
	res := &wire.RunResult{}
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
