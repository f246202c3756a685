package recording

import (
	"strings"
	"testing"
)

// TestRecordBudgetShares checks the reservations of the record limit: a
// path sent again by a follow-up scan is reserved once, two snapshots in
// flight share what is left, and what one gives back is free again.
func TestRecordBudgetShares(t *testing.T) {
	const mib = 1 << 20
	res := &reservations{m: map[string]int64{}}
	a := &recordBudget{res: res, key: t.Name(), limit: 10 * mib, recorded: 2 * mib, paths: map[string]int64{}, written: map[string]int64{}, over: map[string]int64{}}
	b := &recordBudget{res: res, key: t.Name(), limit: 10 * mib, recorded: 2 * mib, paths: map[string]int64{}, written: map[string]int64{}, over: map[string]int64{}}
	if skip := a.admit("x", 5*mib); skip != nil {
		t.Fatalf("x: %v", skip)
	}
	if skip := a.admit("x", 5*mib); skip != nil {
		t.Fatalf("x again: %v", skip)
	}
	if a.taken != 5*mib {
		t.Errorf("taken %d, want 5 MiB", a.taken)
	}
	skip := b.admit("y", 4*mib)
	if skip == nil {
		t.Fatal("y fits beside x, over the limit")
	}
	if !strings.Contains(skip.Reason, "over the record limit of 10 MiB (7 MiB recorded so far)") || !strings.Contains(skip.Reason, `record = "20m"`) {
		t.Errorf("reason %q", skip.Reason)
	}
	if b.over["y"] != 4*mib {
		t.Errorf("y not kept for later: %v", b.over)
	}
	if skip := b.admit("z", 3*mib); skip != nil {
		t.Fatalf("z: %v", skip)
	}
	a.release()
	b.release()
	if n := res.m[t.Name()]; n != 0 {
		t.Errorf("%d bytes still reserved", n)
	}
	if skip := b.admit("y", 4*mib); skip != nil {
		t.Fatalf("y once the others gave back: %v", skip)
	}
	b.release()
}
