// Package textcap measures and cuts text by what it weighs in a JSON
// response, where a NUL byte costs six bytes and an invalid UTF-8 byte
// becomes U+FFFD: an MCP response has a size cap, and the bytes that count
// are the encoded ones.
package textcap

import (
	"unicode/utf8"
)

// runeCost is what the rune r (size bytes of text, invalid when r is
// utf8.RuneError of size 1) weighs once valid and JSON-encoded by
// encoding/json, which escapes control characters, quotes, backslashes,
// <, > and & and the line separators U+2028 and U+2029. It may overcount,
// never under.
func runeCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 3 // U+FFFD, as Valid makes it
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
		return 6
	}
	return size
}

// Len is what s weighs in a JSON string, once made valid UTF-8.
func Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		n += runeCost(r, size)
		i += size
	}
	return n
}

// Prefix returns how many bytes of s, from its start and cut at a rune,
// weigh at most budget.
func Prefix(s string, budget int) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if n += runeCost(r, size); n > budget {
			return i
		}
		i += size
	}
	return len(s)
}

// Suffix returns where the longest end of s that weighs at most budget
// starts, cut at a rune.
func Suffix(s string, budget int) int {
	n := 0
	for i := len(s); i > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if n += runeCost(r, size); n > budget {
			return i
		}
		i -= size
	}
	return 0
}

// Valid returns s with every invalid UTF-8 byte replaced by U+FFFD, as a
// JSON encoder would have it, and whether anything was replaced.
func Valid(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, false
	}
	b := make([]byte, 0, len(s)+16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b), true
}
