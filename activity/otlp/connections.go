package otlp

import (
	"time"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
)

// Connections are the connection attempts a sandbox's gateway recorded
// (`litterbox net log`: allowed and refused, each its own record) as log
// records named litterbox.connection, in order. Every value in them is the
// gateway's: checked host names, reasons built from them, the names of
// the secrets a request carried, never a value (docs/egress.md).
func Connections(repo, sandbox string, rs []control.Record, observed time.Time) []LogRecord {
	out := make([]LogRecord, 0, len(rs))
	for _, c := range rs {
		severity := SeverityInfo
		if !c.Allowed || c.Error != "" {
			severity = SeverityWarn
		}
		r := newRecord(c.Time, observed, severity, "connection", egress.Summary(c), repo, sandbox)
		a := &r.Attributes
		add(a, "litterbox.connection.kind", str(c.Kind))
		add(a, "litterbox.host", str(c.Host))
		if c.Port > 0 {
			add(a, "litterbox.port", integer(int64(c.Port)))
		}
		add(a, "litterbox.addr", str(c.Addr))
		add(a, "litterbox.method", str(c.Method))
		add(a, "litterbox.sni", str(c.SNI))
		add(a, "litterbox.allowed", boolean(c.Allowed))
		add(a, "litterbox.reason", str(c.Reason))
		add(a, "litterbox.error", str(c.Error))
		add(a, "litterbox.secret", str(c.Secret))
		if c.Kind != "lost" && c.Kind != "suppressed" {
			add(a, "litterbox.sent", integer(c.Sent))
			add(a, "litterbox.received", integer(c.Received))
			add(a, "litterbox.duration_ms", integer(int64(c.DurationMS)))
		}
		if c.Suppressed > 0 {
			add(a, "litterbox.suppressed", integer(int64(c.Suppressed)))
		}
		if c.Seq > 0 {
			add(a, "litterbox.gateway_seq", integer(int64(c.Seq)))
		}
		out = append(out, r)
	}
	return out
}
