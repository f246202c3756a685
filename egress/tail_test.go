package egress

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// TestTailAcrossRotation: a Tail returns each record the store gains once,
// in order, through rotations; started with no Since it skips what was
// there, with one it returns what came since.
func TestTailAcrossRotation(t *testing.T) {
	s := Store{File: filepath.Join(t.TempDir(), "net.jsonl"), Max: 600}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	seq := uint64(0)
	add := func(n int) {
		b := control.Batch{Boot: "b1"}
		for range n {
			seq++
			b.Records = append(b.Records, control.Record{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), Kind: "connect", Host: "example.com", Port: 443, Allowed: seq%2 == 0})
		}
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func(rs []control.Record) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.Seq)
		}
		return out
	}
	next := func(tl *Tail) []uint64 {
		rs, err := tl.Next()
		if err != nil {
			t.Fatal(err)
		}
		return seqs(rs)
	}
	fromNow := &Tail{Store: s}
	since := &Tail{Store: s, Since: t0.Add(2 * time.Second)}
	if got := next(fromNow); got != nil {
		t.Fatalf("before anything: %v", got)
	}
	add(3)
	fresh := &Tail{Store: s}
	if got := next(fresh); got != nil {
		t.Errorf("a tail started after 3 records returned %v, want none", got)
	}
	if got := next(since); len(got) != 2 || got[0] != 2 {
		t.Errorf("since the 2nd: %v, want [2 3]", got)
	}
	var all []uint64
	all = append(all, next(fromNow)...)
	for range 6 { // ~150 bytes a record: each add of 2 rotates in turn
		add(2)
		all = append(all, next(fromNow)...)
		if got := next(fresh); len(got) != 2 || got[0] != seq-1 || got[1] != seq {
			t.Errorf("after 2 more: %v, want [%d %d]", got, seq-1, seq)
		}
	}
	if _, err := os.Stat(s.File + ".1"); err != nil {
		t.Fatalf("the store never rotated: %v", err)
	}
	for i, q := range all {
		if q != uint64(i+1) {
			t.Fatalf("read %v, want 1 to %d once each, in order", all, seq)
		}
	}
	if len(all) != int(seq) {
		t.Fatalf("read %d records, want %d", len(all), seq)
	}
}
