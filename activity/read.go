package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// maxLine is the longest line a reader accepts; Bound keeps every line
// Append writes far below it. A longer one was not written by Append and
// is skipped.
const maxLine = 1 << 20

// Parse reads one line of a record; ok is false for a line that is not an
// event.
func Parse(line []byte) (Event, bool) {
	var e Event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || e.Kind == "" {
		return Event{}, false
	}
	return e, true
}

// lineTime reads the time of a line without decoding the rest: Append
// writes it first. ok is false when it cannot.
func lineTime(line []byte) (time.Time, bool) {
	const prefix = `{"time":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return time.Time{}, false
	}
	rest := line[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return t, err == nil
}

// lineSeq reads the number of a line without decoding the rest: Append
// writes it second, after the time. 0 when it has none.
func lineSeq(line []byte) int64 {
	const prefix = `{"time":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0
	}
	rest := line[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0
	}
	rest, ok := bytes.CutPrefix(rest[end+1:], []byte(`,"seq":`))
	if !ok {
		return 0
	}
	var n int64
	for _, c := range rest {
		if c < '0' || c > '9' || n > 1<<58 {
			break
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// lastLine is the last whole line of the file path, nil when it has none.
func lastLine(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	for chunk := int64(4 << 10); ; chunk *= 4 {
		pos := max(fi.Size()-chunk, 0)
		buf := make([]byte, fi.Size()-pos)
		if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
			return nil
		}
		end := bytes.LastIndexByte(buf, '\n') // a line being written after it
		if end < 0 && pos == 0 {
			return nil
		}
		if end >= 0 {
			start := bytes.LastIndexByte(buf[:end], '\n') + 1
			if start > 0 || pos == 0 {
				return buf[start:end]
			}
		}
		if pos == 0 || chunk > maxLine {
			return nil
		}
	}
}

var zeroTime time.Time

// parseSince decodes the whole lines of data at or after since (all of them
// when since is zero).
func parseSince(data []byte, since time.Time, out []Event) []Event {
	return parseSeq(data, since, out, nil, nil)
}

// parseSeq is parseSince that also sets *seq, when seq is not nil, to the
// number of each whole line, skipped or not, and passes each to lk, when
// it is not nil, with a KindBroken note before a line that does not follow
// the one before (chain.go).
func parseSeq(data []byte, since time.Time, out []Event, seq *int64, lk *linker) []Event {
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // a line being written: not whole yet
		}
		line := data[:nl]
		data = data[nl+1:]
		if seq != nil {
			if n := lineSeq(line); n > 0 {
				*seq = n
			}
		}
		if lk != nil {
			if why := lk.next(line); why != "" {
				t, _ := lineTime(line)
				out = append(out, Event{Time: t, Sandbox: lk.slug, Kind: KindBroken, Seq: lineSeq(line), Message: why})
			}
		}
		if !since.IsZero() {
			if t, ok := lineTime(line); ok && t.Before(since) {
				continue
			}
		}
		if e, ok := Parse(line); ok && (since.IsZero() || !e.Time.Before(since)) {
			out = append(out, e)
		}
	}
	return out
}

// Read returns the events of a sandbox's record at or after since (every
// event when since is zero), oldest first, with the kept events older than
// the record's (keep.go) first. A sandbox without a record has none.
func Read(dir, slug string, since time.Time) ([]Event, error) {
	out, err := readRecord(dir, slug, since)
	if err != nil {
		return out, err
	}
	return withKept(dir, slug, out, since), nil
}

// readRecord is Read of the record's two files only.
func readRecord(dir, slug string, since time.Time) ([]Event, error) {
	r := Record{Dir: dir, Sandbox: slug}
	var out []Event
	for _, p := range []string{r.OldPath(), r.Path()} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = parseSince(data, since, out)
	}
	return out, nil
}

// tailChunk is how much Last reads first, from the end; it doubles until
// it holds the lines asked for.
const tailChunk = 16 << 10

// Last returns the last n events of a sandbox's record, oldest first, after
// the kept events older than those (keep.go): so a flood of n events hides
// no refused connection or failed operation. It reads and decodes from the
// end of the files, so it costs what n events and the kept ones weigh, not
// what the record does.
func Last(dir, slug string, n int) ([]Event, error) {
	out, err := lastRecord(dir, slug, n)
	if err != nil || len(out) == 0 {
		return out, err
	}
	return withKept(dir, slug, out, time.Time{}), nil
}

// lastRecord is Last of the record's two files only.
func lastRecord(dir, slug string, n int) ([]Event, error) {
	if n <= 0 {
		return nil, nil
	}
	r := Record{Dir: dir, Sandbox: slug}
	var out []Event
	for _, p := range []string{r.Path(), r.OldPath()} {
		evs, err := lastOf(p, n-len(out))
		if err != nil {
			return nil, err
		}
		out = append(evs, out...)
		if len(out) >= n {
			break
		}
	}
	return out, nil
}

// lastOf returns the last n events of one file.
func lastOf(path string, n int) ([]Event, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var buf []byte // from pos to the end of the file
	pos, chunk := fi.Size(), int64(tailChunk)
	for pos > 0 {
		step := min(chunk, pos)
		pos -= step
		more := make([]byte, step)
		if _, err := f.ReadAt(more, pos); err != nil && err != io.EOF {
			return nil, err
		}
		buf = append(more, buf...)
		chunk *= 2
		if bytes.Count(buf, []byte{'\n'}) > n {
			break
		}
	}
	// Decode only the last n whole lines, newest first, skipping any that
	// is not an event.
	var out []Event
	end := len(buf)
	if end > 0 && buf[end-1] != '\n' {
		end = bytes.LastIndexByte(buf[:end], '\n') + 1 // a line being written
	}
	for end > 0 && len(out) < n {
		startAt := bytes.LastIndexByte(buf[:end-1], '\n') + 1
		if startAt == 0 && pos > 0 {
			break // the start of this line was not read: it is not whole
		}
		if e, ok := Parse(buf[startAt : end-1]); ok {
			out = append(out, e)
		}
		end = startAt
	}
	slices.Reverse(out)
	return out, nil
}

// Sandboxes lists the sandboxes that have a record in dir, sorted.
func Sandboxes(dir string) ([]string, error) {
	return listNames(dir, func(e os.DirEntry) (string, bool) { return recordName(e.Name()) })
}

// listNames lists, sorted and once each, the sandboxes that name gives for
// the files of dir.
func listNames(dir string, name func(os.DirEntry) (string, bool)) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if slug, ok := name(e); ok {
			out = append(out, slug)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// recordName is the sandbox whose newest events file is name.
func recordName(name string) (string, bool) {
	slug, ok := strings.CutSuffix(name, ".jsonl")
	if !ok || !ValidName(slug) {
		return "", false
	}
	return slug, true
}

// oldName is the sandbox whose older events file is name.
func oldName(name string) (string, bool) {
	slug, ok := strings.CutSuffix(name, ".1.jsonl")
	if !ok || !ValidName(slug) {
		return "", false
	}
	return slug, true
}
