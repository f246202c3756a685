package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/internal/textcap"
)

// The most of each text of a record, in bytes of its JSON (escapes
// counted): a target, a method or a reason the sandbox makes 60 KB long is
// cut, and says so. maxRecordJSON bounds a whole record's JSON line.
const (
	maxKind, maxAddr, maxMethod = 16, 64, 64
	maxHost, maxSNI, maxSecret  = 512, 512, 512
	maxReason, maxError         = 1024, 1024
	maxRecordJSON               = 4096
)

// bounded is r with each text cut to its limit.
func bounded(r control.Record) control.Record {
	r.Kind = cutJSON(r.Kind, maxKind)
	r.Host = cutJSON(r.Host, maxHost)
	r.Addr = cutJSON(r.Addr, maxAddr)
	r.Method = cutJSON(r.Method, maxMethod)
	r.SNI = cutJSON(r.SNI, maxSNI)
	r.Reason = cutJSON(r.Reason, maxReason)
	r.Error = cutJSON(r.Error, maxError)
	r.Secret = cutJSON(r.Secret, maxSecret)
	return r
}

// cutJSON cuts s so that its JSON string (without quotes, every escape
// counted as encoding/json writes it: textcap) is at most n bytes, saying
// how much was cut.
func cutJSON(s string, n int) string {
	const note = "…(cut %d bytes)"
	if textcap.Len(s) <= n {
		return s
	}
	i := textcap.Prefix(s, n-len(fmt.Sprintf(note, len(s))))
	return strings.ToValidUTF8(s[:i], "\uFFFD") + fmt.Sprintf(note, len(s)-i)
}

// Audit defaults: the records kept in memory until the host collects them
// (at most DefaultAuditSize, and at most DefaultAuditBytes of their JSON),
// the most of one `ctl log` answer, and how many refusals a second are
// recorded one by one.
const (
	DefaultAuditSize  = 16384
	DefaultAuditBytes = 16 << 20
	maxBatchBytes     = 4 << 20
	refusedBurst      = 200
	refusedPerSecond  = 50
)

// Audit keeps a gateway's records: the last of them in memory (bounded in
// number and in bytes), where the host collects them by sequence number
// (Since). Refusals beyond refusedPerSecond (after a burst of
// refusedBurst) are counted, not recorded one by one, and the count is
// recorded once a second: a sandbox that floods the gateway with refused
// attempts cannot push the records of what did go out off the ring.
// Allowed connections are always recorded.
//
// Every refusal, counted or recorded, also goes to the refusals table
// (Refusals): each distinct target refused, counted, never pushed out by
// later records, however many; the first time it is refused, it is
// written to Mirror (the container's output, which the engine keeps, for
// when the gateway is gone).
type Audit struct {
	mu   sync.Mutex
	boot string
	seq  uint64
	// recs are the records kept, oldest first, from recs[start]; sizes
	// their JSON's lengths, which sum to bytes.
	recs     []control.Record
	sizes    []int
	start    int
	bytes    int
	maxRecs  int
	maxBytes int
	mirror   io.Writer
	// refusals, when set, gets each refusal as a JSON line too, before
	// the client is answered (see RefusalLog).
	refusals io.Writer
	table    refusalTable
	now      func() time.Time

	tokens     float64
	refilled   time.Time
	suppressed int
}

// NewAudit makes an audit keeping size records, the first refusal of
// each target mirrored to mirror (nil for none).
func NewAudit(size int, mirror io.Writer) *Audit {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Audit{boot: hex.EncodeToString(b[:]), maxRecs: max(1, size), maxBytes: DefaultAuditBytes, mirror: mirror, now: time.Now, tokens: refusedBurst}
}

// Boot identifies this run of the gateway: sequence numbers start again
// with every run.
func (a *Audit) Boot() string { return a.boot }

// Add records r, numbering and timing it (unless r.Time is set). A
// refusal over the rate is counted instead; every refusal is in the
// refusals table.
func (a *Audit) Add(r control.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if r.Time.IsZero() {
		r.Time = now
	}
	r = bounded(r)
	if !r.Allowed {
		if first, ok := a.table.add(r); ok && a.mirror != nil {
			b, _ := json.Marshal(first)
			_, _ = a.mirror.Write(append(b, '\n'))
		}
		a.tokens = min(refusedBurst, a.tokens+now.Sub(a.refilled).Seconds()*refusedPerSecond)
		a.refilled = now
		if a.tokens < 1 {
			a.suppressed++
			return
		}
		a.tokens--
	}
	a.addLocked(r)
}

func (a *Audit) addLocked(r control.Record) {
	a.seq++
	r.Seq = a.seq
	r.Time = r.Time.UTC()
	b, _ := json.Marshal(r)
	a.recs = append(a.recs, r)
	a.sizes = append(a.sizes, len(b)+1)
	a.bytes += len(b) + 1
	for len(a.recs)-a.start > 1 && (len(a.recs)-a.start > a.maxRecs || a.bytes > a.maxBytes) {
		a.bytes -= a.sizes[a.start]
		a.recs[a.start] = control.Record{}
		a.start++
	}
	// Move the kept records down once half the arrays are dropped ones.
	if a.start > len(a.recs)/2 && a.start > 64 {
		n := copy(a.recs, a.recs[a.start:])
		copy(a.sizes, a.sizes[a.start:])
		clear(a.recs[n:])
		a.recs, a.sizes, a.start = a.recs[:n], a.sizes[:n], 0
	}
	if a.refusals != nil && !r.Allowed {
		_, _ = a.refusals.Write(append(b, '\n'))
	}
}

// SetRefusals has each refusal recorded from now on written to w as well,
// as one JSON line.
func (a *Audit) SetRefusals(w io.Writer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refusals = w
}

// Flush records the refusals counted since the last flush, if any, as one
// "suppressed" record. The gateway calls it once a second.
func (a *Audit) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.suppressed == 0 {
		return
	}
	n := a.suppressed
	a.suppressed = 0
	a.addLocked(control.Record{Kind: "suppressed", Suppressed: n, Time: a.now(),
		Reason: fmt.Sprintf("%d more refused attempts, over %d a second, not recorded one by one (each target is in the refusals table)", n, refusedPerSecond)})
}

// Since returns up to max records after sequence number after of run boot
// ("" or another run's boot: from the start of this run), and at most
// maxBatchBytes of them.
func (a *Audit) Since(boot string, after uint64, max int) control.Batch {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := control.Batch{Boot: a.boot, Now: a.now().UTC(), Last: a.seq, Records: []control.Record{}}
	if boot != a.boot {
		if boot != "" {
			b.Lost = -1
		}
		after = 0
	}
	kept := len(a.recs) - a.start
	first := a.seq - uint64(kept) + 1 // seq of the oldest record kept
	if after+1 < first {
		if b.Lost == 0 {
			b.Lost = int64(first - after - 1)
		}
		after = first - 1
	}
	size := 0
	for s := after + 1; s <= a.seq && len(b.Records) < max; s++ {
		i := a.start + int(s-first)
		if size += a.sizes[i]; size > maxBatchBytes && len(b.Records) > 0 {
			break
		}
		b.Records = append(b.Records, a.recs[i])
	}
	if n := len(b.Records); n == 0 || b.Records[n-1].Seq == a.seq {
		t := a.table.snapshot(a.boot, a.now())
		b.Refusals = &t
	}
	return b
}

// Refused returns the refusals of the last d (by the gateway's clock; the
// host measures d by its own, so their clocks need not agree), from the
// refusals table: each target refused once, with its last time, and the
// count of those past the table's room when there were any.
func (a *Audit) Refused(d time.Duration) []control.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.table.since(a.now().Add(-d))
}

// RefusalMark is where the refusals stand now.
func (a *Audit) RefusalMark() control.RefusalMark {
	a.mu.Lock()
	defer a.mu.Unlock()
	return control.RefusalMark{Boot: a.boot, After: uint64(a.table.total)}
}

// RefusedAfter returns the refusals since m, as Refused does: every one
// in the table when m is another run's.
func (a *Audit) RefusedAfter(m control.RefusalMark) []control.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m.Boot != a.boot {
		m.After = 0
	}
	return a.table.after(int64(min(m.After, 1<<63-1)))
}
