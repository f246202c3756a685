package gateway

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// A bash call in the sandbox learns what its command was refused from
// RefusalsFile on the shared volume, read by the run itself (the scanner
// notes where the file ends before the command and reads what it gained
// after): asking the gateway by a second exec doubled the call's time.
// The gateway writes each refusal there before the client hears of it.

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
	path := filepath.Join(dir, RefusalsFile)
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

// KindCut is the kind of the record that starts a refusals file the
// gateway emptied: a run that reads it knows refusals it did not read may
// have been emptied with it, and asks the gateway's refusals table
// instead.
const KindCut = "cut"

// cutLine is that record's line.
var cutLine = []byte(`{"kind":"` + KindCut + `","allowed":false,"reason":"the gateway started its refusals file again: earlier lines are gone; its refusals table has them"}` + "\n")

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

// refusalTable is the audit's Refusals, indexed.
type refusalTable struct {
	total, other      int64
	otherLast         time.Time
	entries           []RefusedTarget
	index             map[string]int
	refused, attempts int
}

// add counts refusal r; a target refused the first time, given room, is
// returned with ok set.
func (t *refusalTable) add(r Record) (first RefusedTarget, ok bool) {
	t.total++
	e := RefusedTarget{Kind: r.Kind, Host: r.Host, Port: r.Port, Secret: r.Secret, Reason: r.Reason, First: r.Time.UTC(), Last: r.Time.UTC(), Count: 1}
	k := e.Key()
	if i, seen := t.index[k]; seen {
		t.entries[i].Count++
		t.entries[i].Last = e.Last
		return RefusedTarget{}, false
	}
	if !Room(e, t.refused, t.attempts) {
		t.other++
		t.otherLast = e.Last
		return RefusedTarget{}, false
	}
	if t.index == nil {
		t.index = map[string]int{}
	}
	t.index[k] = len(t.entries)
	t.entries = append(t.entries, e)
	if e.Secret != "" {
		t.attempts++
	} else {
		t.refused++
	}
	return e, true
}

func (t *refusalTable) snapshot(boot string, now time.Time) Refusals {
	return Refusals{Boot: boot, Now: now.UTC(), Total: t.total, Entries: slices.Clone(t.entries), Other: t.other, OtherLast: t.otherLast}
}

// since are the refusals of targets refused last at from or later, as
// records, and one "suppressed" record for those past the table's room.
func (t *refusalTable) since(from time.Time) []Record {
	var out []Record
	for _, e := range t.entries {
		if !e.Last.Before(from) {
			out = append(out, Record{Kind: e.Kind, Host: e.Host, Port: e.Port, Secret: e.Secret, Reason: e.Reason, Time: e.Last})
		}
	}
	if t.other > 0 && !t.otherLast.Before(from) {
		out = append(out, Record{Kind: "suppressed", Time: t.otherLast, Suppressed: int(min(t.other, 1<<31-1)),
			Reason: fmt.Sprintf("%d refusals of targets past the first %d refused (and %d exfiltration attempts), counted only", t.other, MaxRefusals, MaxAttempts)})
	}
	return out
}
