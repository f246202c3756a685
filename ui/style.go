package ui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// styles are the UI's looks, made for one output: with NO_COLOR set or an
// output that is not a terminal, the renderer's profile has no colour and
// these draw plain text (the selection keeps its "> " mark).
type styles struct {
	title, header, selected, dim, bold, err, ok, warn, info, key lipgloss.Style
	added, removed, hunk, file                                   lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	s := func() lipgloss.Style { return r.NewStyle() }
	return styles{
		title:    s().Bold(true).Reverse(true),
		header:   s().Bold(true).Foreground(lipgloss.Color("8")),
		selected: s().Bold(true).Foreground(lipgloss.Color("14")),
		dim:      s().Foreground(lipgloss.Color("8")),
		bold:     s().Bold(true),
		err:      s().Foreground(lipgloss.Color("9")),
		ok:       s().Foreground(lipgloss.Color("10")),
		warn:     s().Foreground(lipgloss.Color("11")),
		info:     s().Foreground(lipgloss.Color("12")),
		key:      s().Bold(true).Foreground(lipgloss.Color("12")),
		added:    s().Foreground(lipgloss.Color("2")),
		removed:  s().Foreground(lipgloss.Color("1")),
		hunk:     s().Foreground(lipgloss.Color("6")),
		file:     s().Bold(true),
	}
}

// fit cuts a line (styled or not) to width cells.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if lipgloss.Width(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// pad cuts or pads s to exactly width cells.
func pad(s string, width int) string {
	s = fit(s, width)
	if w := lipgloss.Width(s); w < width {
		s += strings.Repeat(" ", width-w)
	}
	return s
}

// screen joins lines into exactly height rows, each cut to width, so the
// last row is always the last line drawn.
func screen(lines []string, width, height int) string {
	if len(lines) > height {
		lines = lines[:height]
	}
	out := make([]string, height)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], width)
		}
	}
	return strings.Join(out, "\n")
}

// expandTabs turns tabs into spaces to the next multiple of 8 cells, as a
// terminal shows them, so widths are what they look.
func expandTabs(s string) string { return termtext.ExpandTabs(s) }

// summary is an event on one line of width cells: what it did, cut to
// leave room for how it ended, which always shows (in a word when the whole
// outcome leaves too little room).
func summary(e activity.Event, width int) string {
	what := activity.What(e)
	for _, outcome := range []string{activity.Outcome(e), activity.Verdict(e)} {
		if w := width - lipgloss.Width(outcome); w >= 16 || outcome == "" {
			return fit(what, w) + outcome
		}
	}
	return fit(what+activity.Verdict(e), width)
}

// wrap cuts a line into rows of width cells, none lost: for text that must
// show whole (an event opened), where fit would cut it.
func wrap(s string, width int) []string {
	if width <= 0 || lipgloss.Width(s) <= width {
		return []string{s}
	}
	return strings.Split(ansi.Hardwrap(s, width, true), "\n")
}
