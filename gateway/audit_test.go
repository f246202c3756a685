package gateway

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAuditSince(t *testing.T) {
	var mirror bytes.Buffer
	a := NewAudit(4, &mirror)
	for i := 0; i < 3; i++ {
		a.Add(Record{Kind: "connect", Host: "h", Allowed: true})
	}
	b := a.Since("", 0, 10)
	if len(b.Records) != 3 || b.Last != 3 || b.Lost != 0 || b.Boot != a.Boot() {
		t.Fatalf("%+v", b)
	}
	b = a.Since(a.Boot(), 2, 10)
	if len(b.Records) != 1 || b.Records[0].Seq != 3 {
		t.Fatalf("after 2: %+v", b)
	}
	// Past the ring: the oldest are lost, and the answer says how many.
	for i := 0; i < 5; i++ {
		a.Add(Record{Kind: "connect", Host: "h", Allowed: true})
	}
	b = a.Since(a.Boot(), 1, 10)
	if b.Lost != 3 || len(b.Records) != 4 || b.Records[0].Seq != 5 || b.Records[3].Seq != 8 {
		t.Fatalf("wrapped: %+v", b)
	}
	b = a.Since(a.Boot(), 6, 1)
	if len(b.Records) != 1 || b.Records[0].Seq != 7 {
		t.Fatalf("max: %+v", b)
	}
	// Another run's cursor: everything kept, and the loss is unknown.
	b = a.Since("another", 6, 10)
	if b.Lost != -1 || len(b.Records) != 4 {
		t.Fatalf("other boot: %+v", b)
	}
	lines := strings.Split(strings.TrimSpace(mirror.String()), "\n")
	if len(lines) != 8 {
		t.Fatalf("mirror: %d lines", len(lines))
	}
	var r Record
	if err := json.Unmarshal([]byte(lines[7]), &r); err != nil || r.Seq != 8 {
		t.Fatalf("mirror line %q: %v", lines[7], err)
	}
}

// TestAuditFlood: a flood of refusals is counted past the rate, while what
// is allowed is always recorded, and the count is recorded on Flush.
func TestAuditFlood(t *testing.T) {
	a := NewAudit(1000, nil)
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	a.refilled = now
	for i := 0; i < 5000; i++ {
		a.Add(Record{Kind: "dns", Host: "x"})
	}
	a.Add(Record{Kind: "connect", Host: "allowed.example", Allowed: true})
	a.Flush()
	b := a.Since("", 0, 1000)
	if len(b.Records) != refusedBurst+2 {
		t.Fatalf("%d records", len(b.Records))
	}
	if r := b.Records[refusedBurst]; r.Host != "allowed.example" {
		t.Errorf("the allowed one: %+v", r)
	}
	if r := b.Records[refusedBurst+1]; r.Kind != "suppressed" || r.Suppressed != 5000-refusedBurst {
		t.Errorf("the count: %+v", r)
	}
	now = now.Add(time.Second)
	a.Add(Record{Kind: "dns", Host: "y"})
	if b := a.Since(a.Boot(), uint64(refusedBurst+2), 10); len(b.Records) != 1 {
		t.Errorf("after a second: %+v", b)
	}
	now = now.Add(time.Minute)
	if got := a.Refused(30 * time.Second); len(got) != 0 {
		t.Errorf("refused in the last 30 s: %d", len(got))
	}
	if got := a.Refused(2 * time.Minute); len(got) != refusedBurst+2 {
		t.Errorf("refused in the last 2 min: %d", len(got))
	}
}
