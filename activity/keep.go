package activity

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/atomicfile"
)

// The stores of kept events: what flooding a record cannot rotate away.
//
// An agent can write thousands of events in seconds (refused reads cost it
// nothing), and the record keeps only its newest 2 x MaxBytes. So each
// event that matters to security is written a second time, slimmed
// (KeptLimits), to a store of its class that never rotates:
// <slug>.egress.jsonl (refused connections, changes of the network policy)
// and <slug>.failed.jsonl (operations that failed or were refused). A store
// keeps the first events of its class up to MaxKept bytes; the ones after
// are counted in <slug>.<class>.more, and the newest of them kept too, in
// <slug>.<class>.last.jsonl and .last.1.jsonl (MaxKept/4 each, rotating).
// So no flood of another class, and no flood at all, erases the first
// events of a class; a flood of the same class that fills its store first
// (decoy refusals) still leaves the newest of it, an attempt after the
// decoys among them until as many more decoys follow; and every one not
// kept is counted. Readers merge the kept events older than the record's
// own (Read, Last).

// Classes of kept events.
const (
	ClassEgress = "egress" // refused connections, network policy changes
	ClassFailed = "failed" // operations that failed or were refused
)

// DefaultMaxKept is the size of each store of kept events: a few thousand
// events each.
const DefaultMaxKept = 256 << 10

// KeptLimits bound a kept event: what it tried and why it failed, not all
// it printed.
var KeptLimits = Limits{Args: 1 << 10, Output: 256, Error: 1 << 10, Text: 512, Name: MaxName, Files: 5}

// Class is the store that keeps e, "" for none.
func Class(e Event) string {
	switch {
	case e.Kind == KindUnkept:
		return e.Action
	case e.Kind == KindEgress || e.Kind == KindNet:
		return ClassEgress
	case e.Error != "":
		return ClassFailed
	}
	return ""
}

func (r Record) keptPath(class string) string {
	return filepath.Join(r.Dir, r.Sandbox+"."+class+".jsonl")
}

func (r Record) morePath(class string) string {
	return filepath.Join(r.Dir, r.Sandbox+"."+class+".more")
}

// lastPaths are the files of the newest kept events of class past the
// store's first MaxKept bytes: the one before, then the one written.
func (r Record) lastPaths(class string) [2]string {
	base := filepath.Join(r.Dir, r.Sandbox+"."+class+".last")
	return [2]string{base + ".1.jsonl", base + ".jsonl"}
}

// keep writes e to its class's store, or counts it there when the store is
// full, with its head in the lock file lf (chain.go): chains and heads are
// the record's. The caller holds the record's lock.
func (r Record) keep(e Event, chains []chain, heads []head, lf *os.File) error {
	class := Class(e)
	if class == "" {
		return nil
	}
	maxKept := r.MaxKept
	if maxKept <= 0 {
		maxKept = DefaultMaxKept
	}
	var store, last chain
	for _, c := range chains {
		switch c.newest() {
		case r.keptPath(class):
			store = c
		case r.lastPaths(class)[1]:
			last = c
		}
	}
	size := fileSize(store.newest())
	_, prev := store.end(size, heads[store.slot])
	line := keptLine(e, prev)
	full := size+int64(len(line))+1 > maxKept
	if full {
		store, size = last, fileSize(last.newest())
		_, prev = store.end(size, heads[store.slot])
		line = keptLine(e, prev)
	}
	if full && size > 0 && size+int64(len(line))+1 > maxKept/4 {
		if err := os.Rename(last.files[1], last.files[0]); err != nil {
			return err
		}
		size = 0
	}
	if err := appendLine(store.newest(), append(line, '\n')); err != nil {
		return err
	}
	if err := writeHead(lf, store.slot, head{seq: e.Seq, size: size + int64(len(line)) + 1, hash: lineHash(line)}); err != nil {
		return err
	}
	if !full {
		return nil
	}
	n := readCount(r.morePath(class)) + 1
	return atomicfile.Write(r.morePath(class), []byte(strconv.FormatInt(n, 10)+"\n"), 0o644)
}

// keptLine is e slimmed (KeptLimits) as a store keeps it, following prev.
func keptLine(e Event, prev string) []byte {
	e.Prev = prev
	line, _ := json.Marshal(boundTo(e, KeptLimits)) // an Event always marshals
	return line
}

// fileSize is the size of the file path, 0 when it has none.
func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}

// readCount is the number a .more file holds, 0 when none.
func readCount(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return max(n, 0)
}

// Kept is what a record's stores keep: the kept events of both classes in
// the order they were written, and by class how many of those that came
// after a store was full are not kept.
func Kept(dir, slug string) ([]Event, map[string]int64, error) {
	r := Record{Dir: dir, Sandbox: slug}
	var out []Event
	more := map[string]int64{}
	for _, class := range []string{ClassEgress, ClassFailed} {
		last := r.lastPaths(class)
		var newest []Event
		for _, p := range []string{r.keptPath(class), last[0], last[1]} {
			data, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, err
			}
			evs := parseSince(data, zeroTime, nil)
			if p != r.keptPath(class) {
				newest = append(newest, evs...)
			}
			out = mergeSeq(out, evs)
		}
		if n := readCount(r.morePath(class)) - int64(len(newest)); n > 0 {
			more[class] = n
		}
	}
	return out, more, nil
}

// mergeSeq merges two runs of events, each in the order of Seq.
func mergeSeq(a, b []Event) []Event {
	out := make([]Event, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].Seq <= b[0].Seq {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// withKept puts before events (a record's, oldest first) the kept events
// older than its first, those at or after since (all when it is zero).
//
// When a store was full, a KindUnkept note after them says how many of its
// class it did not keep.
func withKept(dir, slug string, events []Event, since time.Time) []Event {
	kept, more, err := Kept(dir, slug)
	if err != nil || len(kept) == 0 {
		return events
	}
	first := int64(1) << 62
	for _, e := range events {
		if e.Seq > 0 {
			first = e.Seq
			break
		}
	}
	var older []Event
	for _, e := range kept {
		if e.Seq > 0 && e.Seq < first && (since.IsZero() || !e.Time.Before(since)) {
			older = append(older, e)
		}
	}
	for _, class := range []string{ClassEgress, ClassFailed} {
		if more[class] > 0 {
			at := kept[len(kept)-1].Time
			older = append(older, Event{Time: at, Sandbox: slug, Kind: KindUnkept, Action: class, Missed: more[class]})
		}
	}
	if len(older) == 0 {
		return events
	}
	return append(older, events...)
}

// Gaps is events with a KindMissed note wherever their numbers skip: the
// events rotated away from the record (those kept aside show), or not
// read. Events without a number (older records) mark no gap.
func Gaps(events []Event) []Event {
	var out []Event
	var last int64
	for _, e := range events {
		if e.Kind == KindMissed {
			continue
		}
		if e.Seq > 0 && last > 0 && e.Seq > last+1 {
			out = append(out, Event{Time: e.Time, Sandbox: e.Sandbox, Kind: KindMissed, Seq: last + 1, Missed: e.Seq - last - 1})
		}
		if e.Seq > 0 {
			last = e.Seq
		}
		out = append(out, e)
	}
	return out
}
