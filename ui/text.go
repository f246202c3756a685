package ui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// textView is a scrollable text: a sandbox's diff, or an event opened in
// full. Files of a diff are anchors the keys ] and [ jump between.
type textView struct {
	title   string
	lines   []string // drawn lines, escaped and styled
	anchors []int    // first line of each file
	files   []string // the files' names, with their counts
	offset  int
	width   int
	height  int // lines of text it shows, its header aside
	note    string
	jumped  int // the file ] or [ went to, -1 after any other move
}

// setText replaces the text; the view stays where it was when it can.
func (v textView) setText(lines []string, anchors []int, files []string) textView {
	v.lines, v.anchors, v.files, v.note, v.jumped = lines, anchors, files, "", -1
	return v.clamp()
}

func (v textView) clamp() textView {
	v.offset = min(max(v.offset, 0), max(len(v.lines)-max(v.height, 1), 0))
	return v
}

// key scrolls; ok is false for a key it does not use.
func (v textView) key(k tea.KeyMsg) (textView, bool) {
	page := max(v.height-1, 1)
	switch k.String() {
	case "down", "j":
		v.offset++
	case "up", "k":
		v.offset--
	case "pgdown", " ", "f", "ctrl+d":
		v.offset += page
	case "pgup", "b", "ctrl+u":
		v.offset -= page
	case "home", "g":
		v.offset = 0
	case "end", "G":
		v.offset = len(v.lines)
	case "]", "n", "[", "N":
		// The file jumped to is the current one even when it starts
		// too near the end to be drawn at the top.
		f := v.file()
		if k.String() == "]" || k.String() == "n" {
			f = min(f+1, len(v.anchors)-1)
		} else {
			f = max(f-1, 0)
		}
		if f >= 0 && f < len(v.anchors) {
			v.offset, v.jumped = v.anchors[f], f
		}
		return v.clamp(), true
	default:
		return v, false
	}
	v.jumped = -1
	return v.clamp(), true
}

// file is the index of the file the top line is in (or the one jumped to),
// -1 before the first.
func (v textView) file() int {
	if v.jumped >= 0 && v.jumped < len(v.anchors) {
		return v.jumped
	}
	f := -1
	for i, a := range v.anchors {
		if a <= v.offset {
			f = i
		}
	}
	return f
}

// view draws the header and height lines.
func (v textView) view(st styles) []string {
	head := st.bold.Render(v.title)
	if f := v.file(); f >= 0 && f < len(v.files) {
		head += st.dim.Render(fmt.Sprintf("  file %d/%d: ", f+1, len(v.files))) + v.files[f]
	} else if len(v.files) > 0 {
		head += st.dim.Render(fmt.Sprintf("  %d file(s)", len(v.files)))
	}
	if len(v.lines) > v.height {
		pct := 100
		if d := len(v.lines) - v.height; d > 0 {
			pct = v.offset * 100 / d
		}
		head += st.dim.Render(fmt.Sprintf("  %d%%", pct))
	}
	out := []string{head}
	if v.note != "" {
		out = append(out, v.note)
	}
	end := min(v.offset+max(v.height-len(out)+1, 1), len(v.lines))
	out = append(out, v.lines[min(v.offset, end):end]...)
	return out
}

// maxDiffLines is the most lines of a diff the UI draws; `litterbox diff`
// shows all of it.
const maxDiffLines = 50000

// renderDiff draws a diff (git diff, no colour) for a terminal: agent text
// escaped, each line coloured by its kind, with each file's first line as
// an anchor and its counts.
func renderDiff(st styles, text string) (lines []string, anchors []int, files []string) {
	raw := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		raw = nil
	}
	cut := 0
	if len(raw) > maxDiffLines {
		cut, raw = len(raw)-maxDiffLines, raw[:maxDiffLines]
	}
	var added, deleted []int
	for _, l := range raw {
		shown := termtext.Escape(expandTabs(l))
		switch {
		case strings.HasPrefix(l, "diff --git "):
			anchors = append(anchors, len(lines))
			name := l[len("diff --git "):]
			if i := strings.LastIndex(name, " b/"); i >= 0 {
				name = name[i+3:]
			}
			files = append(files, termtext.Escape(name))
			added, deleted = append(added, 0), append(deleted, 0)
			lines = append(lines, st.file.Render(shown))
		case len(anchors) > 0 && (strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "index ") ||
			strings.HasPrefix(l, "new file") || strings.HasPrefix(l, "deleted file") || strings.HasPrefix(l, "old mode") ||
			strings.HasPrefix(l, "new mode") || strings.HasPrefix(l, "similarity") || strings.HasPrefix(l, "rename ") || strings.HasPrefix(l, "Binary files")):
			lines = append(lines, st.file.Render(shown))
		case strings.HasPrefix(l, "@@"):
			lines = append(lines, st.hunk.Render(shown))
		case strings.HasPrefix(l, "+"):
			if n := len(added); n > 0 {
				added[n-1]++
			}
			lines = append(lines, st.added.Render(shown))
		case strings.HasPrefix(l, "-"):
			if n := len(deleted); n > 0 {
				deleted[n-1]++
			}
			lines = append(lines, st.removed.Render(shown))
		default:
			lines = append(lines, shown)
		}
	}
	for i := range files {
		files[i] += st.dim.Render(fmt.Sprintf(" (+%d -%d)", added[i], deleted[i]))
	}
	if cut > 0 {
		lines = append(lines, st.warn.Render(fmt.Sprintf("[%d more lines not shown here: `litterbox diff` shows all of it]", cut)))
	}
	return lines, anchors, files
}
