package ui

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// row is one sandbox as the list shows it: what the engine said, with what
// the records and git add.
type row struct {
	key     sbKey
	sb      api.Sandbox
	last    *activity.Event // its latest event, nil when none is known
	stats   *sbStats        // nil until measured
	svcs    map[string]string
	refused int
	// broken is the note that its record does not follow at a line
	// (activity.KindBroken), nil when none came
	broken *activity.Event
	// pending counts the agents' requests for hosts that wait (w shows
	// them).
	pending int
}

// sbKey names a sandbox across repositories.
type sbKey struct{ repo, name string }

// sbStats is how much a sandbox's branch changes.
type sbStats struct {
	commits, files, added, deleted int
}

// listPane is the sandboxes, one a row, and which is selected.
type listPane struct {
	rows     []row
	cursor   int
	offset   int
	width    int
	height   int // rows of sandboxes it may show, its header aside
	allRepos bool
	focused  bool
	loaded   bool // a first list arrived
}

// setRows replaces the rows, keeping the selection on the same sandbox.
func (p listPane) setRows(rows []row) listPane {
	var sel sbKey
	if p.cursor < len(p.rows) {
		sel = p.rows[p.cursor].key
	}
	p.rows, p.loaded = rows, true
	p.cursor = min(p.cursor, max(len(rows)-1, 0))
	for i, r := range rows {
		if r.key == sel {
			p.cursor = i
		}
	}
	return p.scroll()
}

func (p listPane) selected() (row, bool) {
	if p.cursor < len(p.rows) {
		return p.rows[p.cursor], true
	}
	return row{}, false
}

func (p listPane) move(d int) listPane {
	if len(p.rows) == 0 {
		return p
	}
	p.cursor = min(max(p.cursor+d, 0), len(p.rows)-1)
	return p.scroll()
}

func (p listPane) scroll() listPane {
	p.offset = scrolled(p.cursor, p.offset, p.height, len(p.rows))
	return p
}

// scrolled is the first of n lines a pane of height lines shows so that the
// cursor is in view, moving from offset as little as it can.
func scrolled(cursor, offset, height, n int) int {
	h := max(height, 1)
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+h {
		offset = cursor - h + 1
	}
	return min(max(offset, 0), max(n-h, 0))
}

// column is one column of the table: its title, its width and its cell.
type column struct {
	title string
	width int
	cell  func(r row) string
}

func (p listPane) columns(st styles, now time.Time) []column {
	nameW, longest := len("NAME"), 0
	for _, r := range p.rows {
		longest = max(longest, len(r.key.name))
	}
	nameW = max(nameW, min(longest, 24))
	// Names cut to the column keep their start and end; where two would
	// still read the same, the column grows until none does.
	for nameW < longest && !distinctCut(p.rows, nameW) {
		nameW++
	}
	cols := []column{{"NAME", nameW, func(r row) string { return cutName(r.key.name, nameW) }}}
	if p.allRepos {
		cols = append(cols, column{"REPO", 14, func(r row) string { return termtext.Escape(filepath.Base(r.key.repo)) }})
	}
	cols = append(cols,
		column{"STATUS", 12, func(r row) string { return statusStyle(st, r.sb.Status).Render(string(r.sb.Status)) }},
		column{"AGE", 4, func(r row) string { return activity.Ago(r.sb.Created, now) }},
		column{"COMMITS", 7, func(r row) string {
			if r.stats == nil {
				return "-"
			}
			return fmt.Sprint(r.stats.commits)
		}},
		column{"CHANGES", 11, func(r row) string {
			if r.stats == nil {
				return "-"
			}
			return st.added.Render(fmt.Sprintf("+%d", r.stats.added)) + " " + st.removed.Render(fmt.Sprintf("-%d", r.stats.deleted))
		}},
		column{"LAST", 4, func(r row) string {
			if r.last == nil {
				return "-"
			}
			return activity.Ago(r.last.Time, now)
		}},
	)
	fixed := 2
	for _, c := range cols {
		fixed += c.width + 2
	}
	rest := p.width - fixed
	if rest >= 40 {
		svcW := min(24, rest/3)
		cols = append(cols, column{"SERVICES", svcW, func(r row) string { return services(r) }})
		rest -= svcW + 2
	}
	cols = append(cols, column{"LAST ACTIVITY", max(rest, 0), func(r row) string {
		badge, w := "", max(rest, 0)
		if r.pending > 0 {
			// The badge first: the row may be cut at any width.
			b := fmt.Sprintf("%d request%s (w) ", r.pending, map[bool]string{true: "", false: "s"}[r.pending == 1])
			badge, w = st.warn.Render(b), max(w-len(b), 0)
		}
		switch {
		case r.broken != nil:
			return badge + st.removed.Render(summary(*r.broken, w))
		case r.last == nil:
			return badge + st.dim.Render("none recorded")
		}
		return badge + summary(*r.last, w)
	}})
	return cols
}

// cutName is a sandbox's name in width cells: its start and its end, an
// ellipsis between, when it is longer.
func cutName(name string, width int) string {
	if len(name) <= width || width < 3 {
		return name
	}
	head := (width - 1) / 2
	return name[:head] + "…" + name[len(name)-(width-1-head):]
}

// distinctCut reports whether the rows' names, cut to width, are all
// different (as names of one repository are).
func distinctCut(rows []row, width int) bool {
	seen := map[sbKey]bool{}
	for _, r := range rows {
		k := sbKey{r.key.repo, cutName(r.key.name, width)}
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// services is a row's services as the records know them: "web running".
func services(r row) string {
	if len(r.svcs) == 0 {
		if r.refused > 0 {
			return fmt.Sprintf("%d refused", r.refused)
		}
		return "-"
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(r.svcs)) {
		parts = append(parts, termtext.Escape(n)+" "+termtext.Escape(r.svcs[n]))
	}
	s := strings.Join(parts, ", ")
	if r.refused > 0 {
		s += fmt.Sprintf("; %d refused", r.refused)
	}
	return s
}

func statusStyle(st styles, s api.Status) lipgloss.Style {
	switch s {
	case api.StatusActive:
		return st.ok
	case api.StatusPaused, api.StatusStopped:
		return st.warn
	case api.StatusCreating:
		return st.info
	}
	return st.err
}

// view draws the header and the visible rows: 1 + height lines.
func (p listPane) view(st styles, now time.Time) []string {
	cols := p.columns(st, now)
	var head strings.Builder
	head.WriteString("  ")
	for _, c := range cols {
		head.WriteString(pad(c.title, c.width) + "  ")
	}
	lines := []string{st.header.Render(strings.TrimRight(head.String(), " "))}
	switch {
	case !p.loaded:
		return append(lines, st.dim.Render("  asking the engine…"))
	case len(p.rows) == 0:
		return append(lines, "  No sandboxes yet: agents make them with sandbox-create, you with litterbox create.")
	}
	end := min(p.offset+max(p.height, 1), len(p.rows))
	for i := p.offset; i < end; i++ {
		r := p.rows[i]
		var b strings.Builder
		mark := "  "
		if i == p.cursor {
			mark = "> "
		}
		b.WriteString(mark)
		for j, c := range cols {
			cell := c.cell(r)
			if j == 0 && i == p.cursor {
				cell = st.selected.Render(cell)
			}
			b.WriteString(pad(cell, c.width) + "  ")
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	return lines
}
