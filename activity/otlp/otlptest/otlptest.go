// Package otlptest is an OTLP/HTTP logs receiver for tests: it decodes
// every request with OpenTelemetry's own protobuf definitions
// (go.opentelemetry.io/proto/slim/otlp) through protojson, strictly (an
// unknown field, a wrong type or a malformed number fails the request with
// 400, as a collector would refuse it), and keeps what it received. Only
// tests import it: the litterbox binary links none of it.
package otlptest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	collogs "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	common "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logs "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Decode is an OTLP/JSON ExportLogsServiceRequest, read strictly.
func Decode(body []byte) (*collogs.ExportLogsServiceRequest, error) {
	req := &collogs.ExportLogsServiceRequest{}
	if err := protojson.Unmarshal(body, req); err != nil {
		return nil, err
	}
	return req, nil
}

// Records are the log records of req, in order.
func Records(req *collogs.ExportLogsServiceRequest) []*logs.LogRecord {
	var out []*logs.LogRecord
	for _, rl := range req.GetResourceLogs() {
		for _, sl := range rl.GetScopeLogs() {
			out = append(out, sl.GetLogRecords()...)
		}
	}
	return out
}

// Attr is the value of r's attribute key, as text ("" when absent): a
// string as it is, an integer in decimal, a bool as true or false, an
// array as its values joined by commas.
func Attr(r *logs.LogRecord, key string) string {
	for _, kv := range r.GetAttributes() {
		if kv.GetKey() == key {
			return text(kv.GetValue())
		}
	}
	return ""
}

func text(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *common.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *common.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, text(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// Line is r on one line, for a script to read: its event name, severity,
// sandbox, actor, tool, exit code and commit where it has them, and its
// body.
func Line(r *logs.LogRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s sandbox=%s by=%s", r.GetEventName(), r.GetSeverityText(), Attr(r, "litterbox.sandbox"), Attr(r, "litterbox.actor"))
	for _, k := range []string{"tool", "exit_code", "commit", "target"} {
		if v := Attr(r, "litterbox."+k); v != "" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	fmt.Fprintf(&b, " | %s", r.GetBody().GetStringValue())
	return b.String()
}

// Collector is a running receiver.
type Collector struct {
	// URL is where it takes logs: the server's address and /v1/logs.
	URL    string
	server *httptest.Server

	mu      sync.Mutex
	records []*logs.LogRecord
	raw     [][]byte
	errs    []error
	// answer, when set, is the status to answer the nth request (from
	// 1) with instead of taking it; 0 takes it.
	answer func(n int) int
	n      int
	// each, when set, is called with each record taken, in order, and
	// with the error of each request that does not decode.
	each func(*logs.LogRecord, []byte, error)
}

// Start starts a collector; answer (may be nil) says which requests to
// refuse with which status, each (may be nil) sees each record taken
// (and the request's body) or the error of a request that did not decode.
func Start(answer func(n int) int, each func(r *logs.LogRecord, raw []byte, err error)) *Collector {
	c := &Collector{answer: answer, each: each}
	c.server = httptest.NewServer(http.HandlerFunc(c.serve))
	c.URL = c.server.URL + "/v1/logs"
	return c
}

// Close stops it.
func (c *Collector) Close() { c.server.Close() }

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	switch {
	case r.URL.Path != "/v1/logs":
		http.NotFound(w, r)
		return
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
		c.errs = append(c.errs, fmt.Errorf("request %d: %s with Content-Type %q", c.n, r.Method, r.Header.Get("Content-Type")))
		http.Error(w, "want a POST of application/json", http.StatusUnsupportedMediaType)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if c.answer != nil {
		if code := c.answer(c.n); code != 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, http.StatusText(code), code)
			return
		}
	}
	req, err := Decode(body)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("request %d: %w", c.n, err))
		if c.each != nil {
			c.each(nil, body, err)
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.raw = append(c.raw, body)
	for _, rec := range Records(req) {
		c.records = append(c.records, rec)
		if c.each != nil {
			c.each(rec, body, nil)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}")
}

// Received are the records taken, in the order they came, the bodies of
// the requests taken, and the requests that did not decode.
func (c *Collector) Received() (records []*logs.LogRecord, raw [][]byte, errs []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*logs.LogRecord(nil), c.records...), append([][]byte(nil), c.raw...), append([]error(nil), c.errs...)
}
