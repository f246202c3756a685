package ui

import (
	"github.com/litterbox-dev/litterbox/activity"
)

// feedPane is the selected sandbox's activity, newest at the bottom,
// following new events while its cursor is on the newest.
type feedPane struct {
	key     sbKey
	events  []activity.Event
	cursor  int
	offset  int
	width   int
	height  int
	focused bool
	follow  bool
	loaded  bool
}

// set shows events of the sandbox key. The same sandbox keeps its cursor,
// and follows the newest if it did.
func (p feedPane) set(key sbKey, events []activity.Event, loaded bool) feedPane {
	if key != p.key {
		p.key, p.follow, p.cursor, p.offset = key, true, 0, 0
	}
	p.events, p.loaded = events, loaded
	if p.follow || p.cursor >= len(events) {
		p.cursor = max(len(events)-1, 0)
	}
	return p.scroll()
}

func (p feedPane) selected() (activity.Event, bool) {
	if p.cursor < len(p.events) {
		return p.events[p.cursor], true
	}
	return activity.Event{}, false
}

func (p feedPane) move(d int) feedPane {
	if len(p.events) == 0 {
		if !p.loaded {
			// Not read yet: a move up stops following, so the
			// cursor is at the oldest once the events come. (Read
			// and empty, there is nothing older to choose.)
			p.follow = p.follow && d > 0
		}
		return p
	}
	p.cursor = min(max(p.cursor+d, 0), len(p.events)-1)
	p.follow = p.cursor == len(p.events)-1
	return p.scroll()
}

func (p feedPane) scroll() feedPane {
	p.offset = scrolled(p.cursor, p.offset, p.height, len(p.events))
	return p
}

// view draws at most height lines.
func (p feedPane) view(st styles) []string {
	switch {
	case p.key == (sbKey{}):
		return nil
	case !p.loaded:
		return []string{st.dim.Render("  reading the record…")}
	case len(p.events) == 0:
		return []string{st.dim.Render("  Nothing recorded yet: tool calls show here as the agent makes them.")}
	}
	var lines []string
	end := min(p.offset+max(p.height, 1), len(p.events))
	for i := p.offset; i < end; i++ {
		e := p.events[i]
		mark := "  "
		if p.focused && i == p.cursor {
			mark = "> "
		}
		when := st.dim.Render(e.Time.Local().Format("15:04:05"))
		sum := summary(e, p.width-12)
		if e.Error != "" || (e.Exit != nil && *e.Exit != 0) {
			sum = st.err.Render(sum)
		}
		if p.focused && i == p.cursor {
			sum = st.selected.Render(sum)
		}
		lines = append(lines, mark+when+"  "+sum)
	}
	return lines
}
