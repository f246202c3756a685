package recording

import (
	"bytes"
	"context"
	"io"
	"strconv"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// Prepare installs the scanner in h's sandbox and starts its change
// journal: what a first snapshot would do, without its scan (a sandbox
// just made holds its branch's commit: nothing is there to commit) and
// without the exec that finds the scanner missing.
func (rec *Recorder) Prepare(ctx context.Context, h *api.Handle) error {
	bin, err := rec.guest.ScannerFor(ctx, h)
	if err != nil {
		return err
	}
	if err := rec.guest.InstallScanner(ctx, h, bin); err != nil {
		return err
	}
	if !rec.NoJournal {
		rec.startJournal(ctx, h, bin)
	}
	return nil
}

// FollowQuiet runs the scanner's follower of the change journal in h's
// sandbox (scanner.Follow), as the watcher's user so the agent cannot stop
// it, until stop is closed or ctx ends, and calls quiet at the end of each
// quiet period of /src. It returns when the follower ends: an error when it
// could not run or failed (no journal yet, a scanner of an earlier
// litterbox that has no follower), nil once stopped. The journal must run
// (a snapshot of h with the journal on starts it); a change since h's last
// snapshot counts.
func (rec *Recorder) FollowQuiet(ctx context.Context, h *api.Handle, o wire.QuietOptions, stop <-chan struct{}, quiet func()) error {
	bin, err := rec.guest.ScannerFor(ctx, h)
	if err != nil {
		return err
	}
	// Its stdin closing ends it: an exec's process outlives the client
	// that a context kills.
	in, closeIn := io.Pipe()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		case <-done:
		}
		closeIn.Close()
	}()
	_, since := state.ReadSince(sincePath(h))
	uid := strconv.Itoa(wire.WatchUID)
	_, err = rec.Common.Exec(ctx, provider.ExecRequest{
		Ref: h.Ref, User: uid + ":" + uid, Kind: runner.Stream, Stdin: in, Stdout: lineCalls(quiet),
		Cmd: []string{bin.Path, "scan-internal", "quiet", "--quiet", o.Quiet.String(), "--most", o.Most.String(), "--since", since},
	})
	return err
}

// lineCalls is a writer that calls f once per line written.
type lineCalls func()

func (f lineCalls) Write(p []byte) (int, error) {
	for range bytes.Count(p, []byte{'\n'}) {
		f()
	}
	return len(p), nil
}
