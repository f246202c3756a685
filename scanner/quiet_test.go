//go:build linux

package scanner

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// TestFollowTellsOneQuietPeriodPerBurst: a change since the token it is
// given is told; then a burst of 20 writes over a
// second is one line, told within the quiet period of its last write; a
// tree written without a pause for longer than Most is told every Most;
// no change, no line.
func TestFollowTellsOneQuietPeriodPerBurst(t *testing.T) {
	root := t.TempDir()
	startWatcher(t, root)
	rep, err := askJournal("")
	if err != nil {
		t.Fatal(err)
	}
	token := rep.token
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	done := make(chan error, 1)
	// (a change before it started, since the token it is given, counts)
	if err := os.WriteFile(filepath.Join(root, "before"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		done <- Follow(pw, wire.QuietOptions{Quiet: 300 * time.Millisecond, Most: 1500 * time.Millisecond}, token, stop)
	}()
	lines := make(chan time.Time, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- time.Now()
		}
		close(lines)
	}()
	count := func(within time.Duration) (n int, at []time.Time) {
		deadline := time.After(within)
		for {
			select {
			case l := <-lines:
				n++
				at = append(at, l)
			case <-deadline:
				return n, at
			}
		}
	}
	f := filepath.Join(root, "f")
	write := func(n int, every time.Duration) time.Time {
		for i := range n {
			if err := os.WriteFile(f, []byte{byte(i)}, 0o644); err != nil {
				t.Error(err)
			}
			time.Sleep(every)
		}
		return time.Now()
	}
	if n, _ := count(time.Second); n != 1 {
		t.Fatalf("%d lines for the change before it started; want 1", n)
	}
	if n, _ := count(500 * time.Millisecond); n != 0 {
		t.Fatalf("%d lines without a change; want none", n)
	}
	end := write(20, 50*time.Millisecond)
	n, at := count(time.Second)
	if n != 1 {
		t.Fatalf("20 writes over 1s: %d lines, want 1", n)
	}
	if d := at[0].Sub(end); d > 300*time.Millisecond+3*wire.QuietPoll {
		t.Errorf("told %s after the last write; want within the quiet period (300ms) and a poll or two", d)
	}
	// 3.2 s of writes, never 300 ms apart: told at Most (1.5 s), then again.
	go write(32, 100*time.Millisecond)
	if n, _ := count(3700 * time.Millisecond); n < 2 || n > 3 {
		t.Fatalf("3.2s of writes with Most 1.5s: %d lines, want 2 or 3", n)
	}
	if n, _ := count(500 * time.Millisecond); n != 0 {
		t.Fatalf("%d lines once quiet; want none", n)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
