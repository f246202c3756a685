package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Record is one connection attempt, as the audit keeps it: one JSON line.
type Record struct {
	// Seq numbers the records of one gateway run (Boot), from 1.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Kind is "connect" (a CONNECT tunnel), "http" (a plain HTTP request
	// the gateway forwarded), "https" (a request in a tunnel the gateway
	// terminates: to a host a secret is bound to), "dns" (a query to the
	// sandbox's resolver), "port" (a connection from the host to a named
	// port), or "suppressed" (refusals too many to record one by one).
	Kind string `json:"kind"`
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Addr is the address the gateway connected to (or refused).
	Addr string `json:"addr,omitempty"`
	// Method is the HTTP method of an "http" record, the query type of a
	// "dns" one.
	Method string `json:"method,omitempty"`
	// SNI is the server name a tunnel's TLS ClientHello carried.
	SNI     string `json:"sni,omitempty"`
	Allowed bool   `json:"allowed"`
	// Reason says why it was allowed or refused.
	Reason string `json:"reason"`
	// Error is what went wrong with an allowed connection (the name did
	// not resolve, the server refused it...).
	Error string `json:"error,omitempty"`
	// Secret names the secrets a request carried: added to it (an "https"
	// request to a bound host), or refused as an exfiltration attempt (its
	// placeholder sent where it may not go). Never a value.
	Secret string `json:"secret,omitempty"`
	// Sent and Received are the bytes from and to the sandbox.
	Sent       int64   `json:"sent"`
	Received   int64   `json:"received"`
	DurationMS float64 `json:"duration_ms"`
	// Suppressed counts the refusals this "suppressed" record stands for.
	Suppressed int `json:"suppressed,omitempty"`
}

// Audit defaults: the records kept in memory until the host collects them,
// and how many refusals a second are recorded one by one.
const (
	DefaultAuditSize = 16384
	refusedBurst     = 200
	refusedPerSecond = 50
)

// Audit keeps a gateway's records: the last Size of them in memory, where
// the host collects them by sequence number (Since), and each as a JSON
// line on Mirror (the container's output, which the engine keeps, for when
// the gateway is gone). Refusals beyond refusedPerSecond (after a burst of
// refusedBurst) are counted, not recorded one by one, and the count is
// recorded once a second: a sandbox that floods the gateway with refused
// attempts cannot push the records of what did go out off the ring.
// Allowed connections are always recorded.
type Audit struct {
	mu     sync.Mutex
	boot   string
	seq    uint64
	ring   []Record
	head   int // index of the oldest record when the ring is full
	mirror io.Writer
	// refusals, when set, gets each refusal as a JSON line too, before
	// the client is answered (see RefusalLog).
	refusals io.Writer
	now      func() time.Time

	tokens     float64
	refilled   time.Time
	suppressed int
}

// NewAudit makes an audit keeping size records, mirrored to mirror (nil
// for none).
func NewAudit(size int, mirror io.Writer) *Audit {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Audit{boot: hex.EncodeToString(b[:]), ring: make([]Record, 0, max(1, size)), mirror: mirror, now: time.Now, tokens: refusedBurst}
}

// Boot identifies this run of the gateway: sequence numbers start again
// with every run.
func (a *Audit) Boot() string { return a.boot }

// Add records r, numbering and timing it (unless r.Time is set). A
// refusal over the rate is counted instead.
func (a *Audit) Add(r Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if !r.Allowed {
		a.tokens = min(refusedBurst, a.tokens+now.Sub(a.refilled).Seconds()*refusedPerSecond)
		a.refilled = now
		if a.tokens < 1 {
			a.suppressed++
			return
		}
		a.tokens--
	}
	a.addLocked(r, now)
}

func (a *Audit) addLocked(r Record, now time.Time) {
	a.seq++
	r.Seq = a.seq
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC()
	if len(a.ring) < cap(a.ring) {
		a.ring = append(a.ring, r)
	} else {
		a.ring[a.head] = r
		a.head = (a.head + 1) % len(a.ring)
	}
	if a.mirror == nil && (a.refusals == nil || r.Allowed) {
		return
	}
	b, _ := json.Marshal(r)
	b = append(b, '\n')
	if a.mirror != nil {
		_, _ = a.mirror.Write(b)
	}
	if a.refusals != nil && !r.Allowed {
		_, _ = a.refusals.Write(b)
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
	a.addLocked(Record{Kind: "suppressed", Suppressed: n,
		Reason: fmt.Sprintf("%d more refused attempts, over %d a second, not recorded one by one", n, refusedPerSecond)}, a.now())
}

// Batch is an answer to Since: the records after a sequence number.
type Batch struct {
	Boot string `json:"boot"`
	// Now is the gateway's clock when it answered.
	Now time.Time `json:"now"`
	// Last is the sequence number of the last record there is.
	Last uint64 `json:"last"`
	// Lost counts records after the asked-for number that are no longer
	// kept (the host collected too late), or, when boot is another
	// run's, that run's records the host never collected are unknown:
	// Lost is then -1.
	Lost    int64    `json:"lost"`
	Records []Record `json:"records"`
}

// Since returns up to max records after sequence number after of run boot
// ("" or another run's boot: from the start of this run).
func (a *Audit) Since(boot string, after uint64, max int) Batch {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := Batch{Boot: a.boot, Now: a.now().UTC(), Last: a.seq, Records: []Record{}}
	if boot != a.boot {
		if boot != "" {
			b.Lost = -1
		}
		after = 0
	}
	first := a.seq - uint64(len(a.ring)) + 1 // seq of the oldest record kept
	if after+1 < first {
		if b.Lost == 0 {
			b.Lost = int64(first - after - 1)
		}
		after = first - 1
	}
	for s := after + 1; s <= a.seq && len(b.Records) < max; s++ {
		b.Records = append(b.Records, a.ring[(a.head+int(s-first))%len(a.ring)])
	}
	return b
}

// Refused returns the refusals recorded in the last d (by the gateway's
// clock; the host measures d by its own, so their clocks need not agree).
func (a *Audit) Refused(d time.Duration) []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	from := a.now().Add(-d)
	var out []Record
	for i := range a.ring {
		r := a.ring[(a.head+i)%len(a.ring)]
		if !r.Allowed && !r.Time.Before(from) {
			out = append(out, r)
		}
	}
	return out
}
