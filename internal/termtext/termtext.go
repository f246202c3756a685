// Package termtext makes text that an agent controls safe to print on a
// human's terminal: control characters (C0, DEL, C1), bidirectional
// controls and bytes that are not UTF-8 are written as C escapes, the way
// git quotes file names, so no escape sequence an agent wrote can retitle,
// clear or drive the terminal, and no text it wrote reads in another order
// than it is stored.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape writes every control character of s, newline and tab included, as
// an escape: for one-line fields (a commit subject, a name in a sentence).
func Escape(s string) string { return escape(s, false, false) }

// EscapeText is Escape keeping newlines and tabs: for text of many lines
// (a commit message, a log).
func EscapeText(s string) string { return escape(s, true, false) }

// Quote is a name as git quotes it: as it is when it needs no escape, else
// in double quotes with control characters, quotes and backslashes escaped.
func Quote(s string) string {
	if !needsQuote(s) {
		return s
	}
	return `"` + escape(s, false, true) + `"`
}

// Safe reports whether s prints as it is (nothing Escape would change).
func Safe(s string) bool { return escape(s, false, false) == s }

func needsQuote(s string) bool {
	return strings.ContainsAny(s, `"\`) || !Safe(s)
}

var short = map[rune]string{'\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`}

func escape(s string, keepLines, quoted bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r >= 0x80 && r <= 0x9f, bidi(r):
			// bytes that are not UTF-8, C1 controls (0x9b is a CSI on
			// some terminals) and bidirectional controls: octal, byte by
			// byte, as git does with core.quotePath
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\%03o`, c)
			}
		case keepLines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			if e, ok := short[r]; ok {
				b.WriteString(e)
			} else {
				fmt.Fprintf(&b, `\%03o`, r)
			}
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// bidi reports whether r is a bidirectional control: an invisible character
// that reorders the text around it, so "\u202egnp.exe" reads "exe.png" (the
// Trojan Source characters, CVE-2021-42574, with the marks beside them).
func bidi(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f: // ALM, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	}
	return false
}
