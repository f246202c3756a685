package gateway

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Scrubber reads what its reader holds with every occurrence of each
// pattern replaced by its replacement, on the whole stream: the leftmost
// match first; at one position, the longest pattern (then the first pair),
// so a secret whose value begins another's never leaves the rest of the
// longer value in view. It streams: a pattern split across reads is still
// found. It
// holds back at most the longest pattern's length less one byte: the end
// of what it has read that may be the start of a pattern.
//
// The gateway scrubs what a bound host answers with it, so that a server
// that echoes a secret's value shows the sandbox its placeholder instead.
type Scrubber struct {
	r        io.Reader
	old, new [][]byte
	longest  int
	in       []byte // read, not yet decided
	out      []byte // decided, not yet returned
	buf      []byte
	err      error
}

// NewScrubber scrubs r with pairs: pattern, replacement, pattern,
// replacement... No pattern may be empty.
func NewScrubber(r io.Reader, pairs ...string) (*Scrubber, error) {
	if len(pairs)%2 != 0 {
		return nil, errors.New("scrubber: an odd number of strings: want pattern, replacement pairs")
	}
	s := &Scrubber{r: r}
	for i := 0; i < len(pairs); i += 2 {
		if pairs[i] == "" {
			return nil, errors.New("scrubber: an empty pattern")
		}
		s.old = append(s.old, []byte(pairs[i]))
		s.new = append(s.new, []byte(pairs[i+1]))
		s.longest = max(s.longest, len(pairs[i]))
	}
	return s, nil
}

// Read implements io.Reader.
func (s *Scrubber) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(s.out) == 0 {
		if s.err != nil {
			if len(s.in) == 0 {
				return 0, s.err
			}
			s.out, s.in = scrubStep(s.out[:0], s.in, true, s.old, s.new)
			continue
		}
		if s.buf == nil {
			s.buf = make([]byte, 32<<10)
		}
		n, err := s.r.Read(s.buf)
		s.in = append(s.in, s.buf[:n]...)
		s.err = err
		s.out, s.in = scrubStep(s.out[:0], s.in, err != nil, s.old, s.new)
		if n == 0 && err == nil && len(s.out) == 0 {
			return 0, nil
		}
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// scrubStep appends to out what in decides (all of it when final): the
// text before each match and the match's replacement, up to where a
// pattern may start that in does not hold whole. It returns out and what
// is left undecided, moved to the start of in's array.
func scrubStep(out, in []byte, final bool, old, new [][]byte) ([]byte, []byte) {
	start := 0
	for {
		rest := in[start:]
		h := len(rest)
		if !final {
			h = holdFrom(rest, old)
		}
		at, k := -1, -1
		for i, o := range old {
			if j := bytes.Index(rest, o); j >= 0 && j < h && (at < 0 || j < at || (j == at && len(o) > len(old[k]))) {
				at, k = j, i
			}
		}
		if at < 0 {
			out = append(out, rest[:h]...)
			n := copy(in, rest[h:])
			return out, in[:n]
		}
		out = append(out, rest[:at]...)
		out = append(out, new[k]...)
		start += at + len(old[k])
	}
}

// holdFrom is where the end of b may be the start of a pattern b does not
// hold whole: the earliest such position, or len(b).
func holdFrom(b []byte, old [][]byte) int {
	longest := 0
	for _, o := range old {
		longest = max(longest, len(o))
	}
	for p := max(0, len(b)-longest+1); p < len(b); p++ {
		for _, o := range old {
			if len(o) > len(b)-p && bytes.HasPrefix(o, b[p:]) {
				return p
			}
		}
	}
	return len(b)
}

// ReplaceAll replaces each pattern of pairs (pattern, replacement, ...) in
// s, as a Scrubber of s would; an empty pattern is left out.
func ReplaceAll(s string, pairs ...string) string {
	var old, new [][]byte
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" && len(pairs[i]) <= len(s) {
			old = append(old, []byte(pairs[i]))
			new = append(new, []byte(pairs[i+1]))
		}
	}
	if len(old) == 0 {
		return s
	}
	out, _ := scrubStep(nil, []byte(s), true, old, new)
	return string(out)
}

// ScrubText replaces each pattern of pairs (pattern, replacement, ...) in
// s in any ASCII letter case, and in the form Go's %q writes it: what the
// gateway does to every text a bound host can put a value in that is not
// a body (a header's name or value, an error that quotes the server's
// answer). An HTTP header's name reaches the client in its canonical case
// (X-Leak-Sk-Live-...), and an error quotes what it could not parse.
func ScrubText(s string, pairs ...string) string {
	var old, new []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == "" {
			continue
		}
		old, new = append(old, asciiLower(pairs[i])), append(new, pairs[i+1])
		if q := strconv.Quote(pairs[i]); q[1:len(q)-1] != pairs[i] {
			r := strconv.Quote(pairs[i+1])
			old, new = append(old, asciiLower(q[1:len(q)-1])), append(new, r[1:len(r)-1])
		}
	}
	if len(old) == 0 {
		return s
	}
	lower := asciiLower(s)
	var b strings.Builder
	start := 0
	for {
		at, k := -1, -1
		for i, o := range old {
			if j := strings.Index(lower[start:], o); j >= 0 && (at < 0 || j < at || (j == at && len(o) > len(old[k]))) {
				at, k = j, i
			}
		}
		if at < 0 {
			if start == 0 {
				return s
			}
			b.WriteString(s[start:])
			return b.String()
		}
		b.WriteString(s[start : start+at])
		b.WriteString(new[k])
		start += at + len(old[k])
	}
}

// asciiLower lower-cases the ASCII letters of s only, so that offsets in
// the result are offsets in s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
