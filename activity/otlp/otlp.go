// Package otlp sends activity events to an OpenTelemetry collector as log
// records, in OTLP's JSON encoding: `litterbox watch --otlp URL` posts
// them (OTLP/HTTP, Exporter) and `watch --format otlp-json` prints them,
// one export request a line (the OTLP file format), so a team's collector
// receives what `litterbox ui` shows.
//
// The encoding is written here, a few structs of the OTLP logs model,
// rather than taken from the OpenTelemetry modules, so litterbox carries
// no protobuf or gRPC code for it; the tests decode what it sends with
// the official definitions (go.opentelemetry.io/proto/slim/otlp), strictly.
//
// A record carries every field of the event the UI shows but one: a
// call's output (bash's, as the record keeps it), which may hold the
// contents of any file the agent printed. Secret values never reach an
// activity record (docs/secrets.md), so none reaches a collector.
package otlp

import (
	"encoding/json"
	"os"
	"strconv"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/buildinfo"
)

// The OTLP logs model, as far as litterbox fills it, with OTLP/JSON's
// names: lowerCamelCase fields, 64-bit integers as decimal strings, enums
// as numbers.
type (
	// Request is an ExportLogsServiceRequest.
	Request struct {
		ResourceLogs []ResourceLogs `json:"resourceLogs"`
	}
	// ResourceLogs are the records of one resource (litterbox on a host).
	ResourceLogs struct {
		Resource  Resource    `json:"resource"`
		ScopeLogs []ScopeLogs `json:"scopeLogs"`
	}
	// Resource is what produced the records.
	Resource struct {
		Attributes []KeyValue `json:"attributes"`
	}
	// ScopeLogs are the records of one instrumentation scope.
	ScopeLogs struct {
		Scope      Scope       `json:"scope"`
		LogRecords []LogRecord `json:"logRecords"`
	}
	// Scope names the code that made the records.
	Scope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	// LogRecord is one event.
	LogRecord struct {
		TimeUnixNano         string     `json:"timeUnixNano"`
		ObservedTimeUnixNano string     `json:"observedTimeUnixNano"`
		SeverityNumber       int        `json:"severityNumber"`
		SeverityText         string     `json:"severityText"`
		EventName            string     `json:"eventName"`
		Body                 AnyValue   `json:"body"`
		Attributes           []KeyValue `json:"attributes"`
	}
	// KeyValue is an attribute.
	KeyValue struct {
		Key   string   `json:"key"`
		Value AnyValue `json:"value"`
	}
	// AnyValue holds one of a string, an integer, a bool or an array.
	AnyValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		IntValue    *string     `json:"intValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		ArrayValue  *ArrayValue `json:"arrayValue,omitempty"`
	}
	// ArrayValue is a list of values.
	ArrayValue struct {
		Values []AnyValue `json:"values"`
	}
)

// Severities (OpenTelemetry's SeverityNumber): an event is INFO; a failed
// operation, a refused connection, a call that timed out and a gap in
// what was read are WARN; a record that does not follow its chain is
// ERROR.
const (
	SeverityInfo  = 9
	SeverityWarn  = 13
	SeverityError = 17
)

// ScopeName is the instrumentation scope of every record.
const ScopeName = "github.com/litterbox-dev/litterbox/activity"

// Records are events of the repository at repo as log records, in order.
// observed is when litterbox read them.
func Records(repo string, evs []activity.Event, observed time.Time) []LogRecord {
	out := make([]LogRecord, 0, len(evs))
	for _, e := range evs {
		out = append(out, record(repo, e, observed))
	}
	return out
}

func record(repo string, e activity.Event, observed time.Time) LogRecord {
	severity := SeverityInfo
	switch {
	case e.Kind == activity.KindBroken:
		severity = SeverityError
	case e.Error != "" || e.TimedOut || e.Kind == activity.KindEgress ||
		e.Kind == activity.KindMissed || e.Kind == activity.KindUnkept:
		severity = SeverityWarn
	}
	r := newRecord(e.Time, observed, severity, string(e.Kind), activity.Summary(e), repo, e.Sandbox)
	a := &r.Attributes
	if e.Seq > 0 {
		add(a, "litterbox.seq", integer(e.Seq))
	}
	add(a, "litterbox.actor", str(e.By))
	if e.PID > 0 {
		add(a, "litterbox.pid", integer(int64(e.PID)))
	}
	add(a, "litterbox.tool", str(e.Tool))
	add(a, "litterbox.args", str(e.Args))
	if !e.Start.IsZero() {
		add(a, "litterbox.start", str(e.Start.UTC().Format(time.RFC3339Nano)))
	}
	if e.Ms > 0 || !e.Start.IsZero() {
		add(a, "litterbox.duration_ms", integer(e.Ms))
	}
	if e.Exit != nil {
		add(a, "litterbox.exit_code", integer(int64(*e.Exit)))
	}
	if e.TimedOut {
		add(a, "litterbox.timed_out", boolean(true))
	}
	if e.Cancelled {
		add(a, "litterbox.cancelled", boolean(true))
	}
	add(a, "litterbox.commit", str(e.Commit))
	if len(e.Files) > 0 {
		files := make([]AnyValue, len(e.Files))
		for i, f := range e.Files {
			files[i] = str(f)
		}
		add(a, "litterbox.files", AnyValue{ArrayValue: &ArrayValue{Values: files}})
	}
	if e.FilesMore > 0 {
		add(a, "litterbox.files_more", integer(int64(e.FilesMore)))
	}
	add(a, "litterbox.service", str(e.Service))
	add(a, "litterbox.action", str(e.Action))
	add(a, "litterbox.target", str(e.Target))
	add(a, "litterbox.message", str(e.Message))
	add(a, "litterbox.error", str(e.Error))
	if e.Missed > 0 {
		add(a, "litterbox.missed", integer(e.Missed))
	}
	return r
}

// newRecord is a record of kind (litterbox.KIND) at t, with its severity,
// its body and the attributes every record has: where and what.
func newRecord(t, observed time.Time, severity int, kind, body, repo, sandbox string) LogRecord {
	r := LogRecord{
		TimeUnixNano:         nanos(t),
		ObservedTimeUnixNano: nanos(observed),
		SeverityNumber:       severity,
		SeverityText:         map[int]string{SeverityInfo: "INFO", SeverityWarn: "WARN", SeverityError: "ERROR"}[severity],
		EventName:            "litterbox." + kind,
		Body:                 str(body),
	}
	add(&r.Attributes, "litterbox.repo", str(repo))
	add(&r.Attributes, "litterbox.sandbox", str(sandbox))
	add(&r.Attributes, "litterbox.kind", str(kind))
	return r
}

// add appends key unless its value is an empty string.
func add(a *[]KeyValue, key string, v AnyValue) {
	if v.StringValue != nil && *v.StringValue == "" {
		return
	}
	*a = append(*a, KeyValue{Key: key, Value: v})
}

func str(s string) AnyValue { return AnyValue{StringValue: &s} }

func integer(n int64) AnyValue {
	s := strconv.FormatInt(n, 10)
	return AnyValue{IntValue: &s}
}

func boolean(b bool) AnyValue { return AnyValue{BoolValue: &b} }

func nanos(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

// resource is litterbox on this host.
var resource = func() Resource {
	r := Resource{}
	add(&r.Attributes, "service.name", str("litterbox"))
	add(&r.Attributes, "service.version", str(buildinfo.Version()))
	if h, err := os.Hostname(); err == nil {
		add(&r.Attributes, "host.name", str(h))
	}
	return r
}()

// Encode is an export request of records, in OTLP/JSON: one object, no
// newline in it.
func Encode(records []LogRecord) []byte {
	req := Request{ResourceLogs: []ResourceLogs{{
		Resource:  resource,
		ScopeLogs: []ScopeLogs{{Scope: Scope{Name: ScopeName, Version: buildinfo.Version()}, LogRecords: records}},
	}}}
	b, err := json.Marshal(req)
	if err != nil {
		// Nothing in these types fails to marshal; strings are UTF-8
		// made valid by encoding/json.
		panic(err)
	}
	return b
}
