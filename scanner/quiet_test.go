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
// given is told; then a burst of 20 writes over a second is one line; a
// tree written without a pause for longer than Most is told about every
// Most, not once and not per write; no change, no line. (How soon a line
// comes is the bench's: run's write-to-branch row.)
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
		done <- Follow(pw, wire.QuietOptions{Quiet: time.Second, Most: 4 * time.Second}, token, stop)
	}()
	lines := make(chan struct{}, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- struct{}{}
		}
		close(lines)
	}()
	count := func(within time.Duration) (n int) {
		deadline := time.After(within)
		for {
			select {
			case <-lines:
				n++
			case <-deadline:
				return n
			}
		}
	}
	f := filepath.Join(root, "f")
	write := func(n int, every time.Duration) {
		for i := range n {
			if err := os.WriteFile(f, []byte{byte(i)}, 0o644); err != nil {
				t.Error(err)
			}
			time.Sleep(every)
		}
	}
	if n := count(2 * time.Second); n != 1 {
		t.Fatalf("%d lines for the change before it started; want 1", n)
	}
	if n := count(time.Second); n != 0 {
		t.Fatalf("%d lines without a change; want none", n)
	}
	write(20, 50*time.Millisecond)
	if n := count(2500 * time.Millisecond); n != 1 {
		t.Fatalf("20 writes over 1s: %d lines, want 1", n)
	}
	// 9 s of writes 200 ms apart, never a second apart: told at Most (4 s)
	// and again, then once quiet; not once, not per write (45).
	go write(45, 200*time.Millisecond)
	if n := count(11 * time.Second); n < 2 || n > 4 {
		t.Fatalf("9s of writes with Most 4s: %d lines, want 2 to 4", n)
	}
	if n := count(1500 * time.Millisecond); n != 0 {
		t.Fatalf("%d lines once quiet; want none", n)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
