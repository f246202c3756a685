package commands

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// termDiff writes a diff to a terminal: every line's text escaped as log
// escapes a subject (termtext), so nothing an agent wrote in a file or a
// name retitles, clears or switches the terminal, and each line coloured
// by its kind when colour is on (git cannot colour what it writes to a
// pipe). It holds at most termChunk bytes of a line: a line of 34 MB is
// written in pieces as it comes.
type termDiff struct {
	w     io.Writer
	color bool
	line  []byte // the part of the current line not yet written
	open  bool   // part of the current line was written, its colour set
	err   error
}

// termChunk is how much of a line termDiff holds before it writes it.
const termChunk = 64 << 10

func (t *termDiff) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && t.err == nil {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.line = append(t.line, p...)
			if len(t.line) >= termChunk {
				t.flush(false)
			}
			break
		}
		t.line = append(t.line, p[:i]...)
		t.flush(true)
		p = p[i+1:]
	}
	return n, t.err
}

// Close writes a last line that has no newline.
func (t *termDiff) Close() error {
	if len(t.line) > 0 || t.open {
		t.flush(true)
	}
	return t.err
}

// flush writes the held part of the line, all of it at its end, else up
// to its last whole character.
func (t *termDiff) flush(end bool) {
	part := t.line
	if !end {
		k := len(part)
		for j := len(part) - 1; j >= 0 && j >= len(part)-utf8.UTFMax; j-- {
			if utf8.RuneStart(part[j]) {
				if !utf8.FullRune(part[j:]) {
					k = j // a character cut by the write: it waits for its end
				}
				break
			}
		}
		part = part[:k]
	}
	var b strings.Builder
	if !t.open && t.color {
		b.WriteString(lineColor(part))
	}
	t.open = !end
	b.WriteString(termtext.EscapeText(string(part)))
	if end {
		if t.color {
			b.WriteString("\x1b[m")
		}
		b.WriteByte('\n')
	}
	t.line = append(t.line[:0], t.line[len(part):]...)
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		t.err = err
	}
}

// lineColor is the colour of a diff line by how it starts: headers bold,
// hunks cyan, additions green, deletions red (git's defaults).
func lineColor(l []byte) string {
	s := string(l[:min(len(l), 16)])
	for _, h := range []string{"diff --git ", "index ", "--- ", "+++ ", "new file", "deleted file", "old mode", "new mode", "similarity", "rename ", "Binary files"} {
		if strings.HasPrefix(s, h) {
			return "\x1b[1m"
		}
	}
	switch {
	case strings.HasPrefix(s, "@@"):
		return "\x1b[36m"
	case strings.HasPrefix(s, "+"):
		return "\x1b[32m"
	case strings.HasPrefix(s, "-"):
		return "\x1b[31m"
	}
	return ""
}
