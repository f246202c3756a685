package recording

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// A bash tool call and the snapshot after it share one exec: the
// scanner runs the command itself, then scans, and sends the command's
// output ahead of the scan in the same stream. That halves the round trips
// an agent waits for on every call.

// RunSpec is one shell command for Service.Run; the scanner runs it.
type RunSpec = wire.RunSpec

// cancelGrace is how long a cancelled command's exec may take to stop the
// command and scan before it is abandoned (a scanner that does not answer
// its closed stdin has been tampered with).
const cancelGrace = time.Minute

// Run runs a shell command in the sandbox as the sandbox user, then snapshots
// what it changed, in one exec. A non-zero exit is a result, not an
// error. The snapshot error, if any, comes with the command's result: the
// command ran either way.
//
// When ctx ends, the command stops: the exec's stdin closes, and the scanner
// kills every process the command started (its group, its descendants, and
// any process carrying its LITTERBOX_RUN mark), then scans as usual. The exec
// and the snapshot run on past ctx, so what the command changed is
// committed under its own message; the result says Cancelled.
func (rec *Recorder) Run(ctx context.Context, h *api.Handle, spec RunSpec) (*api.RunResult, *api.SnapshotResult, error) {
	if spec.Timeout <= 0 {
		spec.Timeout = api.DefaultRunTimeout
	}
	if spec.Cap <= 0 {
		spec.Cap = api.DefaultOutputCap
	}
	if spec.Workdir == "" {
		spec.Workdir = api.Workdir
	}
	if spec.ID == "" {
		spec.ID = newRunID()
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	work, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	work, done := beginCall(work, h, spec.Message)
	defer done()
	go func() {
		select {
		case <-ctx.Done():
			t := time.AfterFunc(cancelGrace, stop)
			<-work.Done()
			t.Stop()
		case <-work.Done():
		}
	}()
	// Where a call's time goes, for the debug log: the host's work before
	// the exec, the exec until its stream is whole, the commit after it.
	began := time.Now()
	opts := rec.scanOptions(work, h)
	prepared := time.Now()
	sc, err := rec.scan(work, h, opts, &runInput{spec: in, stop: ctx.Done(), private: len(spec.Stdin) > 0 || len(spec.Env) > 0})
	if err != nil {
		return nil, nil, err
	}
	streamed := time.Now()
	if sc.run == nil {
		sc.budget.release()
		sc.release()
		return nil, nil, errors.New("the scanner sent no command result")
	}
	// The output outlives the scan's share of memory (commitScan releases
	// it): no more of it than the spec's cap.
	sc.run.Clip(spec.Cap)
	snap, err := rec.commitScan(work, h, sc, opts, spec.Message)
	if snap != nil {
		snap.Ms = millis(time.Duration(sc.meta.Took) + time.Since(streamed))
	}
	rec.Log.Debug("run", "sandbox", h.Slug, "prepare", prepared.Sub(began), "exec", streamed.Sub(prepared), "record", time.Since(streamed))
	return sc.run, snap, err
}

// newRunID is a run's name: sortable by time, unique.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%x", time.Now().UTC().Format("20060102T150405.000000"), b)
}

// runInput is the stdin of a scan that runs a command: the spec, then
// nothing until stop, when it closes, which tells the scanner to stop the
// command.
type runInput struct {
	spec []byte
	stop <-chan struct{}
	// private: the spec carries data (a file's content, an environment)
	// that goes on stdin only, never in an argument, which other users of
	// the host, the debug log and a cluster's audit log can read.
	private bool
}

// pipe makes one exec's stdin for in; release frees it once the exec is
// over. An *os.File goes to the exec client as it is, so nothing on our
// side waits on the pipe.
func (in *runInput) pipe() (stdin *os.File, release func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	over := make(chan struct{})
	go func() {
		defer w.Close()
		if _, err := w.Write(in.spec); err != nil {
			return
		}
		select {
		case <-in.stop:
		case <-over:
		}
	}()
	var once sync.Once
	return r, func() {
		once.Do(func() {
			close(over)
			r.Close()
		})
	}, nil
}
