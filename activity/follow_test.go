package activity

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// collect runs a follower until want events arrived or were counted as
// missed, or the time is up; slow, when set, runs before each batch is
// taken (a reader that falls behind).
func collect(t *testing.T, f *Follower, want int, write func(), slow ...func()) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		got []Event
	)
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(evs []Event) {
			for _, fn := range slow {
				fn()
			}
			mu.Lock()
			got = append(got, evs...)
			n := int64(0)
			for _, e := range got {
				n += max(e.Missed, 1)
			}
			mu.Unlock()
			if n >= int64(want) {
				cancel()
			}
		})
	}()
	time.Sleep(50 * time.Millisecond) // the follower is up
	write()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}

// accounted checks that got is events 0..n-1 of the writer, in order, none
// twice, each either there or counted in a KindMissed note of exactly the
// events it replaces; it returns how many were missed.
func accounted(t *testing.T, got []Event, n int) int64 {
	t.Helper()
	next, missed := 0, int64(0)
	for _, e := range got {
		if e.Kind == KindMissed {
			if e.Missed <= 0 {
				t.Fatalf("a missed note of %d events", e.Missed)
			}
			next += int(e.Missed)
			missed += e.Missed
			continue
		}
		if e.Args != strconv.Itoa(next) {
			t.Fatalf("event %d is %q: lost without a word, or shown twice", next, e.Args)
		}
		next++
	}
	if next != n {
		t.Fatalf("%d events read or counted, want %d", next, n)
	}
	return missed
}

// A follower gives every event written after it started, in order, across
// rotations, none twice; whatever rotated away before it could read it (a
// machine under load) is counted, exactly, where it was. The test ends
// when every event is read or counted, so a slow machine makes it slower,
// never wrong: run it under load (GOMAXPROCS=1 beside busy loops) and it
// passes, where it used to time out at 1,854 of 2,000.
func TestFollowAcrossRotation(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			if poll {
				defer func(old bool) { notify = old }(notify)
				notify = false
			}
			dir := t.TempDir()
			// Notified, it reads at each write; polled, a whole file
			// may be written between two looks.
			rec := Record{Dir: dir, Sandbox: "live", MaxBytes: 16 << 10}
			if poll {
				rec.MaxBytes = 256 << 10
			}
			// History written before it started is not shown.
			for range 30 {
				if err := rec.Append(Event{Time: time.Now().Add(-time.Hour), Kind: KindCall, Args: "old"}); err != nil {
					t.Fatal(err)
				}
			}
			const n = 2000
			got := collect(t, &Follower{Dir: dir, Since: time.Now()}, n, func() {
				for i := range n {
					if err := rec.Append(Event{Kind: KindCall, Tool: "bash", Args: strconv.Itoa(i)}); err != nil {
						t.Error(err)
					}
					if i%200 == 0 {
						time.Sleep(5 * time.Millisecond)
					}
				}
			})
			missed := accounted(t, got, n)
			t.Logf("%d read, %d counted as missed", int64(n)-missed, missed)
		})
	}
}

// A reader stalled while the record rotates many times (watch into a pipe
// nobody reads) gets what its open file and the file before still hold,
// and a note of exactly how many it missed, in their place.
func TestFollowStalledReader(t *testing.T) {
	dir := t.TempDir()
	rec := Record{Dir: dir, Sandbox: "fast", MaxBytes: 8 << 10}
	const n = 2100
	stall := make(chan struct{})
	first := true
	got := collect(t, &Follower{Dir: dir, Since: time.Now()}, n, func() {
		for i := range n {
			if err := rec.Append(Event{Kind: KindCall, Tool: "read", Args: strconv.Itoa(i), Error: "refused"}); err != nil {
				t.Error(err)
			}
		}
		close(stall)
	}, func() {
		if first {
			first = false
			<-stall // the first batch waits until every event is written
		}
	})
	missed := accounted(t, got, n)
	if missed == 0 {
		t.Errorf("a reader stalled through %d rotations missed nothing: the test did not stall it", n/40)
	}
	t.Logf("%d read, %d counted as missed", int64(n)-missed, missed)
}

// A follower of every sandbox picks up a record that appears later; one of
// named sandboxes sees only theirs; Since shows what came after it.
func TestFollowNewRecordsNamesSince(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	a := Record{Dir: dir, Sandbox: "a"}
	if err := a.Append(Event{Time: start.Add(-time.Minute), Kind: KindCall, Args: "before"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(Event{Time: start.Add(-time.Second), Kind: KindCall, Args: "a0"}); err != nil {
		t.Fatal(err)
	}
	write := func() {
		for _, s := range []string{"b", "a", "c"} {
			if err := (Record{Dir: dir, Sandbox: s}).Append(Event{Kind: KindPause, Args: s + "1"}); err != nil {
				t.Error(err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	got := collect(t, &Follower{Dir: dir, Since: start.Add(-2 * time.Second)}, 4, write)
	var args []string
	for _, e := range got {
		args = append(args, e.Args)
	}
	if fmt.Sprint(args) != "[a0 b1 a1 c1]" {
		t.Errorf("every sandbox: %v, want [a0 b1 a1 c1]", args)
	}
	got = collect(t, &Follower{Dir: dir, Names: []string{"c"}, Since: time.Now()}, 1, func() {
		write()
	})
	if len(got) != 1 || got[0].Sandbox != "c" {
		t.Errorf("named c: %v", got)
	}
}

// A reader that fell behind by a whole file (the record rotated twice since
// it last read) still gets every event, from the older file; one three
// files behind is told exactly how many it missed.
func TestFollowRotationsBehind(t *testing.T) {
	for _, rotations := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(rotations), func(t *testing.T) {
			dir := t.TempDir()
			rec := Record{Dir: dir, Sandbox: "fast", MaxBytes: 4 << 10}
			if err := rec.Append(Event{Kind: KindCall, Args: "0"}); err != nil {
				t.Fatal(err)
			}
			s := &follow{f: &Follower{Dir: dir}, tails: map[string]*tail{}}
			defer s.close()
			got := s.scan(nil)
			n := 1
			for r := 0; r < rotations; n++ {
				before, _ := os.Stat(rec.Path())
				if err := rec.Append(Event{Kind: KindCall, Args: strconv.Itoa(n)}); err != nil {
					t.Fatal(err)
				}
				if after, _ := os.Stat(rec.Path()); !os.SameFile(before, after) {
					r++
				}
			}
			got = s.tails["fast"].follow(got)
			missed := accounted(t, got, n)
			if (missed > 0) != (rotations > 2) {
				t.Errorf("%d rotations behind: %d missed", rotations, missed)
			}
		})
	}
}

// A record removed and begun again (its sandbox's record pruned, then a
// sandbox of that name made) numbers from 1 again: a follower shows those
// events, it does not take them for ones it read.
func TestFollowRecordBegunAgain(t *testing.T) {
	dir := t.TempDir()
	rec := Record{Dir: dir, Sandbox: "again"}
	for i := range 5 {
		if err := rec.Append(Event{Kind: KindCall, Args: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s := &follow{f: &Follower{Dir: dir}, tails: map[string]*tail{}}
	defer s.close()
	got := s.scan(nil)
	if err := os.Remove(rec.Path()); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 8; i++ {
		if err := rec.Append(Event{Kind: KindCall, Args: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got = s.tails["again"].follow(got)
	if n := accounted(t, got, 8); n != 0 {
		t.Errorf("%d counted as missed", n)
	}
}

// A follower started with Since after a flood shows the kept events older
// than the record, then a note of how many are gone, then the record.
func TestFollowSinceShowsKeptAndGap(t *testing.T) {
	dir := t.TempDir()
	rec := Record{Dir: dir, Sandbox: "since", MaxBytes: 8 << 10}
	start := time.Now()
	if err := rec.Append(Event{Kind: KindEgress, Target: "evil.example:443"}); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if err := rec.Append(Event{Kind: KindCall, Tool: "bash", Args: strconv.Itoa(i) + strings.Repeat("p", 200)}); err != nil {
			t.Fatal(err)
		}
	}
	s := &follow{f: &Follower{Dir: dir}, tails: map[string]*tail{}, since: start.Add(-time.Second)}
	defer s.close()
	got := s.scan(nil)
	if len(got) < 3 || got[0].Target != "evil.example:443" || got[1].Kind != KindMissed || got[1].Missed != got[2].Seq-2 {
		t.Fatalf("history: %d events, first %+v", len(got), got[:min(2, len(got))])
	}
}
