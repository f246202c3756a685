package control

import (
	"strconv"
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
	// Refusals is the refusals table, in the answer that reaches the
	// last record.
	Refusals *Refusals `json:"refusals,omitempty"`
}

// KindCut is the kind of the record that starts a refusals file the
// gateway emptied: a run that reads it knows refusals it did not read may
// have been emptied with it, and asks the gateway's refusals table
// instead.
const KindCut = "cut"

// RefusedHost is the name a sandbox linked to its gateway by network (no
// shared volume, no refused.log) asks its gateway's proxy what it refused,
// by plain requests the proxy answers itself, never forwards (.invalid
// names nothing on the internet): http://RefusedHost/mark for where its
// refusals stand (a RefusalMark, as JSON), before a command, and
// http://RefusedHost/?boot=B&after=N for the refusals since that mark
// (the refusals table, as `ctl refused -boot B -after N`), one JSON line
// each as in RefusalsFile. The gateway serves one sandbox: it tells the
// sandbox only what the sandbox was refused.
const RefusedHost = "refused.litterbox.invalid"

// RefusalMark is where a gateway's refusals stood: its run (Boot, as
// Batch's) and how many it had refused in it. The refusals after a mark
// are a command's own, whatever the clocks say; after a restart of the
// gateway (another Boot) they are all the new run's.
type RefusalMark struct {
	Boot  string `json:"boot"`
	After uint64 `json:"after"`
}

// RefusedTarget is one target the gateway refused, however many times: what the
// human's record of a refusal (an exfiltration attempt above all) is made
// of, apart from the records the sandbox can make many of.
type RefusedTarget struct {
	Kind string `json:"kind"`
	Host string `json:"host"`
	Port int    `json:"port,omitempty"`
	// Secret names the secret whose placeholder the attempt carried.
	Secret string `json:"secret,omitempty"`
	// Reason is the first refusal's.
	Reason string    `json:"reason"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Count  int64     `json:"count"`
}

// Key identifies what a refusal was of.
func (r RefusedTarget) Key() string {
	return r.Kind + "\x00" + r.Host + "\x00" + strconv.Itoa(r.Port) + "\x00" + r.Secret
}

// Refusals is a gateway run's refusals table: every refusal of the run
// counted (Total); the first MaxRefusals distinct targets refused, and
// the first MaxAttempts exfiltration attempts (a placeholder sent where
// it may not go), each kept with its count from then on, in the order they
// came; the refusals of targets past that room counted together (Other).
// Nothing the sandbox does later pushes an entry out: to hide one attempt
// among others it would have to make the others first, which the table
// shows.
type Refusals struct {
	Boot    string          `json:"boot"`
	Now     time.Time       `json:"now"`
	Total   int64           `json:"total"`
	Entries []RefusedTarget `json:"entries"`
	// Other counts the refusals of targets the table had no room for;
	// OtherLast is the last one's time.
	Other     int64     `json:"other,omitempty"`
	OtherLast time.Time `json:"other_last,omitzero"`
}

// The room of a refusals table: the distinct refused targets, and the
// distinct exfiltration attempts, it keeps by name. At most about 1.7 KiB
// of JSON each (a record's cut texts): under 1.3 MiB in all.
const (
	MaxRefusals = 512
	MaxAttempts = 256
)

// Room says whether a table holding n refusals and k attempts has room
// for r.
func Room(r RefusedTarget, n, k int) bool {
	if r.Secret != "" {
		return k < MaxAttempts
	}
	return n < MaxRefusals
}
