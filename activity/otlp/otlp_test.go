package otlp

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/activity/otlp/otlptest"
	"github.com/litterbox-dev/litterbox/gateway/control"
)

// session is an MCP session's events as a record holds them: a bash call
// whose output holds a file's contents, a refused connection, a chain
// that breaks.
func session() []activity.Event {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	three := 3
	return []activity.Event{
		{Time: t0, Seq: 1, Sandbox: "fix-login", Kind: activity.KindCreate, By: activity.ByMCP, PID: 42, Message: "image busybox:latest", Ms: 1100},
		{Time: t0.Add(time.Second), Seq: 2, Sandbox: "fix-login", Kind: activity.KindCall, By: activity.ByMCP, Tool: "write", Args: "a.txt (23 bytes)", Start: t0.Add(500 * time.Millisecond), Ms: 500, Commit: "66c963020c11aaaabbbbccccddddeeeeffff0000", Files: []string{"a.txt"}},
		{Time: t0.Add(2 * time.Second), Seq: 3, Sandbox: "fix-login", Kind: activity.KindCall, By: activity.ByMCP, Tool: "bash", Args: "cat a.txt; exit 3", Start: t0.Add(time.Second), Ms: 1000, Exit: &three, Output: "FILE-CONTENT-7f3a\n"},
		{Time: t0.Add(3 * time.Second), Seq: 4, Sandbox: "fix-login", Kind: activity.KindEgress, By: activity.ByMCP, Target: "pypi.org:443: not allowed"},
		{Time: t0.Add(4 * time.Second), Seq: 5, Sandbox: "fix-login", Kind: activity.KindBroken, Message: "it does not follow the line before it"},
	}
}

// TestExportDecodesWithOTLPDefinitions: what the exporter posts is read by
// OpenTelemetry's own definitions, strictly, and holds each event, in
// order, with its sandbox, actor, operation, duration, exit code and
// commit; never a call's output.
func TestExportDecodesWithOTLPDefinitions(t *testing.T) {
	c := otlptest.Start(nil, nil)
	defer c.Close()
	var errs bytes.Buffer
	x := &Exporter{URL: c.URL, Errs: &errs}
	if err := x.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := session()
	x.Add(Records("/home/me/webapp", evs[:2], time.Now()))
	x.Add(Records("/home/me/webapp", evs[2:], time.Now()))
	if n := x.Close(context.Background()); n != 0 {
		t.Fatalf("%d records left unsent", n)
	}
	recs, raw, decodeErrs := c.Received()
	if len(decodeErrs) > 0 {
		t.Fatalf("the collector could not read what was sent: %v", decodeErrs)
	}
	if errs.Len() > 0 {
		t.Errorf("stderr: %s", errs.String())
	}
	want := []string{
		"litterbox.create INFO sandbox=fix-login by=mcp | created  image busybox:latest  1.1s  (by mcp)",
		"litterbox.call INFO sandbox=fix-login by=mcp tool=write commit=66c963020c11aaaabbbbccccddddeeeeffff0000 | write  a.txt (23 bytes)  500ms  -> 66c963020c11 (1 file)",
		"litterbox.call INFO sandbox=fix-login by=mcp tool=bash exit_code=3 | bash  cat a.txt; exit 3  exit 3  1.0s",
		"litterbox.egress WARN sandbox=fix-login by=mcp target=pypi.org:443: not allowed | refused connection to pypi.org:443: not allowed  (by mcp)",
		"litterbox.broken ERROR sandbox=fix-login by= | ! the record is broken at event 5: it does not follow the line before it (litterbox audit verify fix-login checks all of it)",
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if got := otlptest.Line(r); got != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want[i])
		}
		if got := r.GetTimeUnixNano(); got != uint64(evs[i].Time.UnixNano()) {
			t.Errorf("record %d: time %d, want %d", i, got, evs[i].Time.UnixNano())
		}
		if got := otlptest.Attr(r, "litterbox.seq"); got != []string{"1", "2", "3", "4", "5"}[i] {
			t.Errorf("record %d: seq %s", i, got)
		}
	}
	if got := otlptest.Attr(recs[2], "litterbox.duration_ms"); got != "1000" {
		t.Errorf("bash's duration_ms %q, want 1000", got)
	}
	if got := otlptest.Attr(recs[1], "litterbox.files"); got != "a.txt" {
		t.Errorf("write's files %q", got)
	}
	if got := otlptest.Attr(recs[0], "litterbox.repo"); got != "/home/me/webapp" {
		t.Errorf("repo %q", got)
	}
	for _, b := range raw {
		if bytes.Contains(b, []byte("FILE-CONTENT-7f3a")) {
			t.Errorf("a call's output was sent: %s", b)
		}
	}
}

// TestFormatLinesDecode: each line of --format otlp-json is an export
// request the definitions read.
func TestFormatLinesDecode(t *testing.T) {
	line := Encode(Records("/r", session(), time.Now()))
	if bytes.ContainsRune(line, '\n') {
		t.Fatal("a request spans lines")
	}
	req, err := otlptest.Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(otlptest.Records(req)); n != 5 {
		t.Fatalf("%d records, want 5", n)
	}
	res := req.GetResourceLogs()[0].GetResource().GetAttributes()
	if res[0].GetKey() != "service.name" || res[0].GetValue().GetStringValue() != "litterbox" {
		t.Errorf("resource %v, want service.name litterbox first", res)
	}
}

// TestRetriesThenSends: a collector that answers 503 twice gets the
// records on the third try, once, after waits that double.
func TestRetriesThenSends(t *testing.T) {
	c := otlptest.Start(func(n int) int {
		if n <= 2 {
			return 503
		}
		return 0
	}, nil)
	defer c.Close()
	var mu sync.Mutex
	var waits []time.Duration
	var errs bytes.Buffer
	x := &Exporter{URL: c.URL, Errs: &errs, sleep: func(_ context.Context, d time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return true
	}}
	x.Add(Records("/r", session(), time.Now()))
	x.Close(context.Background())
	recs, _, _ := c.Received()
	if len(recs) != 5 {
		t.Fatalf("%d records received, want 5 once", len(recs))
	}
	// Retry-After: 0 is no ask: the exporter's own waits.
	if len(waits) != 2 || waits[0] != FirstBackoff || waits[1] != 2*FirstBackoff {
		t.Errorf("waits %v, want %v then %v", waits, FirstBackoff, 2*FirstBackoff)
	}
	if errs.Len() > 0 {
		t.Errorf("stderr: %s", errs.String())
	}
}

// TestUnreachableCollector: Check says the collector does not answer and
// what to do; records for one that stays away are dropped after Tries,
// said, and Close returns.
func TestUnreachableCollector(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + LogsPath
	l.Close()
	var errs bytes.Buffer
	tries := 0
	x := &Exporter{URL: url, Errs: &errs, sleep: func(context.Context, time.Duration) bool { tries++; return true }}
	err = x.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "start it, or check the URL") {
		t.Fatalf("Check: %v", err)
	}
	x.Add(Records("/r", session(), time.Now()))
	x.Close(context.Background())
	if tries != Tries-1 {
		t.Errorf("waited %d times, want %d", tries, Tries-1)
	}
	if !strings.Contains(errs.String(), "5 events were not sent: the OpenTelemetry collector at "+url+" does not answer") ||
		!strings.Contains(errs.String(), "(after 5 tries)") {
		t.Errorf("stderr: %s", errs.String())
	}
}

// TestWrongPath: a URL a receiver does not take logs at is said so, at
// once, without retrying.
func TestWrongPath(t *testing.T) {
	c := otlptest.Start(nil, nil)
	defer c.Close()
	x := &Exporter{URL: strings.TrimSuffix(c.URL, LogsPath) + "/v1/traces"}
	err := x.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "404 Not Found: an OTLP/HTTP receiver takes logs at /v1/logs") {
		t.Fatalf("Check: %v", err)
	}
}

// TestQueueBounded: past MaxQueued, records are dropped and counted, not
// held.
func TestQueueBounded(t *testing.T) {
	block := make(chan struct{})
	c := otlptest.Start(func(int) int { <-block; return 0 }, nil)
	defer c.Close()
	var errs bytes.Buffer
	x := &Exporter{URL: c.URL, Errs: &errs, limit: 100}
	one := Records("/r", session()[:1], time.Now())
	for range 100 + MaxBatch + 7 {
		x.Add(one)
	}
	close(block)
	x.Close(context.Background())
	recs, _, _ := c.Received()
	// The first request took what was queued when it went (up to
	// MaxBatch); the queue held 100 more, no others.
	if len(recs) > 100+MaxBatch || len(recs) < 100 {
		t.Errorf("%d records received, want at most %d", len(recs), 100+MaxBatch)
	}
	if !strings.Contains(errs.String(), "events were not sent to "+c.URL+": more than 100 waited") {
		t.Errorf("stderr: %s", errs.String())
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://localhost:4318":                "http://localhost:4318/v1/logs",
		"http://localhost:4318/":               "http://localhost:4318/v1/logs",
		"https://otel.example.com/v1/logs":     "https://otel.example.com/v1/logs",
		"https://otel.example.com/custom/logs": "https://otel.example.com/custom/logs",
		"localhost:4318":                       "",
		"ftp://x":                              "",
		"":                                     "",
	} {
		got, err := Endpoint(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestHeaders(t *testing.T) {
	h, err := Headers("Authorization=Bearer%20abc, x-team = red ")
	if err != nil || h.Get("Authorization") != "Bearer abc" || h.Get("X-Team") != "red" {
		t.Errorf("Headers: %v, %v", h, err)
	}
	if _, err := Headers("novalue"); err == nil || strings.Contains(err.Error(), "novalue") {
		t.Errorf("a bad entry: %v (must not quote it: it may be a token)", err)
	}
}

// TestConnectionsDecode: the gateway's records go as litterbox.connection
// records, refused ones WARN, with the host, the port, the verdict and the
// bytes, and the names of secrets, read by the definitions.
func TestConnectionsDecode(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	rs := []control.Record{
		{Seq: 7, Time: t0, Kind: "connect", Host: "api.example.com", Port: 443, Addr: "93.184.216.34:443", Allowed: true, Reason: "api.example.com", Secret: "api", Sent: 120, Received: 4096, DurationMS: 35.4},
		{Seq: 8, Time: t0.Add(time.Second), Kind: "http", Host: "pypi.org", Port: 80, Reason: "not in the allowlist"},
	}
	req, err := otlptest.Decode(Encode(Connections("/r", "fix-login", rs, time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	recs := otlptest.Records(req)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for key, want := range map[string]string{"litterbox.host": "api.example.com", "litterbox.port": "443", "litterbox.allowed": "true", "litterbox.secret": "api", "litterbox.sent": "120", "litterbox.received": "4096", "litterbox.duration_ms": "35", "litterbox.gateway_seq": "7"} {
		if got := otlptest.Attr(recs[0], key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if recs[0].GetEventName() != "litterbox.connection" || recs[0].GetSeverityText() != "INFO" || recs[1].GetSeverityText() != "WARN" {
		t.Errorf("names and severities: %s %s, %s", recs[0].GetEventName(), recs[0].GetSeverityText(), recs[1].GetSeverityText())
	}
	if got := otlptest.Attr(recs[1], "litterbox.allowed"); got != "false" {
		t.Errorf("refused: allowed %q", got)
	}
	if body := recs[1].GetBody().GetStringValue(); !strings.Contains(body, "http  pypi.org:80  refused  not in the allowlist") {
		t.Errorf("body %q", body)
	}
}

// BenchmarkEncode is the cost of one full export request (MaxBatch
// records, a bash call's fields each) made from events: what watch
// --otlp adds per event read.
func BenchmarkEncode(b *testing.B) {
	e := session()[2]
	evs := make([]activity.Event, MaxBatch)
	for i := range evs {
		evs[i] = e
	}
	b.ReportAllocs()
	for b.Loop() {
		Encode(Records("/home/me/webapp", evs, time.Now()))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*MaxBatch), "ns/event")
}
