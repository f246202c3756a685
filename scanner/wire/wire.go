// Package wire is the scanner's protocol: the request the host sends the
// scanner (Options, RunSpec), the stream it answers with and how the host
// reads it (Read, Result, Meta, RunResult), and the names git refuses,
// which both sides check. The program (package scanner) and the host
// (sandbox/internal/recording, guest) import it; the host links none of the
// program.
package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The scanner and the host talk in names, and a name is bytes: anything but
// NUL and '/'. JSON would turn a name that is not UTF-8 into U+FFFD (the
// host then took the real file for deleted), and argv mangles names that
// look like flags, so both directions use one byte-exact format: records of
// a tag byte and a value, each ended by NUL, which no name can hold.
//
// Host to scanner, on the scanner's standard input, ended by an "." record
// (a RunSpec may follow, as JSON):
//
//	F<dir>  Full: report the whole subtree of dir
//	P<path> Paths: report the file whatever its times, even when ignored
//	L<dir>  List: list every directory of the subtree, ignore status evaluated
//	T<dir>  Tracked: an ignored directory the branch tracks files under
//	X<line> Excludes: one line of info/exclude or core.excludesFile
//	J<tok>  Journal: ask the change journal what changed since the token
//	        (empty: the journal's token is wanted, the walk is full)
//	G<dir>  Ignored: the last scan's ignored directories (B below)
//	A1      Audit: report what no snapshot can record, send nothing
//	H<path> Linked: the last scan's files with other names (H below)
//
// Scanner to host, the meta entry that ends the scan's tar stream:
//
//	S<ns>          Start, the stamp of the scan
//	D<dir>         a directory listing follows, one record per entry:
//	  f<name>      a file or link (ignore status not evaluated)
//	  n<name>      a file or link that is not ignored (in a List subtree)
//	  d<name>      a directory, walked
//	  i<name>      a directory not walked: ignored, or a name refused
//	K<path>        Skipped: the next record is the reason
//	I<path>        IgnoredChanged
//	B<path>        an ignored directory whose parent is not ignored
//	R<path>        a file sent, but it changed while it was read
//	J<tok>         the change journal's token for the next scan
//	W1             the walk followed the journal (only changed directories)
//	H<path>        a file with another name (Meta.Linked)
//	T<ns>          how long the scan took
//	U<path>        Unrecordable (an audit): the next three records are the
//	               reason, the blob id or nothing, and "1" when ignored

// Skipped is a file a scan could not report (a snapshot then does not commit it), with the reason.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Listing kinds of DirEntry.
const (
	EntryFile       = 'f' // a file or link
	EntryNotIgnored = 'n' // a file or link, evaluated: not ignored
	EntryDir        = 'd' // a directory, walked
	EntryNotWalked  = 'i' // a directory not walked (ignored, or refused)
)

// DirEntry is one entry of a directory listing in Meta.Dirs.
type DirEntry struct {
	Name string
	Kind byte
}

// IsDir reports whether the entry is a directory.
func (e DirEntry) IsDir() bool { return e.Kind == EntryDir || e.Kind == EntryNotWalked }

// PutRecord writes one record: its tag byte, value, and a NUL. Values are
// bytes (names need not be UTF-8) and hold no NUL.
func PutRecord(w *bytes.Buffer, tag byte, value string) {
	w.WriteByte(tag)
	w.WriteString(value)
	w.WriteByte(0)
}

// PutRecords writes a record of tag for each of values.
func PutRecords(w *bytes.Buffer, tag byte, values []string) {
	for _, v := range values {
		PutRecord(w, tag, v)
	}
}

// EachRecord calls fn with each record of data, as PutRecord wrote them, in
// order. It reports false, having stopped, at a record that is not whole or
// that fn refuses.
func EachRecord(data []byte, fn func(tag byte, value string) bool) bool {
	for len(data) > 0 {
		i := bytes.IndexByte(data, 0)
		if i < 1 || !fn(data[0], string(data[1:i])) {
			return false
		}
		data = data[i+1:]
	}
	return true
}

// EncodeRequest writes the path options of o for the scanner's input.
func EncodeRequest(o Options) []byte {
	var b bytes.Buffer
	PutRecords(&b, 'F', o.Full)
	PutRecords(&b, 'P', o.Paths)
	PutRecords(&b, 'L', o.List)
	PutRecords(&b, 'T', o.Tracked)
	PutRecords(&b, 'X', o.Excludes)
	if o.Journal {
		PutRecord(&b, 'J', o.JournalToken)
		PutRecords(&b, 'G', o.Ignored)
		PutRecords(&b, 'H', o.Linked)
	}
	if o.Audit {
		PutRecord(&b, 'A', "1")
	}
	PutRecord(&b, '.', "")
	return b.Bytes()
}

// maxRequest bounds what the scanner reads of its request.
const maxRequest = 256 << 20

// ReadRequest reads the path options the host sent into o, up to the
// end record, and leaves r just after it.
func ReadRequest(r *bufio.Reader, o *Options) error {
	total := 0
	for {
		rec, err := r.ReadString(0)
		if err != nil {
			return fmt.Errorf("read scan request: %w", err)
		}
		if total += len(rec); total > maxRequest {
			return errors.New("read scan request: too long")
		}
		if len(rec) < 2 {
			return fmt.Errorf("read scan request: empty record")
		}
		tag, v := rec[0], rec[1:len(rec)-1]
		switch tag {
		case 'F':
			o.Full = append(o.Full, v)
		case 'P':
			o.Paths = append(o.Paths, v)
		case 'L':
			o.List = append(o.List, v)
		case 'T':
			o.Tracked = append(o.Tracked, v)
		case 'X':
			o.Excludes = append(o.Excludes, v)
		case 'J':
			o.Journal, o.JournalToken = true, v
		case 'G':
			o.Ignored = append(o.Ignored, v)
		case 'A':
			o.Audit = true
		case 'H':
			o.Linked = append(o.Linked, v)
		case '.':
			return nil
		default:
			return fmt.Errorf("read scan request: unknown record %q", tag)
		}
	}
}

// Encode writes the meta in the record format above. Names holding NUL
// cannot exist; reasons (text the scanner writes) have theirs replaced.
func (m *Meta) Encode() []byte {
	var b bytes.Buffer
	PutRecord(&b, 'S', strconv.FormatInt(m.Start, 10))
	for _, d := range slices.Sorted(maps.Keys(m.Dirs)) {
		PutRecord(&b, 'D', d)
		for _, e := range m.Dirs[d] {
			PutRecord(&b, e.Kind, e.Name)
		}
	}
	for _, s := range m.Skipped {
		PutRecord(&b, 'K', s.Path)
		b.WriteString(strings.ReplaceAll(s.Reason, "\x00", " "))
		b.WriteByte(0)
	}
	PutRecords(&b, 'I', m.IgnoredChanged)
	PutRecords(&b, 'B', m.Ignored)
	PutRecords(&b, 'R', m.Torn)
	if m.Journal != "" {
		PutRecord(&b, 'J', m.Journal)
	}
	if m.Partial {
		PutRecord(&b, 'W', "1")
	}
	PutRecords(&b, 'H', m.Linked)
	PutRecord(&b, 'T', strconv.FormatInt(m.Took, 10))
	for _, u := range m.Unrecordable {
		PutRecord(&b, 'U', u.Path)
		ignored := ""
		if u.Ignored {
			ignored = "1"
		}
		for _, v := range []string{strings.ReplaceAll(u.Reason, "\x00", " "), u.ID, ignored} {
			b.WriteString(v)
			b.WriteByte(0)
		}
	}
	return b.Bytes()
}

// parseMeta reads a meta entry. Paths in it are as untrusted as any
// name in the stream; parseScan checks them.
func parseMeta(raw []byte) (Meta, error) {
	m := Meta{Dirs: map[string][]DirEntry{}}
	dir, inDir := "", false
	start := false
	// The values are substrings of one string, the listings slices of one
	// array: a record costs its bytes and one DirEntry (read.go charges
	// it), not an allocation of its own.
	data := unsafeString(raw)
	entries := make([]DirEntry, 0, strings.Count(data, "\x00"))
	for len(data) > 0 {
		i := strings.IndexByte(data, 0)
		if i < 1 {
			return m, errors.New("scan meta: malformed record")
		}
		tag, v := data[0], data[1:i]
		data = data[i+1:]
		switch tag {
		case 'S':
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return m, fmt.Errorf("scan meta: bad start %q", v)
			}
			m.Start, start = n, true
		case 'D':
			if _, dup := m.Dirs[v]; dup {
				return m, fmt.Errorf("scan meta: directory %q listed twice", v)
			}
			dir, inDir = v, true
			entries = entries[len(entries):]
			m.Dirs[dir] = entries[:0:0]
		case EntryFile, EntryNotIgnored, EntryDir, EntryNotWalked:
			if !inDir {
				return m, errors.New("scan meta: listing entry outside a directory")
			}
			entries = append(entries, DirEntry{Name: v, Kind: tag})
			m.Dirs[dir] = entries[:len(entries):len(entries)]
		case 'K':
			j := strings.IndexByte(data, 0)
			if j < 0 {
				return m, errors.New("scan meta: skipped entry without a reason")
			}
			m.Skipped = append(m.Skipped, Skipped{Path: v, Reason: data[:j]})
			data = data[j+1:]
		case 'I':
			m.IgnoredChanged = append(m.IgnoredChanged, v)
		case 'B':
			m.Ignored = append(m.Ignored, v)
		case 'R':
			m.Torn = append(m.Torn, v)
		case 'J':
			if !ValidToken(v) {
				return m, fmt.Errorf("scan meta: bad journal token %q", v)
			}
			m.Journal = v
		case 'U':
			var f [3]string
			for k := range f {
				j := strings.IndexByte(data, 0)
				if j < 0 {
					return m, errors.New("scan meta: unrecordable entry cut short")
				}
				f[k], data = data[:j], data[j+1:]
			}
			m.Unrecordable = append(m.Unrecordable, Unrecordable{Path: v, Reason: f[0], ID: f[1], Ignored: f[2] == "1"})
		case 'W':
			m.Partial = true
		case 'H':
			m.Linked = append(m.Linked, v)
		case 'T':
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return m, fmt.Errorf("scan meta: bad duration %q", v)
			}
			m.Took = n
		default:
			return m, fmt.Errorf("scan meta: unknown record %q", tag)
		}
	}
	if !start {
		return m, errors.New("scan meta: no start stamp")
	}
	return m, nil
}

// Plan is the entry the scanner sends before the files: how many it is
// about to send and their size by stat, so the host can decide, before the
// first byte, whether git should keep them in a pack.
type Plan struct {
	Files int64
	Bytes int64
}

func (p Plan) Encode() []byte { return fmt.Appendf(nil, "%d %d", p.Files, p.Bytes) }

func parsePlan(data []byte) (Plan, error) {
	var p Plan
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return p, fmt.Errorf("scan plan: malformed %q", data)
	}
	var err1, err2 error
	p.Files, err1 = strconv.ParseInt(f[0], 10, 64)
	p.Bytes, err2 = strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || p.Files < 0 || p.Bytes < 0 {
		return p, fmt.Errorf("scan plan: malformed %q", data)
	}
	return p, nil
}

// ValidToken says t is a change journal's token, GEN:SEQ: the watcher's
// random generation and its event count.
func ValidToken(t string) bool {
	gen, seq, ok := strings.Cut(t, ":")
	return ok && gen != "" && seq != "" && strings.Trim(gen+seq, "0123456789abcdef") == ""
}
