package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// A bash call in the sandbox learns what its command was refused from
// RefusalsFile on the shared volume, read by the run itself (the scanner
// notes where the file ends before the command and reads what it gained
// after): asking the gateway by a second exec doubled the call's time.
// The gateway writes each refusal there before the client hears of it.
// A gateway linked to its sandbox by network (Kubernetes) shares no
// volume: the run asks its proxy instead (control.RefusedHost).

// refusalsMax is the size past which the log starts again: the host
// collects every record from the gateway itself (Since); this file only
// tells one run what was refused during it.
const refusalsMax = 1 << 20

// RefusalLog is the gateway's refusals file: its own (the sandbox user's
// group may read it, not write it) and kept under refusalsMax.
type RefusalLog struct {
	f    *os.File
	size int64
	max  int64
}

// OpenRefusalLog makes dir's refusals file anew: whatever the sandbox left
// at its name is removed (the gateway owns the directory), and the file is
// made exclusively, so it is the gateway's own.
func OpenRefusalLog(dir string) (*RefusalLog, error) {
	path := filepath.Join(dir, control.RefusalsFile)
	var err error
	for range 3 {
		if err = os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			break
		}
		var f *os.File
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o640)
		if err == nil {
			// The umask may have left the group's write bit: it goes.
			if err = f.Chmod(0o640); err != nil {
				f.Close()
				return nil, err
			}
			return &RefusalLog{f: f, max: refusalsMax}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	return nil, fmt.Errorf("refusals file %s: %w", path, err)
}

// cutLine is that record's line.
var cutLine = []byte(`{"kind":"` + control.KindCut + `","allowed":false,"reason":"the gateway started its refusals file again: earlier lines are gone; its refusals table has them"}` + "\n")

// Write appends one record (the audit writes whole lines, under its
// lock), first emptying the file when it would grow past its limit, and
// saying so on its first line.
func (l *RefusalLog) Write(b []byte) (int, error) {
	if l.size+int64(len(b)) > l.max {
		if err := l.f.Truncate(0); err != nil {
			return 0, err
		}
		n, err := l.f.Write(cutLine)
		l.size = int64(n)
		if err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return n, err
}

// refusalTable is the audit's Refusals, indexed.
type refusalTable struct {
	total, other      int64
	otherLast         time.Time
	entries           []control.RefusedTarget
	index             map[string]int
	refused, attempts int
	// lastN is, for each entry, total when it was refused last; otherN,
	// for those past the table's room: where a run's mark places them.
	lastN  []int64
	otherN int64
}

// add counts refusal r; a target refused the first time, given room, is
// returned with ok set.
func (t *refusalTable) add(r control.Record) (first control.RefusedTarget, ok bool) {
	t.total++
	e := control.RefusedTarget{Kind: r.Kind, Host: r.Host, Port: r.Port, Secret: r.Secret, Reason: r.Reason, First: r.Time.UTC(), Last: r.Time.UTC(), Count: 1}
	k := e.Key()
	if i, seen := t.index[k]; seen {
		t.entries[i].Count++
		t.entries[i].Last = e.Last
		t.lastN[i] = t.total
		return control.RefusedTarget{}, false
	}
	if !control.Room(e, t.refused, t.attempts) {
		t.other++
		t.otherLast, t.otherN = e.Last, t.total
		return control.RefusedTarget{}, false
	}
	if t.index == nil {
		t.index = map[string]int{}
	}
	t.index[k] = len(t.entries)
	t.entries = append(t.entries, e)
	t.lastN = append(t.lastN, t.total)
	if e.Secret != "" {
		t.attempts++
	} else {
		t.refused++
	}
	return e, true
}

func (t *refusalTable) snapshot(boot string, now time.Time) control.Refusals {
	return control.Refusals{Boot: boot, Now: now.UTC(), Total: t.total, Entries: slices.Clone(t.entries), Other: t.other, OtherLast: t.otherLast}
}

// since are the refusals of targets refused last at from or later, as
// records, and one "suppressed" record for those past the table's room.
func (t *refusalTable) since(from time.Time) []control.Record {
	return t.records(func(i int) bool { return !t.entries[i].Last.Before(from) }, t.other > 0 && !t.otherLast.Before(from))
}

// after are the refusals of targets refused last after the n-th refusal,
// as since's.
func (t *refusalTable) after(n int64) []control.Record {
	return t.records(func(i int) bool { return t.lastN[i] > n }, t.other > 0 && t.otherN > n)
}

// records are the entries that keep says, as records, and the
// "suppressed" record when other.
func (t *refusalTable) records(keep func(i int) bool, other bool) []control.Record {
	var out []control.Record
	for i, e := range t.entries {
		if keep(i) {
			out = append(out, control.Record{Kind: e.Kind, Host: e.Host, Port: e.Port, Secret: e.Secret, Reason: e.Reason, Time: e.Last})
		}
	}
	if other {
		out = append(out, control.Record{Kind: "suppressed", Time: t.otherLast, Suppressed: int(min(t.other, 1<<31-1)),
			Reason: fmt.Sprintf("%d refusals of targets past the first %d refused (and %d exfiltration attempts), counted only", t.other, control.MaxRefusals, control.MaxAttempts)})
	}
	return out
}

// asksRefused says req, a plain request on the proxy, is for
// control.RefusedHost: the gateway answers it itself (answerRefused).
func asksRefused(req *http.Request) bool {
	host := req.Host
	if req.URL.IsAbs() {
		host = req.URL.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.EqualFold(strings.TrimSuffix(host, "."), control.RefusedHost)
}

// answerWriteTimeout bounds the write of an answer the gateway makes
// itself: a client that never reads it holds nothing past it.
const answerWriteTimeout = 5 * time.Second

// answerRefused answers a request for control.RefusedHost: a GET of /mark
// gets where the refusals stand (a control.RefusalMark, as JSON), and a GET
// of / with boot=B and after=N (a mark) the refusals since that mark, one
// JSON line each (as its refusals file holds them); anything else there is
// a 400 that says what is served. The answer ends the connection, and is
// given up past answerWriteTimeout.
func (g *Gateway) answerRefused(conn net.Conn, req *http.Request) {
	_ = conn.SetWriteDeadline(time.Now().Add(answerWriteTimeout))
	q := req.URL.Query()
	after, err := strconv.ParseUint(q.Get("after"), 10, 64)
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/mark" && req.URL.RawQuery == "":
		b, _ := json.Marshal(g.Audit.RefusalMark())
		answer(conn, append(b, '\n'))
		return
	case req.Method != http.MethodGet || req.URL.Path != "/" || q.Get("boot") == "" || err != nil:
		writeSimple(conn, 400, "Bad Request", "litterbox gateway: http://"+control.RefusedHost+"/ answers only GET /mark, and GET /?boot=B&after=N with the mark it gave\n")
		return
	}
	var body bytes.Buffer
	for _, r := range g.Audit.RefusedAfter(control.RefusalMark{Boot: q.Get("boot"), After: after}) {
		b, err := json.Marshal(r)
		if err != nil {
			continue
		}
		body.Write(b)
		body.WriteByte('\n')
	}
	answer(conn, body.Bytes())
}

// answer writes a 200 with body, JSON lines, and ends the connection.
func answer(conn net.Conn, body []byte) {
	fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	_, _ = conn.Write(body)
}
