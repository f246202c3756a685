package sandbox

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Diff is a unified diff of one file, as git diff or diff -u print it.
type Diff struct {
	Create bool // from /dev/null
	Delete bool // to /dev/null
	Hunks  []Hunk
}

// Hunk is one @@ section.
type Hunk struct {
	Header   string
	OldStart int // 1-based, as in the header
	Lines    []DiffLine
}

// DiffLine is one line of a hunk: Op is ' ', '-' or '+'; NoEOL marks a line
// followed by "\ No newline at end of file".
type DiffLine struct {
	Op    byte
	Text  string
	NoEOL bool
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// ParseDiff parses a unified diff of a single file. Header lines (diff --git,
// index, mode lines) are read for creation and deletion; file names are
// ignored, since the caller names the file. Hunk line counts are not
// trusted: a hunk runs to the next hunk or file header.
func ParseDiff(text string) (*Diff, error) {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	d := &Diff{}
	files := 0
	var cur *Hunk
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			files++
			if files > 1 {
				return nil, errors.New("the diff changes more than one file; send one diff per file")
			}
			d.Create = d.Create || diffName(l[4:]) == "/dev/null"
			d.Delete = d.Delete || diffName(lines[i+1][4:]) == "/dev/null"
			cur = nil
			i++
		case strings.HasPrefix(l, "diff --git "):
			if cur != nil || files > 0 {
				return nil, errors.New("the diff changes more than one file; send one diff per file")
			}
		case strings.HasPrefix(l, "new file mode"):
			d.Create = true
		case strings.HasPrefix(l, "deleted file mode"):
			d.Delete = true
		case strings.HasPrefix(l, "@@"):
			m := hunkHeader.FindStringSubmatch(l)
			if m == nil {
				return nil, fmt.Errorf("line %d: bad hunk header %q (want @@ -a,b +c,d @@)", i+1, l)
			}
			start, _ := strconv.Atoi(m[1])
			d.Hunks = append(d.Hunks, Hunk{Header: l, OldStart: start})
			cur = &d.Hunks[len(d.Hunks)-1]
		case cur == nil:
			// Text before the first header (a commit message, index lines).
		case strings.HasPrefix(l, `\`):
			if n := len(cur.Lines); n > 0 {
				cur.Lines[n-1].NoEOL = true
			}
		case l == "":
			// An editor stripped a blank context line's leading space.
			cur.Lines = append(cur.Lines, DiffLine{Op: ' '})
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			cur.Lines = append(cur.Lines, DiffLine{Op: l[0], Text: l[1:]})
		default:
			return nil, fmt.Errorf("line %d of the diff is not part of a hunk (lines start with ' ', '-' or '+'): %q", i+1, l)
		}
	}
	if len(d.Hunks) == 0 {
		return nil, errors.New("the diff has no hunks (@@ -a,b +c,d @@ sections)")
	}
	return d, nil
}

// diffName is the file name of a ---/+++ line, without a timestamp.
func diffName(s string) string {
	if name, _, ok := strings.Cut(s, "\t"); ok {
		return name
	}
	return strings.TrimSpace(s)
}

type fileLine struct {
	text string
	eol  bool
}

// Apply applies the hunks to old and returns the new content. Each hunk's
// context and removed lines must match exactly; like git apply, a hunk may
// sit at another line than its header says, but hunks keep their order. The
// first hunk that does not match is the error, naming it.
func (d *Diff) Apply(old string) (string, error) {
	var file []fileLine
	for rest := old; rest != ""; {
		line, after, found := strings.Cut(rest, "\n")
		file = append(file, fileLine{line, found})
		rest = after
	}
	var out []fileLine
	pos := 0 // lines of file consumed
	delta := 0
	for n, h := range d.Hunks {
		var want []string
		for _, l := range h.Lines {
			if l.Op != '+' {
				want = append(want, l.Text)
			}
		}
		expect := h.OldStart - 1 + delta
		if len(want) == 0 {
			expect = h.OldStart + delta // pure additions go after line OldStart
		}
		at := findBlock(file, want, pos, expect)
		if at < 0 {
			return "", hunkError(n+1, h, want, file, expect)
		}
		out = append(out, file[pos:at]...)
		i := at
		for _, l := range h.Lines {
			switch l.Op {
			case ' ':
				out = append(out, file[i])
				i++
			case '-':
				i++
			case '+':
				out = append(out, fileLine{l.Text, !l.NoEOL})
			}
		}
		delta = at - (h.OldStart - 1)
		if len(want) == 0 {
			delta = at - h.OldStart
		}
		pos = i
	}
	out = append(out, file[pos:]...)
	var b strings.Builder
	for i, l := range out {
		b.WriteString(l.text)
		if l.eol || i < len(out)-1 {
			b.WriteByte('\n')
		}
	}
	if d.Delete && b.Len() > 0 {
		return "", errors.New("the diff deletes the file but leaves lines in it")
	}
	return b.String(), nil
}

// findBlock finds want in file at or after from, nearest to expect.
func findBlock(file []fileLine, want []string, from, expect int) int {
	matches := func(at int) bool {
		if at < from || at+len(want) > len(file) {
			return false
		}
		for i, w := range want {
			if file[at+i].text != w {
				return false
			}
		}
		return true
	}
	expect = max(expect, from)
	for off := 0; expect-off >= from || expect+off <= len(file); off++ {
		if matches(expect + off) {
			return expect + off
		}
		if off > 0 && matches(expect-off) {
			return expect - off
		}
	}
	return -1
}

func hunkError(n int, h Hunk, want []string, file []fileLine, expect int) error {
	msg := fmt.Sprintf("hunk #%d (%s) does not match the file", n, h.Header)
	if len(want) > 0 {
		msg += fmt.Sprintf(": its context/removed lines starting with %q were not found", want[0])
		if expect >= 0 && expect < len(file) {
			msg += fmt.Sprintf(" (line %d of the file is %q)", expect+1, file[expect].text)
		}
	}
	return errors.New(msg)
}
