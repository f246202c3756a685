package scanner

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// Quiet periods: `litterbox run` commits what a harness changes once the
// tree goes quiet, not per write and not on a fixed clock. `quiet` runs in
// the sandbox for the length of a run, asks the change journal's watcher
// every wire.QuietPoll what changed, and writes a line ("quiet\n") each time
// /src has had no change for Quiet after one, or has kept changing for
// Most since the first change not yet told (so a tree written without a
// pause is still committed). The host snapshots at each line. It ends when
// its stdin closes (the run is over) or its stdout does, and fails when the
// watcher does not answer: the host then snapshots on a clock instead.

// Follow writes a line to out at the end of each quiet period of the
// journal's tree (see above) until stop is closed, out fails, or the
// watcher fails to answer. since is the journal's token of the last
// snapshot: what changed after it and before Follow started counts ("" or
// another watcher's token: everything may have).
func Follow(out io.Writer, o wire.QuietOptions, since string, stop <-chan struct{}) error {
	token := since
	var first, last time.Time // of the changes not told; zero: none
	t := time.NewTicker(wire.QuietPoll)
	defer t.Stop()
	for {
		rep, err := askJournal(token)
		if err != nil {
			return fmt.Errorf("litterbox-scan quiet: no change journal: %w", err)
		}
		token = rep.token
		now := time.Now()
		if rep.full || len(rep.dirs) > 0 {
			if first.IsZero() {
				first = now
			}
			last = now
		}
		if !first.IsZero() && (now.Sub(last) >= o.Quiet || now.Sub(first) >= o.Most) {
			if _, err := io.WriteString(out, "quiet\n"); err != nil {
				return nil
			}
			first = time.Time{}
		}
		select {
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

// quietMain runs `quiet --quiet D --most D`: Follow to stdout until stdin
// ends.
func quietMain(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("litterbox-scan quiet", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := wire.QuietOptions{}
	fs.DurationVar(&o.Quiet, "quiet", 500*time.Millisecond, "how long the tree must go without a change")
	fs.DurationVar(&o.Most, "most", 2*time.Second, "the longest wait from the first change")
	since := fs.String("since", "", "the journal's token of the last snapshot")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("litterbox-scan: %w", err)
	}
	if o.Quiet < wire.QuietPoll || o.Most < o.Quiet {
		return fmt.Errorf("litterbox-scan quiet: want %s <= quiet <= most, not %s and %s", wire.QuietPoll, o.Quiet, o.Most)
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(stop)
	}()
	return Follow(stdout, o, *since, stop)
}
