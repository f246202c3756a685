package gateway

import (
	"fmt"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// TestRefusedAfterPastRoom: the refusals after a mark include the count of
// targets past the table's room only when one of them was refused after the
// mark, and a target in the table refused again after it.
func TestRefusedAfterPastRoom(t *testing.T) {
	a := NewAudit(100, nil)
	refuse := func(host string) {
		a.Add(control.Record{Kind: "connect", Host: host, Port: 443, Reason: "not in the allowlist"})
	}
	for i := range control.MaxRefusals + 3 {
		refuse(fmt.Sprintf("h%d.test", i))
	}
	m := a.RefusalMark()
	if m.After != uint64(control.MaxRefusals+3) {
		t.Fatalf("mark %+v", m)
	}
	if rs := a.RefusedAfter(m); len(rs) != 0 {
		t.Errorf("nothing after the mark, got %+v", rs)
	}
	refuse("h0.test")
	rs := a.RefusedAfter(m)
	if len(rs) != 1 || rs[0].Host != "h0.test" {
		t.Errorf("after h0 again: %+v", rs)
	}
	refuse(fmt.Sprintf("h%d.test", control.MaxRefusals+1)) // past room
	rs = a.RefusedAfter(m)
	if len(rs) != 2 || rs[1].Kind != "suppressed" {
		t.Errorf("after one past room: %+v", rs)
	}
	if rs := a.RefusedAfter(a.RefusalMark()); len(rs) != 0 {
		t.Errorf("after a fresh mark: %+v", rs)
	}
	if rs := a.RefusedAfter(control.RefusalMark{Boot: a.Boot(), After: 1<<64 - 1}); len(rs) != 0 {
		t.Errorf("after a mark past the count: %+v", rs)
	}
	if rs := a.RefusedAfter(control.RefusalMark{Boot: "other", After: 1<<64 - 1}); len(rs) != control.MaxRefusals+1 {
		t.Errorf("another run's mark: %d, want all %d", len(rs), control.MaxRefusals+1)
	}
}
