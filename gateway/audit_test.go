package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

func TestAuditSince(t *testing.T) {
	var mirror bytes.Buffer
	a := NewAudit(4, &mirror)
	for i := 0; i < 3; i++ {
		a.Add(control.Record{Kind: "connect", Host: "h", Allowed: true})
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
		a.Add(control.Record{Kind: "connect", Host: "h", Allowed: true})
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
	// The mirror (the engine's log) gets the first refusal of each
	// target, not every record: a sandbox cannot fill the host's disk
	// through it.
	if mirror.Len() != 0 {
		t.Fatalf("allowed records mirrored: %q", mirror.String())
	}
	for i := 0; i < 100; i++ {
		a.Add(control.Record{Kind: "connect", Host: "refused.test", Port: 443})
	}
	lines := strings.Split(strings.TrimSpace(mirror.String()), "\n")
	var r control.RefusedTarget
	if err := json.Unmarshal([]byte(lines[0]), &r); len(lines) != 1 || err != nil || r.Host != "refused.test" {
		t.Fatalf("mirror %q: %v", mirror.String(), err)
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
		a.Add(control.Record{Kind: "dns", Host: "x"})
	}
	a.Add(control.Record{Kind: "connect", Host: "allowed.example", Allowed: true})
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
	a.Add(control.Record{Kind: "dns", Host: "y"})
	if b := a.Since(a.Boot(), uint64(refusedBurst+2), 10); len(b.Records) != 1 {
		t.Errorf("after a second: %+v", b)
	}
	now = now.Add(time.Minute)
	if got := a.Refused(30 * time.Second); len(got) != 0 {
		t.Errorf("refused in the last 30 s: %d", len(got))
	}
	// Each target once, from the refusals table, which counted them all.
	if got := a.Refused(2 * time.Minute); len(got) != 2 || got[0].Host != "x" || got[1].Host != "y" {
		t.Errorf("refused in the last 2 min: %+v", got)
	}
	tab := a.Since(a.Boot(), a.seq, 10).Refusals
	if tab == nil || tab.Total != 5001 || len(tab.Entries) != 2 || tab.Entries[0].Count != 5000 {
		t.Errorf("the refusals table: %+v", tab)
	}
}

// TestAuditMemoryBound: records the sandbox makes huge (a 60 KB target,
// method, reason) are cut to a bounded size, the ring is bounded in bytes
// as well as in records, and so is a `ctl log` answer: the gateway's 256
// MiB are never the limit.
func TestAuditMemoryBound(t *testing.T) {
	g := &Gateway{Audit: NewAudit(DefaultAuditSize, nil), Resolver: failResolver{}}
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist}); err != nil {
		t.Fatal(err)
	}
	// One refused CONNECT with a 60 KB target, through the proxy.
	huge := strings.Repeat("a<", 30<<10)
	c, s := net.Pipe()
	go g.ServeConn(s)
	go func() { _, _ = io.WriteString(c, "CONNECT "+huge+":443 HTTP/1.1\r\nHost: x\r\n\r\n") }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.ReadAll(c)
	c.Close()
	recs := g.Audit.Since("", 0, 10).Records
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if b, _ := json.Marshal(recs[0]); len(b) > maxRecordJSON {
		t.Errorf("a refused CONNECT's record is %d bytes of JSON, over %d", len(b), maxRecordJSON)
	}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 1000; i++ {
		big := strings.Repeat("M", 60<<10) // each its own, as read from a connection
		g.Audit.Add(control.Record{Kind: "http", Host: big, Method: big, Reason: big, Error: big, Allowed: true})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 32<<20 {
		t.Errorf("1,000 huge records took %d MiB of the gateway's memory", grew>>20)
	}
	resp := g.ctl(control.CtlRequest{Op: "log", Max: maxBatch})
	b, _ := json.Marshal(resp)
	if len(b) > maxBatchBytes+maxRecordJSON {
		t.Errorf("a log answer is %d MiB", len(b)>>20)
	}
	if resp.Batch == nil || len(resp.Batch.Records) == 0 {
		t.Errorf("the answer holds no records: %+v", resp)
	}
}
