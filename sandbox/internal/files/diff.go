package files

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/sandbox/api"
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
	OldLines int // the header's counts: context and removed lines,
	NewLines int // context and added lines
	Lines    []DiffLine
}

// DiffLine is one line of a hunk: Op is ' ', '-' or '+'; NoEOL marks a line
// followed by "\ No newline at end of file".
type DiffLine struct {
	Op    byte
	Text  string
	NoEOL bool
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`) })

// ParseDiff parses a unified diff of a single file. Header lines (diff --git,
// index, mode lines) are read for creation and deletion; file names are
// ignored, since the caller names the file. A hunk holds exactly the lines
// its header counts, as git reads it; a hunk that ends before its counts,
// or has more hunk lines after them, is an error naming it, since the agent
// miscounted and the hunk cannot be read as it was meant. (git apply reads
// a hunk as far as its counts and drops what follows; that would apply a
// hunk other than the one written.)
func ParseDiff(text string) (*Diff, error) {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	d := &Diff{}
	files := 0
	var cur *Hunk
	oldLeft, newLeft := 0, 0 // lines cur still needs
	// closeHunk checks that cur got all its lines before line i (0-based).
	closeHunk := func() error {
		if cur != nil && (oldLeft > 0 || newLeft > 0) {
			return fmt.Errorf("hunk #%d (%s) ends after %d old and %d new lines; its header counts %d and %d. Fix the counts (old: context and - lines; new: context and + lines) and send it again",
				len(d.Hunks), cur.Header, cur.OldLines-oldLeft, cur.NewLines-newLeft, cur.OldLines, cur.NewLines)
		}
		return nil
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		inBody := cur != nil && (oldLeft > 0 || newLeft > 0)
		switch {
		case inBody && !strings.HasPrefix(l, "@@"):
			// the counts say what is body, as git reads it
			op := byte(' ') // an editor stripped a blank context line's leading space
			if l != "" {
				op = l[0]
			}
			switch op {
			case ' ':
				oldLeft--
				newLeft--
			case '-':
				oldLeft--
			case '+':
				newLeft--
			case '\\':
				if err := markNoEOL(cur, len(d.Hunks), i, l); err != nil {
					return nil, err
				}
				continue
			default:
				return nil, fmt.Errorf("line %d of the diff is not part of a hunk (lines start with ' ', '-' or '+'): %s", i+1, api.Quote(l))
			}
			if oldLeft < 0 || newLeft < 0 {
				return nil, tooLong(len(d.Hunks), cur)
			}
			text := ""
			if l != "" {
				text = l[1:]
			}
			cur.Lines = append(cur.Lines, DiffLine{Op: op, Text: text})
		case strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ "):
			if err := closeHunk(); err != nil {
				return nil, err
			}
			files++
			if files > 1 {
				return nil, errors.New("the diff changes more than one file; send one diff per file")
			}
			d.Create = d.Create || diffName(l[4:]) == "/dev/null"
			d.Delete = d.Delete || diffName(lines[i+1][4:]) == "/dev/null"
			cur = nil
			i++
		case strings.HasPrefix(l, "diff --git "):
			if err := closeHunk(); err != nil {
				return nil, err
			}
			if cur != nil || files > 0 {
				return nil, errors.New("the diff changes more than one file; send one diff per file")
			}
		case strings.HasPrefix(l, "@@"):
			if err := closeHunk(); err != nil {
				return nil, err
			}
			m := hunkHeader().FindStringSubmatch(l)
			if m == nil {
				return nil, fmt.Errorf("line %d: bad hunk header %s (want @@ -a,b +c,d @@)", i+1, api.Quote(l))
			}
			start, err1 := strconv.Atoi(m[1])
			oldN, err2 := headerCount(m[2])
			newN, err3 := headerCount(m[4])
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, fmt.Errorf("line %d: bad hunk header %s: %v", i+1, api.Quote(l), err)
			}
			d.Hunks = append(d.Hunks, Hunk{Header: strings.TrimSpace(m[0]), OldStart: start, OldLines: oldN, NewLines: newN})
			cur = &d.Hunks[len(d.Hunks)-1]
			oldLeft, newLeft = oldN, newN
		case cur == nil:
			// Text before the first header (a commit message, index lines).
		case strings.HasPrefix(l, `\`):
			// "\ No newline at end of file" after the hunk's last line
			if err := markNoEOL(cur, len(d.Hunks), i, l); err != nil {
				return nil, err
			}
		case l == "-- ":
			// git format-patch's signature: the diff is over
			i = len(lines)
		case l == "":
			// a blank line after the last hunk
		case l[0] == ' ' || l[0] == '-' || l[0] == '+':
			return nil, tooLong(len(d.Hunks), cur)
		default:
			return nil, fmt.Errorf("line %d of the diff is not part of a hunk (lines start with ' ', '-' or '+'): %s", i+1, api.Quote(l))
		}
	}
	if err := closeHunk(); err != nil {
		return nil, err
	}
	if len(d.Hunks) == 0 {
		return nil, errors.New("the diff has no hunks (@@ -a,b +c,d @@ sections)")
	}
	return d, nil
}

// markNoEOL reads line i (0-based) of the diff, l, which starts with a
// backslash: "\ No newline at end of file" (or its translation: git checks
// only for "\ " and a length of 12) marks the line before it. One that opens
// hunk n marks no line: git ignores it, so the line meant would be read as
// ending in a newline; it is refused, as is a backslash line that is no such
// marker (git: "corrupt patch").
func markNoEOL(h *Hunk, n, i int, l string) error {
	if !strings.HasPrefix(l, `\ `) || len(l) < 11 {
		return fmt.Errorf("line %d of the diff starts with a backslash but is not \"\\ No newline at end of file\": %s", i+1, api.Quote(l))
	}
	if len(h.Lines) == 0 {
		return fmt.Errorf("line %d: \"\\ No newline at end of file\" starts hunk #%d (%s), so it marks no line; put it right after the line it marks, the last of the old or the new file", i+1, n, h.Header)
	}
	h.Lines[len(h.Lines)-1].NoEOL = true
	return nil
}

func tooLong(n int, h *Hunk) error {
	return fmt.Errorf("hunk #%d (%s) has more lines than its header counts (%d old: context and - lines; %d new: context and + lines). Fix the counts and send it again",
		n, h.Header, h.OldLines, h.NewLines)
}

// headerCount reads a hunk header's line count, 1 when it is left out.
func headerCount(s string) (int, error) {
	if s == "" {
		return 1, nil
	}
	return strconv.Atoi(s)
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
