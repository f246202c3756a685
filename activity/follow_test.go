package activity

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// collect runs a follower until want events arrived or the time is up.
func collect(t *testing.T, f *Follower, want int, write func()) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		got []Event
	)
	done := make(chan error, 1)
	go func() {
		done <- f.Run(ctx, func(evs []Event) {
			mu.Lock()
			got = append(got, evs...)
			n := len(got)
			mu.Unlock()
			if n >= want {
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

// A follower sees every event written after it started, in order, across
// rotations, and none twice.
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
			if len(got) != n {
				t.Fatalf("got %d events, want %d", len(got), n)
			}
			for i, e := range got {
				if e.Args != strconv.Itoa(i) {
					t.Fatalf("event %d is %q", i, e.Args)
				}
			}
		})
	}
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
// it last read) still gets every event, from the older file.
func TestFollowTwoRotationsBehind(t *testing.T) {
	dir := t.TempDir()
	rec := Record{Dir: dir, Sandbox: "fast", MaxBytes: 4 << 10}
	if err := rec.Append(Event{Kind: KindCall, Args: "0"}); err != nil {
		t.Fatal(err)
	}
	s := &follow{f: &Follower{Dir: dir}, tails: map[string]*tail{}}
	defer s.close()
	got := s.scan(nil)
	rotations := 0
	for i := 1; rotations < 2; i++ {
		before, _ := os.Stat(rec.Path())
		if err := rec.Append(Event{Kind: KindCall, Args: strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if after, _ := os.Stat(rec.Path()); !os.SameFile(before, after) {
			rotations++
		}
	}
	missed := false
	got = s.tails["fast"].follow(got, func(string) { missed = true })
	for i, e := range got {
		if e.Args != strconv.Itoa(i) {
			t.Fatalf("event %d is %q", i, e.Args)
		}
	}
	if missed || len(got) < 20 {
		t.Errorf("%d events, missed %v", len(got), missed)
	}
}
