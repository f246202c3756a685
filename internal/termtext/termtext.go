// Package termtext makes text that an agent controls safe to print on a
// human's terminal, in one place for every front end:
//
//   - control characters (C0, DEL, C1), bidirectional controls and bytes
//     that are not UTF-8 are written as C escapes, the way git quotes file
//     names, so no escape sequence an agent wrote can retitle, clear or
//     drive the terminal, and no text it wrote reads in another order than
//     it is stored;
//   - every character whose width a terminal and the program measuring it
//     may see differently is written as \u{hex}: zero-width and format
//     characters (U+200B, U+00AD, U+0600, U+2028...), combining marks and
//     every code point after the first of a grapheme cluster (an emoji's
//     skin-tone modifier, a ZWJ sequence, a flag), unassigned and private
//     code points. What is left is one character per cluster, each one or
//     two cells wide by every measure, so a line takes exactly the cells it
//     is measured at and agent text cannot wrap into a row of its own.
//
// JSON does the same for text that leaves as JSON (`watch --json`): the
// characters Escape would change are written as JSON \u escapes, so the
// decoded text is unchanged and the raw stream is safe to show.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Escape writes every control character of s, newline and tab included, as
// an escape: for one-line fields (a commit subject, a name in a sentence).
func Escape(s string) string { return escape(s, false, false) }

// EscapeText is Escape keeping newlines and tabs: for text of many lines
// (a commit message, a log). A screen that draws it must expand the tabs
// (ExpandTabs).
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
	clusterEnd := 0 // where the grapheme cluster the current rune is in ends
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		first := i >= clusterEnd
		if first && r >= 0x80 {
			c, _ := ansi.FirstGraphemeCluster(s[i:], ansi.GraphemeWidth)
			clusterEnd = i + max(len(c), size)
		}
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
		case r >= 0x80 && (!first || !Plain(r)):
			// a code point whose width is zero or not agreed on, or one
			// that joins the character before it
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Plain reports whether r, standing alone, is drawn as it is measured: a
// letter, digit, punctuation or symbol of one or two cells by both the
// grapheme measure (lipgloss) and wcwidth's, that joins no character
// before or after it. ASCII's printable characters are; control, format,
// combining, spacing, private and unassigned code points are not, nor the
// few letters that join their neighbours (prepended marks, Hangul vowel
// and final jamo, emoji modifiers, regional indicators).
func Plain(r rune) bool {
	if r >= 0x20 && r < 0x7f {
		return true
	}
	if r < 0xa0 || !unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) || joins(r) {
		return false
	}
	s := string(r)
	w := ansi.StringWidth(s)
	return (w == 1 || w == 2) && w == ansi.StringWidthWc(s)
}

// joins reports whether r is a letter or symbol that grapheme clustering
// joins to a neighbour (UAX #29's Prepend, SpacingMark and Extend among
// letters and symbols, Hangul V and T, regional indicators), a filler
// drawn blank, or one whose width the measures disagree on.
func joins(r rune) bool {
	switch {
	case r == 0x0d4e, r == 0x111c2, r == 0x111c3, r == 0x1193f, r == 0x11941, r == 0x11a3a,
		r >= 0x11a84 && r <= 0x11a89, r == 0x11d46, r == 0x11f02: // Prepend letters
		return true
	case r == 0x0e33, r == 0x0eb3: // Thai and Lao AM: SpacingMark
		return true
	case r == 0xff9e, r == 0xff9f: // halfwidth voiced marks: Extend
		return true
	case r >= 0x1160 && r <= 0x11ff, r >= 0xd7b0 && r <= 0xd7ff: // Hangul V, T
		return true
	case r == 0x115f, r == 0x3164, r == 0xffa0: // Hangul fillers
		return true
	case r >= 0x1f3fb && r <= 0x1f3ff: // emoji modifiers (skin tones)
		return true
	case r >= 0x1f1e6 && r <= 0x1f1ff: // regional indicators (flags)
		return true
	case r >= 0x3248 && r <= 0x324f:
		// circled numbers on black squares: one cell to lipgloss and
		// go-runewidth (East Asian ambiguous), two to glibc's wcwidth,
		// so to tmux (found by TestPlainAsTmuxDraws)
		return true
	}
	return false
}

// ExpandTabs turns each tab of a line of escaped text into spaces to the
// next multiple of 8 cells, as a terminal moves, so a screen that draws the
// line overwrites every cell it covers.
func ExpandTabs(line string) string {
	if !strings.Contains(line, "\t") {
		return line
	}
	var b strings.Builder
	col := 0
	for i, seg := range strings.Split(line, "\t") {
		if i > 0 {
			n := 8 - col%8
			b.WriteString(strings.Repeat(" ", n))
			col += n
		}
		b.WriteString(seg)
		col += ansi.StringWidth(seg)
	}
	return b.String()
}

// JSON returns encoded JSON (as encoding/json writes it) with every
// character that Escape would change written as a \u escape (a UTF-16 pair
// past U+FFFF): C1 and bidirectional controls, zero-width, format and
// combining characters. The value it decodes to is the same.
func JSON(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		if data[i] < utf8.RuneSelf {
			if out != nil {
				out = append(out, data[i])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if !(r == utf8.RuneError && size == 1) && Plain(r) {
			if out != nil {
				out = append(out, data[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(data)+32), data[:i]...)
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	if out == nil {
		return data
	}
	return out
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
