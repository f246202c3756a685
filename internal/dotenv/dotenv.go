// Package dotenv reads the assignments of a dotenv file (`.env`,
// `.env.local`): `KEY=value`, `export KEY=value`, a value bare (up to a
// ` #` comment), in single or in double quotes. It finds where each value
// is, byte for byte, so that a value can be replaced in place (by a
// secret's placeholder: docs/secrets.md) and everything else in the file
// kept as it was. A value is its text as written between its quotes, no
// escape read: what a placeholder stands for is exactly those bytes.
package dotenv

import (
	"bytes"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Is says whether the file at p (a slash path) is a dotenv file: named
// `.env` or `.env.SOMETHING`.
func Is(p string) bool {
	base := path.Base(p)
	return base == ".env" || strings.HasPrefix(base, ".env.")
}

// Entry is one assignment of a file.
type Entry struct {
	Key string
	// Value is the value's text; Start and End are its bytes in the file
	// (inside the quotes of a quoted one).
	Value      string
	Start, End int
	// Line is the entry's line, from 1.
	Line int
	// Open is set for a quoted value whose quote does not close on its
	// line (a value on several lines), which is not read: Value is empty.
	Open bool
}

var assign = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.]*)[ \t]*=[ \t]*`)
})

// Parse is the assignments of data, in order; a line that is none (a
// comment, a blank line, anything else) is left out.
func Parse(data []byte) []Entry {
	var out []Entry
	off := 0
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off
		}
		line := data[off:end]
		if m := assign().FindSubmatchIndex(line); m != nil {
			e := Entry{Key: string(line[m[2]:m[3]]), Line: n}
			rest := line[m[1]:]
			at := off + m[1]
			switch {
			case len(rest) > 0 && (rest[0] == '"' || rest[0] == '\''):
				q := rest[0]
				i := closing(rest[1:], q)
				if i < 0 {
					e.Open, e.Start, e.End = true, at, at
				} else {
					e.Start, e.End = at+1, at+1+i
				}
			default:
				v := rest
				if i := bytes.Index(v, []byte(" #")); i >= 0 {
					v = v[:i]
				}
				if i := bytes.Index(v, []byte("\t#")); i >= 0 {
					v = v[:i]
				}
				v = bytes.TrimRight(v, " \t\r")
				e.Start, e.End = at, at+len(v)
			}
			e.Value = string(data[e.Start:e.End])
			out = append(out, e)
		}
		off = end + 1
	}
	return out
}

// closing is where quote q closes in s, -1 when it does not; in double
// quotes a backslash escapes the next byte.
func closing(s []byte, q byte) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == q:
			return i
		case q == '"' && s[i] == '\\':
			i++
		}
	}
	return -1
}

// Value is the value of key in data: its last assignment's, as dotenv
// libraries read it; false when data assigns it nowhere.
func Value(data []byte, key string) (string, bool) {
	v, ok := "", false
	for _, e := range Parse(data) {
		if e.Key == key && !e.Open {
			v, ok = e.Value, true
		}
	}
	return v, ok
}

// Replace is data with the value of each entry of es replaced by with[i].
// es must be Parse's entries of data, in order (a subset).
func Replace(data []byte, es []Entry, with []string) []byte {
	var b bytes.Buffer
	last := 0
	for i, e := range es {
		b.Write(data[last:e.Start])
		b.WriteString(with[i])
		last = e.End
	}
	b.Write(data[last:])
	return b.Bytes()
}
