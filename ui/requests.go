package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// The agents' requests for hosts (MCP network-request; docs/egress.md): a
// sandbox with pending ones says how many on its row, and `w` opens them,
// pending first, each with its reason and the refused connections to its
// host the activity holds. There the keys answer the selected one: a
// approves it for the sandbox, A approves it and saves it to
// .litterbox.local.toml, x refuses it; on the list a and x stay apply
// and delete.

// requestsMsg is a sandbox's requests, read from its state.
type requestsMsg struct {
	key     sbKey
	reqs    []sandbox.NetRequest
	dropped int
	err     error
}

func requestsCmd(ctx context.Context, svc Sandboxes, r *api.Repo, key sbKey) tea.Cmd {
	return func() tea.Msg {
		reqs, dropped, err := svc.NetRequests(ctx, r, key.name)
		return requestsMsg{key: key, reqs: reqs, dropped: dropped, err: err}
	}
}

// pendingCount is how many of reqs wait for an answer.
func pendingCount(reqs []sandbox.NetRequest) int {
	n := 0
	for _, q := range reqs {
		if q.State == sandbox.RequestPending {
			n++
		}
	}
	return n
}

// requestsOrder is reqs, the pending first, each group newest first.
func requestsOrder(reqs []sandbox.NetRequest) []sandbox.NetRequest {
	out := slices.Clone(reqs)
	slices.SortStableFunc(out, func(a, b sandbox.NetRequest) int {
		pa, pb := a.State == sandbox.RequestPending, b.State == sandbox.RequestPending
		if pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		return b.Time.Compare(a.Time)
	})
	return out
}

// openRequests shows the selected sandbox's requests.
func (m *Model) openRequests() tea.Cmd {
	sel, r, ok := m.selectedRepo()
	if !ok {
		return nil
	}
	if sel.sb.Egress == nil {
		m.setStatus(sel.key.name+" has no egress gateway, so no requests: its network is as the engine makes it (docs/egress.md).", false)
		return nil
	}
	m.mode, m.reqCursor = requestsView, 0
	m.clearStatus()
	return requestsCmd(m.ctx, m.svc, r, sel.key)
}

// requestsKey handles a key of the requests view.
func (m *Model) requestsKey(k string) tea.Cmd {
	sel, r, ok := m.selectedRepo()
	if !ok {
		m.mode = mainView
		return nil
	}
	reqs := requestsOrder(m.infoOf(sel.key).requests)
	switch k {
	case "esc", "left", "backspace":
		m.mode = mainView
		m.layout()
	case "?":
		m.dialog = dialog{kind: helpDialog}
	case "up", "k":
		m.reqCursor = max(m.reqCursor-1, 0)
	case "down", "j":
		m.reqCursor = max(min(m.reqCursor+1, len(reqs)-1), 0)
	case "a", "A", "x":
		if m.reqCursor >= len(reqs) {
			return nil
		}
		q := reqs[m.reqCursor]
		if q.State != sandbox.RequestPending {
			m.setStatus("The request for "+q.Host+" is answered already ("+q.State+").", true)
			return nil
		}
		if m.busy != "" {
			m.setStatus("wait: "+m.busy, true)
			return nil
		}
		return m.answer(r, sel.key, q.Host, k != "x", k == "A")
	}
	return nil
}

// answer approves (or refuses) sandbox key's request for host, as the UI's
// user; save also writes it to .litterbox.local.toml for the sandboxes
// made later.
func (m *Model) answer(r *api.Repo, key sbKey, host string, approve, save bool) tea.Cmd {
	verb := "refusing " + host + " for"
	if approve {
		verb = "approving " + host + " for"
	}
	return m.run(verb, key.name, func(ctx context.Context) (string, error) {
		_, live, _, err := m.svc.AnswerNet(ctx, r, key.name, host, approve)
		if err != nil {
			return "", err
		}
		if !approve {
			return "Refused " + host + " for " + key.name + ".", nil
		}
		text := "Approved " + host + " for " + key.name + ", from its next connection on."
		if !live {
			text = "Approved " + host + " for " + key.name + ": its gateway is not running, and takes it when it starts."
		}
		if !save {
			return text, nil
		}
		note, err := config.SaveLocalAllow(ctx, r.Git, host)
		if err != nil {
			return "", fmt.Errorf("%s Not saved: %w", text, err)
		}
		return text + " " + note, nil
	})
}

// maxAttempts is how many refused connections a request shows.
const maxAttempts = 5

// requestLines are the requests view's lines: a heading, then each
// request (the selected one marked) and, under the selected one, the
// refused connections to its host.
func (m *Model) requestLines() []string {
	sel, ok := m.list.selected()
	if !ok {
		return nil
	}
	in := m.infoOf(sel.key)
	reqs := requestsOrder(in.requests)
	lines := []string{m.st.bold.Render(fmt.Sprintf("requests of %s for hosts: %d pending", sel.key.name, pendingCount(in.requests))), ""}
	if in.reqErr != nil {
		lines = append(lines, m.st.err.Render("cannot read them: "+termtext.Escape(in.reqErr.Error())))
	}
	if len(reqs) == 0 {
		lines = append(lines, m.st.dim.Render("none: an agent asks with the MCP tool network-request"))
	}
	m.reqCursor = min(m.reqCursor, max(len(reqs)-1, 0))
	head, selected := len(lines), 0
	for i, q := range reqs {
		mark := "  "
		if i == m.reqCursor {
			mark = "> "
		}
		state := q.State
		if q.By != "" && q.State != sandbox.RequestPending {
			state += " by " + q.By
		}
		asked := ""
		if q.Asked > 1 {
			asked = fmt.Sprintf("  asked %d times", q.Asked)
		}
		reason := termtext.Escape(q.Reason)
		if q.Why != "" {
			reason = termtext.Escape(q.Why)
		}
		line := strings.TrimRight(fmt.Sprintf("%s%s  %s  %s%s  %s", mark, termtext.Escape(q.Host), state, activity.Ago(q.Time, m.now), asked, reason), " ")
		if q.State == sandbox.RequestPending {
			line = m.st.warn.Render(line)
		}
		lines = append(lines, line)
		if i == m.reqCursor {
			selected = len(lines) - 1
			evs := in.events
			if !in.loaded {
				evs = in.pending
			}
			for _, a := range attempts(evs, q.Host) {
				lines = append(lines, m.st.dim.Render("      refused "+a.Time.Local().Format("15:04:05")+"  "+termtext.Escape(a.Target)+"  during  "+termtext.Escape(a.Args)))
			}
		}
	}
	if in.reqDropped > 0 {
		lines = append(lines, "", m.st.dim.Render(fmt.Sprintf("… and %d more refused: too many were waiting (an agent asking again and again)", in.reqDropped)))
	}
	// Longer than the screen (the file keeps 64): the heading stays, the
	// requests scroll so the selected one and its attempts show.
	room := m.height - 3 - len(m.statusRows()) // the title, the status, the keys
	if last := min(selected+maxAttempts, len(lines)-1); last >= room && room > head {
		skip := last - room + 1
		lines = append(lines[:head], lines[head+skip:]...)
	}
	return lines
}

// attempts are the newest refused connections to host (its name, any
// port) among evs, at most maxAttempts, newest last.
func attempts(evs []activity.Event, host string) []activity.Event {
	var out []activity.Event
	for i := len(evs) - 1; i >= 0 && len(out) < maxAttempts; i-- {
		e := evs[i]
		if e.Kind != activity.KindEgress {
			continue
		}
		target, _, _ := strings.Cut(e.Target, " ")
		if target == host || strings.HasPrefix(target, host+":") {
			out = append(out, e)
		}
	}
	slices.Reverse(out)
	return out
}
