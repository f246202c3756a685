package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/internal/atomicfile"
)

// Cursor is how far the host has collected a gateway's records: its run
// (Boot) and the last sequence number taken.
type Cursor struct {
	Boot string `json:"boot"`
	Seq  uint64 `json:"seq"`
}

// Store keeps a sandbox's record of connections on the host, where nothing
// in the sandbox can write: JSON lines in File, which is moved to File.1
// (replacing the one before) once it passes Max bytes, so the record is
// bounded at about twice Max; the cursor beside it, in File.cursor. A
// sandbox's state directory is the place (`.git/litterbox/NAME/net.jsonl`).
type Store struct {
	File string
	Max  int64
}

// DefaultMax bounds each of a store's two files.
const DefaultMax = 4 << 20

func (s Store) max() int64 {
	if s.Max > 0 {
		return s.Max
	}
	return DefaultMax
}

// Cursor is where the last Append left off.
func (s Store) Cursor() (Cursor, error) {
	b, err := os.ReadFile(s.File + ".cursor")
	if errors.Is(err, os.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, err
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return Cursor{}, fmt.Errorf("%s.cursor: %w", s.File, err)
	}
	return c, nil
}

// Append adds a batch's records, after a record of any loss the batch
// reports, and moves the cursor past them.
func (s Store) Append(b control.Batch) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	switch {
	case b.Lost > 0:
		_ = enc.Encode(control.Record{Time: b.Now, Kind: "lost", Reason: fmt.Sprintf("%d records were not collected before the gateway dropped them", b.Lost)})
	case b.Lost < 0:
		_ = enc.Encode(control.Record{Time: b.Now, Kind: "lost", Reason: "the gateway restarted: records of its previous run not collected by then are lost"})
	}
	for _, r := range b.Records {
		_ = enc.Encode(r)
	}
	c := Cursor{Boot: b.Boot}
	if n := len(b.Records); n > 0 {
		c.Seq = b.Records[n-1].Seq
	} else if old, err := s.Cursor(); err == nil && old.Boot == b.Boot {
		c.Seq = old.Seq
	}
	if buf.Len() > 0 {
		if err := os.MkdirAll(filepath.Dir(s.File), 0o755); err != nil {
			return err
		}
		if fi, err := os.Stat(s.File); err == nil && fi.Size()+int64(buf.Len()) > s.max() {
			if err := os.Rename(s.File, s.File+".1"); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(s.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.Write(buf.Bytes())
		if err := errors.Join(werr, f.Close()); err != nil {
			return err
		}
	}
	cb, _ := json.Marshal(c)
	return atomicfile.Write(s.File+".cursor", cb, 0o644)
}

// Records returns the last n records kept (all of them for n <= 0),
// oldest first.
func (s Store) Records(n int) ([]control.Record, error) {
	var all []control.Record
	for _, p := range []string{s.File + ".1", s.File} {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rs, err := readRecords(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, rs...)
	}
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return all, nil
}

// ParseRecords reads records written one JSON line each (a gateway's
// refusals file, as a run read it), skipping a line that is not one.
func ParseRecords(lines string) []control.Record {
	rs, _ := readRecords(strings.NewReader(lines))
	return rs
}

func readRecords(r io.Reader) ([]control.Record, error) {
	var out []control.Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rec control.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			continue // a line cut by a crash: skip it, keep the rest
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// RefusedHosts sums up refusals for an agent: each host:port once, with
// the reason of its first refusal, in order.
func RefusedHosts(rs []control.Record) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Allowed || r.Kind == "lost" {
			continue
		}
		key := r.Host
		if r.Kind == "suppressed" {
			key = "(more)"
		} else if r.Port != 0 {
			key = r.Host + ":" + strconv.Itoa(r.Port)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, key+" ("+r.Reason+")")
	}
	return out
}

// Summary is one line of a record, for `litterbox net log`.
func Summary(r control.Record) string {
	verdict := "allowed"
	if !r.Allowed {
		verdict = "refused"
	}
	target := r.Host
	if r.Port != 0 {
		target += ":" + strconv.Itoa(r.Port)
	}
	parts := []string{r.Time.Local().Format(time.DateTime), r.Kind, target, verdict}
	if r.Addr != "" {
		parts = append(parts, "addr "+r.Addr)
	}
	if r.Reason != "" {
		parts = append(parts, r.Reason)
	}
	if r.Error != "" {
		parts = append(parts, "error: "+r.Error)
	}
	if r.Allowed {
		parts = append(parts, fmt.Sprintf("%d B out, %d B in, %.0f ms", r.Sent, r.Received, r.DurationMS))
	}
	return strings.Join(parts, "  ")
}

// Book is a sandbox's refusals kept on the host apart from its record of
// connections, which the sandbox can make many of and so rotate away: the
// refusals tables of its gateway's runs (control.Refusals) merged. It is
// bounded as a table is (control.MaxRefusals distinct targets refused,
// control.MaxAttempts exfiltration attempts, kept from the first on, each
// counted; the refusals of targets past that room counted together), so
// nothing the sandbox does pushes a kept refusal out, and no number of
// refusals grows it. In BookFile, beside the store's File.
type Book struct {
	// Total counts every refusal collected.
	Total   int64                   `json:"total"`
	Entries []control.RefusedTarget `json:"entries"`
	// Other counts the refusals of targets past the book's room.
	Other     int64     `json:"other,omitempty"`
	OtherLast time.Time `json:"other_last,omitzero"`
	// Run is what the gateway's current run had counted when last
	// collected: its table's counts grow through the run, and only what
	// they grew by since is added.
	Run BookRun `json:"run,omitzero"`
}

// BookRun is a gateway run's counts as last merged.
type BookRun struct {
	Boot   string           `json:"boot"`
	Total  int64            `json:"total"`
	Other  int64            `json:"other"`
	Counts map[string]int64 `json:"counts,omitempty"`
}

// BookFile is where the store's book is.
func (s Store) BookFile() string {
	return strings.TrimSuffix(s.File, filepath.Ext(s.File)) + "-refused.json"
}

// Book reads the store's book (empty when there is none).
func (s Store) Book() (Book, error) {
	var b Book
	data, err := os.ReadFile(s.BookFile())
	if errors.Is(err, os.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("%s: %w", s.BookFile(), err)
	}
	return b, nil
}

// MergeRefusals adds what a gateway's refusals table counted since the
// last merge to the book, and returns how many refusals that was.
func (s Store) MergeRefusals(t control.Refusals) (int64, error) {
	b, err := s.Book()
	if err != nil {
		return 0, err
	}
	if b.Run.Boot != t.Boot {
		b.Run = BookRun{Boot: t.Boot}
	}
	index := map[string]int{}
	refused, attempts := 0, 0
	for i, e := range b.Entries {
		index[e.Key()] = i
		if e.Secret != "" {
			attempts++
		} else {
			refused++
		}
	}
	counts := map[string]int64{}
	for _, e := range t.Entries {
		k := e.Key()
		counts[k] = e.Count
		grew := e.Count - b.Run.Counts[k]
		if grew <= 0 {
			continue
		}
		if i, ok := index[k]; ok {
			b.Entries[i].Count += grew
			b.Entries[i].Last = maxTime(b.Entries[i].Last, e.Last)
			continue
		}
		if !control.Room(e, refused, attempts) {
			b.Other += grew
			b.OtherLast = maxTime(b.OtherLast, e.Last)
			continue
		}
		e.Count = grew
		index[k] = len(b.Entries)
		b.Entries = append(b.Entries, e)
		if e.Secret != "" {
			attempts++
		} else {
			refused++
		}
	}
	if grew := t.Other - b.Run.Other; grew > 0 {
		b.Other += grew
		b.OtherLast = maxTime(b.OtherLast, t.OtherLast)
	}
	added := max(0, t.Total-b.Run.Total)
	b.Total += added
	b.Run = BookRun{Boot: t.Boot, Total: t.Total, Other: t.Other, Counts: counts}
	if added == 0 {
		return 0, nil
	}
	data, err := json.Marshal(b)
	if err != nil {
		return 0, err
	}
	return added, atomicfile.Write(s.BookFile(), data, 0o644)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// BookSummary is one line of a book's entry, for `litterbox net`: the
// target first (its kind after it), the count, the first and last time.
func BookSummary(e control.RefusedTarget) string {
	target := e.Host
	if e.Port != 0 {
		target += ":" + strconv.Itoa(e.Port)
	}
	parts := []string{target + " (" + e.Kind + ")", fmt.Sprintf("%d time(s), first %s, last %s", e.Count, e.First.Local().Format(time.DateTime), e.Last.Local().Format(time.DateTime))}
	if e.Secret != "" {
		parts = append(parts, "secret "+e.Secret)
	}
	return strings.Join(append(parts, e.Reason), "  ")
}

// Tail reads the records a store gains as they are written, across its
// rotation (File moved to File.1): each Next returns those written since
// the one before. The first Next returns those since Since (none when
// Since is zero: it starts at the end).
type Tail struct {
	Store Store
	Since time.Time

	started bool
	file    os.FileInfo // File when last read
	off     int64       // how far into it
}

// Next returns the records written since the last call, oldest first. A
// line not yet whole is left for the next call.
func (t *Tail) Next() ([]control.Record, error) {
	fi, err := os.Stat(t.Store.File)
	if errors.Is(err, os.ErrNotExist) {
		fi, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []control.Record
	read := func(path string, from int64) (int64, error) {
		rs, n, err := readFrom(path, from)
		out = append(out, rs...)
		return from + n, err
	}
	if !t.started {
		t.started = true
		if t.Since.IsZero() {
			if fi != nil {
				t.file, t.off = fi, fi.Size()
			}
			return nil, nil
		}
		if _, err := read(t.Store.File+".1", 0); err != nil {
			return nil, err
		}
		if fi != nil {
			t.file = fi
			if t.off, err = read(t.Store.File, 0); err != nil {
				return nil, err
			}
		}
		return slices.DeleteFunc(out, func(r control.Record) bool { return r.Time.Before(t.Since) }), nil
	}
	if fi == nil {
		return nil, nil
	}
	if t.file != nil && !os.SameFile(t.file, fi) {
		// Rotated: the rest of the file read before is File.1 now.
		if old, err := os.Stat(t.Store.File + ".1"); err == nil && os.SameFile(old, t.file) {
			if _, err := read(t.Store.File+".1", t.off); err != nil {
				return out, err
			}
		}
		t.off = 0
	}
	t.file = fi
	t.off, err = read(t.Store.File, t.off)
	return out, err
}

// readFrom reads the whole lines of path from offset from: their records,
// and the bytes they took.
func readFrom(path string, from int64) ([]control.Record, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(io.LimitReader(f, 2*DefaultMax))
	if err != nil {
		return nil, 0, err
	}
	end := bytes.LastIndexByte(b, '\n') + 1
	rs, err := readRecords(bytes.NewReader(b[:end]))
	return rs, int64(end), err
}
