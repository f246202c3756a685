package ui

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/litterbox-dev/litterbox/git"
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

// renderDiff draws a diff for a terminal: every file of the list, in its
// order, each an anchor named with its counts; what the cutter held of its
// part of the patch, agent text escaped, each line coloured by its kind;
// and, wherever something was left out (a line cut short, lines past the
// file's share, a file never read), a line that says so and names it.
// whole says what shows all of it ("`litterbox diff NAME`"). The first
// lines sum up the files and every cut.
func renderDiff(st styles, list *git.FileList, cut *git.PatchCutter, whole string) (lines []string, anchors []int, names []string) {
	files := list.Files
	var cuts []string
	for i, f := range files {
		if c := fileCut(cut, i); c != "" {
			cuts = append(cuts, termtext.Quote(f.Path)+": "+c)
		}
	}
	lines = append(lines, st.bold.Render(fmt.Sprintf("%d file(s) changed, +%d -%d", list.Total, list.Added, list.Deleted)))
	if n := list.Total - len(files); n > 0 {
		after := ""
		if len(files) > 0 {
			after = ", after " + termtext.Quote(files[len(files)-1].Path)
		}
		lines = append(lines, st.warn.Render(fmt.Sprintf("Only the first %d file(s) are listed here (the view lists %d files, %d MiB of names, at most): %d more%s, are not (%s lists them all)",
			len(files), git.DefaultPatchLimits.Files, git.DefaultPatchLimits.NameBytes>>20, n, after, strings.TrimSuffix(whole, "`")+" --stat`")))
	}
	if len(cuts) > 0 {
		lines = append(lines, st.warn.Render(fmt.Sprintf("Not all shown here (%s shows all of it); left out:", whole)))
		for i, c := range cuts {
			if i == 20 {
				lines = append(lines, st.warn.Render(fmt.Sprintf("  … and %d more file(s) (] walks every file)", len(cuts)-i)))
				break
			}
			lines = append(lines, st.warn.Render("  "+c))
		}
	}
	if cut.Stray > 0 || cut.Mismatch {
		lines = append(lines, st.err.Render(fmt.Sprintf("git's patch did not match its list of files (%d line(s) placed under no file): a body below may be under another file's name; %s shows git's own", cut.Stray, whole)))
	}
	for i, f := range files {
		name := termtext.Quote(f.Path)
		counts := fmt.Sprintf("+%d -%d", f.Added, f.Deleted)
		if w := f.What(); w != "" {
			counts = w + ", " + counts
		}
		anchors = append(anchors, len(lines))
		names = append(names, name+st.dim.Render(" ("+counts+")"))
		pf := cut.Files[i]
		if len(pf.Lines) == 0 {
			lines = append(lines, st.file.Render("file "+name+" ("+counts+")")+st.warn.Render(" not shown: "+fileCut(cut, i)))
			continue
		}
		for _, l := range pf.Lines {
			lines = append(lines, diffLine(st, l))
			if l.Cut > 0 {
				// a line of its own: the screen cuts a wide line at its
				// width, and the note must show whatever the width
				lines = append(lines, st.warn.Render(fmt.Sprintf("[… %d more byte(s) of the line above not shown]", l.Cut)))
			}
		}
		if d := pf.Dropped(); d > 0 {
			lines = append(lines, st.warn.Render(fmt.Sprintf("[%d more line(s) of %s not shown here: %s shows all of it]", d, name, whole)))
		}
	}
	return lines, anchors, names
}

// fileCut says what was left out of the i-th file's part, "" for nothing.
func fileCut(cut *git.PatchCutter, i int) string {
	pf := cut.Files[i]
	switch {
	case !pf.Reached && cut.Stopped:
		return fmt.Sprintf("never read (the view reads %d MiB of a diff at most)", git.DefaultPatchLimits.Read>>20)
	case !pf.Reached:
		return "not in git's patch"
	case len(pf.Lines) == 0:
		return fmt.Sprintf("all %d line(s) (the view holds %d lines of a diff, shared among its files)", pf.Total, git.DefaultPatchLimits.Lines)
	}
	var parts []string
	if d := pf.Dropped(); d > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d line(s)", d, pf.Total))
	}
	if n, b := pf.CutLines(); n > 0 {
		parts = append(parts, fmt.Sprintf("the end of %d long line(s), %d byte(s)", n, b))
	}
	return strings.Join(parts, "; ")
}

// diffLine draws one line of a patch, escaped and coloured by its kind.
func diffLine(st styles, l git.PatchLine) string {
	shown := termtext.Escape(expandTabs(l.Text))
	switch t := l.Text; {
	case strings.HasPrefix(t, "diff --git "), strings.HasPrefix(t, "+++ "), strings.HasPrefix(t, "--- "), strings.HasPrefix(t, "index "),
		strings.HasPrefix(t, "new file"), strings.HasPrefix(t, "deleted file"), strings.HasPrefix(t, "old mode"),
		strings.HasPrefix(t, "new mode"), strings.HasPrefix(t, "Binary files"):
		return st.file.Render(shown)
	case strings.HasPrefix(t, "@@"):
		return st.hunk.Render(shown)
	case strings.HasPrefix(t, "+"):
		return st.added.Render(shown)
	case strings.HasPrefix(t, "-"):
		return st.removed.Render(shown)
	}
	return shown
}
