// Package ui is `litterbox ui`: a terminal UI (bubbletea, lipgloss) over the
// sandboxes of a repository, or of every one. It shows each sandbox's
// status, age, last activity, commits and lines changed, live from the
// activity records (package activity) and the engine; the selected
// sandbox's activity, any event opened in full; its diff, file by file; and
// runs the review actions (pause, resume, merge, apply, delete, a shell, a
// milestone) with the same service code as the CLI, asking first where they
// destroy.
//
// A model per pane (list, feed, text views, dialog), each a value the root
// model replaces; data arrives as messages from commands (listCmd,
// statsCmd...) and from the followers through one inbox, never as shared
// state. The engine is asked at most once a second, when a record or a
// sandbox's state changes, and otherwise every Options.Refresh.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Sandboxes is what the UI needs of the sandbox service: the operations the
// CLI runs for the same keys. *sandbox.Sandboxes implements it.
type Sandboxes interface {
	OpenRepo(ctx context.Context, dir string) (*api.Repo, error)
	List(ctx context.Context, r *api.Repo) ([]api.Sandbox, error)
	Diff(ctx context.Context, r *api.Repo, name string, opts git.DiffOptions, w io.Writer) (*api.DiffResult, error)
	Pause(ctx context.Context, r *api.Repo, name string, force bool) (api.Outcome, error)
	Resume(ctx context.Context, r *api.Repo, name string) (api.Outcome, error)
	Merge(ctx context.Context, r *api.Repo, name, at string) (*api.MergeResult, error)
	Apply(ctx context.Context, r *api.Repo, name, at string) (*api.ApplyResult, error)
	Delete(ctx context.Context, r *api.Repo, name string, force bool) (*api.DeleteReport, error)
	Handle(ctx context.Context, r *api.Repo, name string) (*api.Handle, error)
	Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error)
	Exec(ctx context.Context, r *api.Repo, name string, o api.ExecOptions) (int, error)
	NetRequests(ctx context.Context, r *api.Repo, name string) ([]sandbox.NetRequest, int, error)
	AnswerNet(ctx context.Context, r *api.Repo, name, host string, approve bool) (*sandbox.NetStatus, bool, sandbox.NetRequest, error)
}

var _ Sandboxes = (*sandbox.Sandboxes)(nil)

// Options say what the UI shows and where.
type Options struct {
	// Repo is the repository whose sandboxes it shows; with AllRepos, every
	// repository's (Repo may then be nil).
	Repo     *api.Repo
	AllRepos bool
	// Refresh is how often the engine is asked when nothing tells the UI
	// that something changed (DefaultRefresh when 0).
	Refresh time.Duration
	Input   io.Reader
	Output  io.Writer
}

// DefaultRefresh is how often the engine is asked while nothing happens.
// Each ask runs two engine commands (about 90 ms of CPU for the docker
// CLI); changes that litterbox makes show at once anyway, through the
// records and the sandboxes' state files.
const DefaultRefresh = 15 * time.Second

// minGap is the least time between two asks of the engine.
const minGap = time.Second

// Run shows the UI until the user quits or ctx ends.
func Run(ctx context.Context, svc Sandboxes, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := New(ctx, svc, o, lipgloss.NewRenderer(o.Output))
	// 20 frames a second at most: a frame waits 50 ms at worst, and the
	// renderer's clock wakes a third as often as at its default 60.
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithAltScreen(), tea.WithInput(o.Input), tea.WithOutput(o.Output), tea.WithFPS(20))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // Ctrl-C or SIGTERM from outside
	}
	return err
}

type mode int

const (
	mainView mode = iota
	diffView
	detailView
	requestsView // the selected sandbox's requests for hosts (requests.go)
)

// Model is the root model: it routes keys to the pane that has them and
// data to the panes that show it.
type Model struct {
	ctx   context.Context
	svc   Sandboxes
	opts  Options
	st    styles
	start time.Time
	inbox chan tea.Msg

	width, height int
	now           time.Time

	repos     map[string]*repoState // by root
	sandboxes []api.Sandbox
	info      map[sbKey]*sbInfo
	listErr   error

	list   listPane
	feed   feedPane
	text   textView
	dialog dialog
	mode   mode
	// reqCursor is the request selected in the requests view.
	reqCursor int
	// textKey is the sandbox (diff) or the commit (detail) the text view
	// shows, so a late answer for another is dropped.
	textKey string
	// shown is, per sandbox, the commit its diff view showed last and how
	// many files: what m and a land, and nothing else.
	shown map[sbKey]shownDiff

	status    string
	statusErr bool
	statusKey sbKey // the sandbox selected when it was said
	busy      string
	// detail is the event the detail view shows, its lines before they
	// are wrapped to the width; detailDiff the lines of its commit's diff.
	detail      []string
	detailDiff  []string
	diffAnchors []int
	diffFiles   []string

	tickSeq int
	ticking time.Duration // how often the clock moves now

	refreshing, refreshPending, refreshScheduled bool
	lastRefresh                                  time.Time
	pollSeq                                      int
	// measured: the first history came, so git may measure the branches.
	measured bool
}

// repoState is a repository the UI shows.
type repoState struct {
	r         *api.Repo
	following bool
	tips      map[string]string // branch tips measured, by sandbox
	measuring bool
	remeasure bool
}

// shownDiff is a commit of a sandbox's branch the diff view showed.
type shownDiff struct {
	tip   string
	files int
}

// sbInfo is what the records and git say of a sandbox.
type sbInfo struct {
	events    []activity.Event // the latest historyLen, once loaded
	pending   []activity.Event // live events that came before the history
	last      *activity.Event  // the latest before the UI started, until loaded
	loaded    bool
	asked     bool // for its last event
	askedFull bool // for its history
	stats     *sbStats
	svcs      map[string]string
	refused   int
	broken    *activity.Event // the note that its record does not follow, once one came
	// requests are the agents' requests for hosts, reqDropped how many
	// were refused because too many waited (requests.go).
	requests   []sandbox.NetRequest
	reqDropped int
	reqErr     error
}

// New builds the root model.
func New(ctx context.Context, svc Sandboxes, o Options, r *lipgloss.Renderer) *Model {
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	// What the keys do, the service records as the UI's user's doing.
	ctx = activity.WithActor(ctx, activity.ByUI)
	m := &Model{
		ctx: ctx, svc: svc, opts: o, st: newStyles(r), start: time.Now(), now: time.Now(),
		inbox: make(chan tea.Msg, 1024), repos: map[string]*repoState{}, info: map[sbKey]*sbInfo{}, shown: map[sbKey]shownDiff{},
		width: 80, height: 24,
	}
	m.list.allRepos = o.AllRepos
	m.list.focused = true
	if o.Repo != nil {
		m.repos[o.Repo.Root()] = &repoState{r: o.Repo, tips: map[string]string{}}
	}
	m.layout()
	return m
}

// Init starts the first ask, the followers and the clock, and reads the
// records meanwhile: the last event of each, and the history of the first
// by name, which the list will select, so the first screen waits for the
// engine only.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.startRefresh(), waitInbox(m.ctx, m.inbox), m.tick(time.Second)}
	for root, rs := range m.repos {
		cmds = append(cmds, m.follow(rs))
		dir := activity.Dir(rs.r.Git.CommonDir)
		names, _ := activity.Sandboxes(dir)
		if len(names) == 0 || m.opts.AllRepos {
			continue
		}
		last := map[sbKey]string{}
		for _, n := range names {
			k := sbKey{root, n}
			m.infoOf(k).asked = true
			last[k] = dir
		}
		first := sbKey{root, names[0]}
		m.infoOf(first).askedFull = true
		cmds = append(cmds, historyCmd(last, false), historyCmd(map[sbKey]string{first: dir}, true))
	}
	return tea.Batch(cmds...)
}

// tick moves the clock after d; an older clock still running stops at its
// next tick.
func (m *Model) tick(d time.Duration) tea.Cmd {
	m.tickSeq++
	m.ticking = d
	seq := m.tickSeq
	return tea.Tick(d, func(t time.Time) tea.Msg { return tickMsg{t, seq} })
}

// tickEvery is how often the clock must move: each second while something
// shown is under a minute old ("42s"), else every half minute ("3m" is
// late by 30 s at most). Idle, the UI then wakes twice a minute.
func (m *Model) tickEvery() time.Duration {
	young := func(t time.Time) bool { return !t.IsZero() && m.now.Sub(t) < time.Minute }
	for _, r := range m.list.rows {
		if young(r.sb.Created) || (r.last != nil && young(r.last.Time)) {
			return time.Second
		}
	}
	return 30 * time.Second
}

// quicken restarts the clock at once a second when it runs slower and
// something young is shown.
func (m *Model) quicken() tea.Cmd {
	if m.ticking > time.Second && m.tickEvery() == time.Second {
		return m.tick(time.Second)
	}
	return nil
}

func (m *Model) follow(rs *repoState) tea.Cmd {
	if rs.following {
		return nil
	}
	rs.following = true
	return followCmd(m.ctx, rs.r, m.start, m.inbox)
}

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyMsg:
		// Keys typed faster than the UI reads them come as one message
		// of several runes ("my"); each is a key of its own, but in a
		// line being typed, or a paste.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste && m.dialog.kind != promptDialog {
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
			}
			return m, tea.Batch(cmds...)
		}
		return m, m.key(msg)
	case tickMsg:
		if msg.seq != m.tickSeq {
			return m, nil
		}
		m.now = msg.t
		return m, m.tick(m.tickEvery())
	case inboxMsg:
		var cmds []tea.Cmd
		for _, in := range msg {
			_, cmd := m.Update(in)
			cmds = append(cmds, cmd)
		}
		cmds = append(cmds, waitInbox(m.ctx, m.inbox))
		return m, tea.Batch(cmds...)
	case listMsg:
		return m, m.listed(msg)
	case repoMsg:
		if msg.err != nil || m.repos[msg.root] != nil {
			return m, nil
		}
		rs := &repoState{r: msg.r, tips: map[string]string{}}
		m.repos[msg.root] = rs
		return m, tea.Batch(m.follow(rs), m.measure(rs), m.requestRefresh())
	case historyMsg:
		var cmds []tea.Cmd
		for k, evs := range msg.events {
			in := m.infoOf(k)
			if !msg.full {
				if len(evs) > 0 {
					in.last = &evs[len(evs)-1]
				}
				continue
			}
			in.events, in.loaded = merge(evs, in.pending), true
			in.pending = nil
			in.svcs, in.refused = nil, 0
			for _, e := range in.events {
				in.note(e)
			}
		}
		if !m.measured {
			// Git's measures wait for the first screen: on a busy
			// machine they would slow it.
			m.measured = true
			for _, rs := range m.repos {
				if rs != nil {
					cmds = append(cmds, m.measure(rs))
				}
			}
		}
		cmds = append(cmds, m.rows())
		return m, tea.Batch(cmds...)
	case eventsMsg:
		return m, m.recorded(msg)
	case changedMsg:
		return m, m.requestRefresh()
	case statsMsg:
		rs := m.repos[msg.repo]
		if rs == nil {
			return m, nil
		}
		rs.measuring = false
		for name, tip := range msg.tips {
			rs.tips[name] = tip
			st := msg.stats[name]
			m.infoOf(sbKey{msg.repo, name}).stats = &st
		}
		cmd := m.rows()
		if rs.remeasure {
			return m, tea.Batch(cmd, m.measure(rs))
		}
		return m, cmd
	case diffMsg:
		if m.mode != diffView || m.textKey != msg.key.repo+"\x00"+msg.key.name {
			return m, nil
		}
		switch res := msg.res; {
		case msg.err != nil:
			m.text = m.text.setText(nil, nil, nil)
			m.text.note = m.st.err.Render("cannot show the diff: " + termtext.Escape(msg.err.Error()))
		case res.Empty:
			m.text = m.text.setText(nil, nil, nil)
			m.text.note = m.st.dim.Render("No changes: the branch holds what its base holds.")
		default:
			m.shown[msg.key] = shownDiff{tip: res.Tip, files: res.Files.Total}
			m.text.title = fmt.Sprintf("diff of %s at %s against its base %s", msg.key.name, activity.ShortID(res.Tip), activity.ShortID(res.Base))
			m.text = m.text.setText(renderDiff(m.st, res.Files, res.Patch, "`litterbox diff "+msg.key.name+"`"))
		}
		return m, nil
	case landMsg:
		return m, m.landAsked(msg)
	case commitDiffMsg:
		if m.mode != detailView || m.textKey != msg.commit {
			return m, nil
		}
		if msg.err != nil {
			m.detailDiff = []string{"", m.st.err.Render("cannot show the commit's diff: " + termtext.Escape(msg.err.Error()))}
			m.diffAnchors, m.diffFiles = nil, nil
		} else {
			dl, anchors, files := renderDiff(m.st, msg.files, msg.patch, "`git show "+activity.ShortID(msg.commit)+"`")
			for i := range anchors {
				anchors[i] += 2
			}
			m.detailDiff = append([]string{"", m.st.bold.Render("the commit's diff:")}, dl...)
			m.diffAnchors, m.diffFiles = anchors, files
		}
		m.text = m.text.setText(m.detailLines())
		return m, nil
	case requestsMsg:
		in := m.infoOf(msg.key)
		in.reqErr = msg.err
		if msg.err == nil {
			in.requests, in.reqDropped = msg.reqs, msg.dropped
		}
		return m, m.rows()
	case actionMsg:
		m.busy = ""
		if msg.err != nil {
			m.setStatus(msg.err.Error(), true)
		} else if msg.text != "" {
			m.setStatus(msg.text, false)
		}
		return m, m.requestRefresh()
	case refreshMsg:
		m.refreshScheduled = false
		return m, m.requestRefresh()
	case pollMsg:
		if msg.seq != m.pollSeq {
			return m, nil
		}
		return m, m.requestRefresh()
	}
	if m.dialog.kind == promptDialog {
		var cmd tea.Cmd
		m.dialog.input, cmd = m.dialog.input.Update(msg)
		return m, cmd
	}
	return m, nil
}

// setStatus shows a message on the status line, escaped (an error can quote
// what an agent wrote), all of it: a long one takes more rows (statusRows)
// rather than lose its end, where errors say what to do. It lasts until
// another sandbox is selected, a view opens, or another message comes.
func (m *Model) setStatus(s string, isErr bool) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = termtext.Escape(strings.TrimSpace(lines[i]))
	}
	m.status, m.statusErr = strings.Join(lines, " "), isErr
	m.statusKey = sbKey{}
	if sel, ok := m.list.selected(); ok {
		m.statusKey = sel.key
	}
	m.layout()
}

func (m *Model) clearStatus() {
	if m.status != "" {
		m.status, m.statusErr = "", false
		m.layout()
	}
}

// maxStatusRows is the most rows the status line grows to.
const maxStatusRows = 6

// statusRows is the status line as drawn: the message (or the question
// asked) wrapped to the width, its start and its end when it needs more
// than maxStatusRows.
func (m *Model) statusRows() []string {
	line := m.statusLine()
	if m.dialog.kind == promptDialog || m.width <= 0 || lipgloss.Width(line) <= m.width {
		return []string{line}
	}
	rows := strings.Split(ansi.Wrap(line, m.width, ""), "\n")
	if len(rows) > maxStatusRows {
		rows = append(rows[:maxStatusRows-2], "…", rows[len(rows)-1])
	}
	return rows
}

// startRefresh asks the engine now.
func (m *Model) startRefresh() tea.Cmd {
	m.refreshing, m.refreshPending = true, false
	m.lastRefresh = time.Now()
	r := m.opts.Repo
	if m.opts.AllRepos {
		r = nil
	}
	return listCmd(m.ctx, m.svc, r)
}

// requestRefresh asks the engine as soon as the minimum gap allows.
func (m *Model) requestRefresh() tea.Cmd {
	if m.refreshing {
		m.refreshPending = true
		return nil
	}
	wait := minGap - time.Since(m.lastRefresh)
	if wait <= 0 {
		return m.startRefresh()
	}
	if m.refreshScheduled {
		return nil
	}
	m.refreshScheduled = true
	return tea.Tick(wait, func(time.Time) tea.Msg { return refreshMsg{} })
}

// listed takes the engine's answer.
func (m *Model) listed(msg listMsg) tea.Cmd {
	m.refreshing = false
	m.pollSeq++
	seq := m.pollSeq
	cmds := []tea.Cmd{tea.Tick(m.opts.Refresh, func(time.Time) tea.Msg { return pollMsg{seq} })}
	if m.refreshPending {
		cmds = append(cmds, m.requestRefresh())
	}
	if msg.repo != nil {
		m.opts.Repo = msg.repo
		if rs := m.repos[msg.repo.Root()]; rs != nil {
			rs.r = msg.repo
		}
	}
	if msg.err != nil {
		m.listErr = msg.err
		m.setStatus("cannot list the sandboxes: "+msg.err.Error(), true)
		return tea.Batch(cmds...)
	}
	if m.listErr != nil && m.statusErr {
		m.clearStatus()
	}
	m.listErr = nil
	m.sandboxes = msg.sbs
	history := map[sbKey]string{}
	for _, sb := range msg.sbs {
		rs := m.repos[sb.Repo]
		if rs == nil {
			if m.opts.AllRepos {
				m.repos[sb.Repo] = nil // being opened
				cmds = append(cmds, openRepoCmd(m.ctx, m.svc, sb.Repo))
			}
			continue
		}
		k := sbKey{sb.Repo, sb.Name}
		if in := m.infoOf(k); !in.asked {
			in.asked = true
			history[k] = activity.Dir(rs.r.Git.CommonDir)
		}
		if sb.Egress != nil {
			// A file read, no engine call: the requests an event did
			// not announce (another asked again) show by the next list.
			cmds = append(cmds, requestsCmd(m.ctx, m.svc, rs.r, k))
		}
	}
	if len(history) > 0 {
		cmds = append(cmds, historyCmd(history, false))
	}
	if m.measured {
		for _, rs := range m.repos {
			if rs != nil {
				cmds = append(cmds, m.measure(rs))
			}
		}
	}
	cmds = append(cmds, m.rows())
	return tea.Batch(cmds...)
}

// measure counts the commits and lines of the repository's sandboxes whose
// branch moved, one measure at a time per repository.
func (m *Model) measure(rs *repoState) tea.Cmd {
	if rs.measuring {
		rs.remeasure = true
		return nil
	}
	rs.measuring, rs.remeasure = true, false
	var sbs []api.Sandbox
	for _, sb := range m.sandboxes {
		if sb.Repo == rs.r.Root() {
			sbs = append(sbs, sb)
		}
	}
	known := make(map[string]string, len(rs.tips))
	for k, v := range rs.tips {
		known[k] = v
	}
	return statsCmd(m.ctx, rs.r, sbs, known)
}

// recorded takes new events: they update the rows and the feed, and those
// that change what the engine holds (a create, a pause, a merge...) ask it
// again.
func (m *Model) recorded(msg eventsMsg) tea.Cmd {
	refresh, remeasure := false, false
	reread := map[string]bool{} // sandboxes whose requests to read again, once each
	known := map[string]bool{}
	for _, sb := range m.sandboxes {
		if sb.Repo == msg.repo {
			known[sb.Name] = true
		}
	}
	for _, e := range msg.events {
		if e.Kind == activity.KindMissed {
			continue // the feed counts what it lacks from the numbers (activity.Gaps)
		}
		in := m.infoOf(sbKey{msg.repo, e.Sandbox})
		if in.loaded {
			in.events = trimHistory(append(in.events, e))
		} else {
			in.pending = append(in.pending, e)
		}
		in.note(e)
		switch e.Kind {
		case activity.KindCreate, activity.KindDelete, activity.KindPause, activity.KindResume, activity.KindMerge, activity.KindFork:
			refresh = true
		case activity.KindCall:
			if e.Tool == "sandbox-create" || e.Tool == "sandbox-fork" {
				refresh = true
			}
		}
		if !known[e.Sandbox] {
			refresh = true
		}
		if e.Commit != "" {
			remeasure = true
		}
		if e.Kind == activity.KindNet {
			reread[e.Sandbox] = true
		}
	}
	cmds := []tea.Cmd{m.rows()}
	if rs := m.repos[msg.repo]; rs != nil {
		for name := range reread {
			cmds = append(cmds, requestsCmd(m.ctx, m.svc, rs.r, sbKey{msg.repo, name}))
		}
	}
	if refresh {
		cmds = append(cmds, m.requestRefresh())
	}
	if rs := m.repos[msg.repo]; remeasure && rs != nil {
		cmds = append(cmds, m.measure(rs))
	}
	return tea.Batch(cmds...)
}

// trimHistory keeps the latest historyLen events of a sandbox and, before
// them, the older ones the record keeps aside (activity.Class: refused
// connections, failed operations), up to keptLen: a flood of events pushes
// no refusal out of the feed. The feed says how many are left out
// (activity.Gaps).
func trimHistory(evs []activity.Event) []activity.Event {
	if len(evs) <= historyLen+historyLen/4 {
		return evs // trimmed once a quarter more came: each event costs O(1)
	}
	recent := evs[len(evs)-historyLen:]
	var kept []activity.Event
	for _, e := range evs[:len(evs)-historyLen] {
		if activity.Class(e) != "" {
			kept = append(kept, e)
		}
	}
	kept = kept[max(len(kept)-keptLen, 0):]
	return append(kept, recent...)[: len(kept)+len(recent) : len(kept)+len(recent)]
}

// note keeps what an event says of services and refused connections.
func (in *sbInfo) note(e activity.Event) {
	switch e.Kind {
	case activity.KindService:
		if in.svcs == nil {
			in.svcs = map[string]string{}
		}
		in.svcs[e.Service] = serviceState(e)
	case activity.KindEgress:
		in.refused++
	case activity.KindBroken:
		in.broken = &e
	}
}

// serviceState is the state a service event left its service in, as the
// services column shows it.
func serviceState(e activity.Event) string {
	if e.Error != "" {
		return e.Action + " failed"
	}
	switch e.Action {
	case "start", "restart":
		return "running"
	case "stop":
		return "stopped"
	case "exit":
		return "exited"
	}
	return e.Action
}

// merge joins a sandbox's history with the live events that came before it
// was read, each once.
func merge(history, live []activity.Event) []activity.Event {
	seen := map[string]bool{}
	id := func(e activity.Event) string {
		return fmt.Sprint(e.Time.UnixNano(), e.PID, e.Kind, e.Tool, len(e.Args))
	}
	for _, e := range history {
		seen[id(e)] = true
	}
	out := history
	for _, e := range live {
		if !seen[id(e)] {
			out = append(out, e)
		}
	}
	return out
}

func (m *Model) infoOf(k sbKey) *sbInfo {
	in := m.info[k]
	if in == nil {
		in = &sbInfo{}
		m.info[k] = in
	}
	return in
}

// rows gives the list and the feed what they show now.
func (m *Model) rows() tea.Cmd {
	rows := make([]row, 0, len(m.sandboxes))
	for _, sb := range m.sandboxes {
		k := sbKey{sb.Repo, sb.Name}
		in := m.infoOf(k)
		r := row{key: k, sb: sb, stats: in.stats, svcs: in.svcs, refused: in.refused, broken: in.broken, pending: pendingCount(in.requests)}
		evs := in.events
		if !in.loaded {
			evs = in.pending
		}
		if len(evs) > 0 {
			last := evs[len(evs)-1]
			r.last = &last
		} else if in.last != nil {
			r.last = in.last
		}
		rows = append(rows, r)
	}
	m.list = m.list.setRows(rows)
	m.layout()
	m.now = time.Now()
	return tea.Batch(m.syncFeed(), m.quicken())
}

// syncFeed shows the selected sandbox's events in the feed, reading its
// history the first time.
func (m *Model) syncFeed() tea.Cmd {
	sel, ok := m.list.selected()
	if !ok {
		m.feed = m.feed.set(sbKey{}, nil, false)
		return nil
	}
	in := m.infoOf(sel.key)
	if sel.key != m.statusKey {
		m.clearStatus() // it spoke of another sandbox
	}
	m.feed = m.feed.set(sel.key, activity.Gaps(in.events), in.loaded)
	rs := m.repos[sel.key.repo]
	if in.loaded || in.askedFull || rs == nil {
		return nil
	}
	in.askedFull = true
	return historyCmd(map[sbKey]string{sel.key: activity.Dir(rs.r.Git.CommonDir)}, true)
}

// layout sizes the panes to the terminal: the title, the list, a rule, the
// activity, the status line and the keys.
func (m *Model) layout() {
	status := len(m.statusRows())
	avail := max(m.height-3-status, 2) // title, rule, status, keys
	n := max(len(m.list.rows), 1)
	listH := min(n, max(avail/2-1, 1))
	m.list.height, m.list.width = listH, m.width
	m.feed.height, m.feed.width = max(avail-listH-1, 1), m.width
	m.list = m.list.scroll()
	m.feed = m.feed.scroll()
	m.text.width, m.text.height = m.width, max(m.height-2-status, 1)
	if m.mode == detailView {
		m.text = m.text.setText(m.detailLines())
	}
	m.text = m.text.clamp()
}

// detailLines are the lines of the event opened: its fields wrapped to the
// width (none is cut: the view scrolls), then its commit's diff.
func (m *Model) detailLines() ([]string, []int, []string) {
	var lines []string
	for _, l := range m.detail {
		lines = append(lines, wrap(l, m.width)...)
	}
	if m.detailDiff == nil {
		return lines, nil, nil
	}
	base := len(lines)
	anchors := make([]int, len(m.diffAnchors))
	for i, a := range m.diffAnchors {
		anchors[i] = a + base
	}
	return append(lines, m.detailDiff...), anchors, m.diffFiles
}

// selectedRepo is the repository and row of the selected sandbox.
func (m *Model) selectedRepo() (row, *api.Repo, bool) {
	sel, ok := m.list.selected()
	if !ok {
		return row{}, nil, false
	}
	rs := m.repos[sel.key.repo]
	if rs == nil {
		return row{}, nil, false
	}
	return sel, rs.r, true
}

// key handles a key press. Ctrl-C quits whatever is shown, and q too but
// in a line being typed, as the help says.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if k.String() == "ctrl+c" || (k.String() == "q" && m.dialog.kind != promptDialog) {
		return tea.Quit
	}
	if m.dialog.kind != noDialog {
		var cmd tea.Cmd
		m.dialog, cmd = m.dialog.key(k)
		m.layout()
		return cmd
	}
	if m.mode == requestsView {
		return m.requestsKey(k.String())
	}
	if m.mode != mainView {
		switch k.String() {
		case "esc", "left", "h", "backspace":
			m.mode, m.textKey = mainView, ""
			m.layout()
			return nil
		case "?":
			m.dialog = dialog{kind: helpDialog}
			return nil
		case "m", "a":
			// from the diff: what it shows, of the sandbox it shows
			if sel, ok := m.list.selected(); ok && m.mode == diffView && m.textKey == sel.key.repo+"\x00"+sel.key.name {
				return m.action(k.String())
			}
		}
		m.text, _ = m.text.key(k)
		return nil
	}
	switch k.String() {
	case "?":
		m.dialog = dialog{kind: helpDialog}
	case "tab", "shift+tab":
		m.list.focused = !m.list.focused
		m.feed.focused = !m.list.focused
	case "esc":
		m.list.focused, m.feed.focused = true, false
	case "up", "k", "down", "j", "pgup", "pgdown", "home", "end", "g", "G":
		d := map[string]int{"up": -1, "k": -1, "down": 1, "j": 1, "pgup": -10, "pgdown": 10, "home": -1 << 20, "g": -1 << 20, "end": 1 << 20, "G": 1 << 20}[k.String()]
		if m.feed.focused {
			m.feed = m.feed.move(d)
		} else {
			m.list = m.list.move(d)
			return m.syncFeed()
		}
	case "enter":
		// On the list, the selected sandbox's activity takes the keys
		// and its selected event (the newest, unless one was chosen)
		// opens; esc comes back to the activity.
		m.list.focused, m.feed.focused = false, true
		return m.openEvent()
	case "d":
		return m.openDiff()
	case "w":
		return m.openRequests()
	case "R":
		return m.requestRefresh()
	case "p", "r", "m", "a", "x", "X", "s", "n":
		return m.action(k.String())
	}
	return nil
}

func (m *Model) openDiff() tea.Cmd {
	sel, r, ok := m.selectedRepo()
	if !ok {
		return nil
	}
	m.mode, m.textKey = diffView, sel.key.repo+"\x00"+sel.key.name
	m.clearStatus()
	m.text = textView{title: "diff of " + sel.key.name + " against its base", width: m.width, height: m.height - 3, jumped: -1}
	m.text.note = m.st.dim.Render("reading the diff…")
	return diffCmd(m.ctx, m.svc, r, sel.key)
}

func (m *Model) openEvent() tea.Cmd {
	e, ok := m.feed.selected()
	if !ok {
		return nil
	}
	_, r, ok := m.selectedRepo()
	m.mode = detailView
	m.clearStatus()
	m.text = textView{title: "event: " + activity.Summary(e), jumped: -1}
	m.detail = strings.Split(strings.TrimRight(activity.Detail(e), "\n"), "\n")
	m.detailDiff, m.diffAnchors, m.diffFiles = nil, nil, nil
	m.layout()
	m.textKey = "event"
	if e.Commit != "" && ok {
		m.textKey = e.Commit
		return commitDiffCmd(m.ctx, r, e.Commit)
	}
	return nil
}

// action starts what a key asks of the selected sandbox, asking first when
// it destroys.
func (m *Model) action(key string) tea.Cmd {
	sel, r, ok := m.selectedRepo()
	if !ok {
		return nil
	}
	if m.busy != "" {
		m.setStatus("wait: "+m.busy, true)
		return nil
	}
	name := sel.key.name
	run := func(busy string, fn func(ctx context.Context) (string, error)) tea.Cmd {
		return m.run(busy, name, fn)
	}
	switch key {
	case "p", "r":
		verb, done, already, op := "resuming", "Resumed", "running", m.svc.Resume
		if key == "p" {
			// Never --force: a pause that would lose files is refused,
			// and the refusal says what to do.
			pause := func(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
				return m.svc.Pause(ctx, r, name, false)
			}
			verb, done, already, op = "pausing", "Paused", "paused", pause
		}
		return run(verb, func(ctx context.Context) (string, error) {
			o, err := op(ctx, r, name)
			if err == nil && o.Already {
				return "Sandbox " + name + " was already " + already + ".", nil
			}
			return done + " " + name + ".", err
		})
	case "m", "a":
		// What lands is the commit the diff view showed, named in the
		// question with its files; never the branch as it is at the yes.
		if d, ok := m.shown[sel.key]; ok {
			m.dialog = m.landQuestion(key, r, name, d, true)
			return nil
		}
		m.busy = "reading what " + name + " holds…"
		return landCmd(m.ctx, m.svc, r, sel.key, key)
	case "x", "X":
		force := key == "X"
		q := "Delete " + name + ": its container and its branch?"
		if force {
			q = "Delete " + name + " even if its work is not merged (it is lost)?"
		}
		m.dialog = confirm(q, func() tea.Cmd {
			return run("deleting", func(ctx context.Context) (string, error) {
				_, err := m.svc.Delete(ctx, r, name, force)
				if err != nil && !force {
					err = fmt.Errorf("%w (X deletes it all the same)", err)
				}
				return "Deleted " + name + ".", err
			})
		})
	case "n":
		m.dialog = prompt("Milestone message for "+name+" (enter records it, esc cancels):", "what the work since the last milestone does", func(msg string) tea.Cmd {
			return run("recording a milestone of", func(ctx context.Context) (string, error) {
				h, err := m.svc.Handle(ctx, r, name)
				if err != nil {
					return "", err
				}
				res, err := m.svc.Milestone(ctx, h, msg)
				if err != nil {
					return "", err
				}
				if res.Commit == "" {
					return res.Note, nil
				}
				return fmt.Sprintf("Milestone %s: %d commit(s) squashed.", activity.ShortID(res.Commit), res.Squashed), nil
			})
		})
	case "s":
		return tea.Exec(&shellExec{ctx: m.ctx, svc: m.svc, r: r, name: name}, func(err error) tea.Msg {
			if err != nil {
				return actionMsg{err: fmt.Errorf("shell in %s: %w", name, err)}
			}
			return actionMsg{text: "Back from the shell in " + name + "."}
		})
	}
	return nil
}

// run starts fn, an action on sandbox name, showing busy meanwhile; its
// text or error comes back as an actionMsg.
func (m *Model) run(busy, name string, fn func(ctx context.Context) (string, error)) tea.Cmd {
	m.clearStatus()
	m.busy = busy + " " + name + "…"
	ctx := m.ctx
	return func() tea.Msg {
		text, err := fn(ctx)
		return actionMsg{text: text, err: err}
	}
}

// landAsked asks before a merge or apply of a sandbox whose diff the view
// has not shown, naming the commit it read and its files.
func (m *Model) landAsked(msg landMsg) tea.Cmd {
	m.busy = ""
	rs := m.repos[msg.key.repo]
	switch {
	case msg.err != nil:
		m.setStatus(msg.err.Error(), true)
	case rs != nil:
		m.dialog = m.landQuestion(msg.action, rs.r, msg.key.name, shownDiff{tip: msg.res.Tip, files: msg.res.Files.Total}, false)
	}
	return nil
}

// landQuestion is the question before a merge (action m) or apply (a) of
// sandbox name at the commit d names; read says the diff view showed it.
// A yes lands that commit or nothing: the service refuses when the branch
// moved since (api.ErrMoved).
func (m *Model) landQuestion(action string, r *api.Repo, name string, d shownDiff, read bool) dialog {
	at := activity.ShortID(d.tip)
	files := fmt.Sprintf("%d files", d.files)
	if d.files == 1 {
		files = "1 file"
	}
	what := fmt.Sprintf("%s at %s (%s, as the diff showed)", name, at, files)
	if !read {
		what = fmt.Sprintf("%s at %s (%s, diff not read)", name, at, files)
	}
	moved := func(err error, verb string) error {
		if errors.Is(err, api.ErrMoved) {
			return fmt.Errorf("nothing was %s: %s moved since %s (the commit asked about); press d to read what it holds now", verb, name, at)
		}
		return err
	}
	if action == "a" {
		return confirm("Apply "+what+", uncommitted?", func() tea.Cmd {
			return m.run("applying", name, func(ctx context.Context) (string, error) {
				res, err := m.svc.Apply(ctx, r, name, d.tip)
				if err != nil {
					return "", moved(err, "applied")
				}
				return fmt.Sprintf("Applied %s at %s: %d file(s) changed in the working tree.", name, at, len(res.Files)), nil
			})
		})
	}
	return confirm("Merge "+what+", then delete it?", func() tea.Cmd {
		return m.run("merging", name, func(ctx context.Context) (string, error) {
			res, err := m.svc.Merge(ctx, r, name, d.tip)
			if res == nil {
				return "", moved(err, "merged")
			}
			text := fmt.Sprintf("Merged %s at %s into %s (%d file(s) changed).", name, at, res.Into, len(res.Files))
			if res.NothingToMerge {
				text = fmt.Sprintf("Nothing to merge from %s: its commits were all in %s; it was deleted.", name, res.Into)
			}
			if len(res.ConfigFiles) > 0 {
				text += " It changed files that steer git or litterbox: read them before you build on it."
			}
			return text, err
		})
	})
}

// shellExec is a shell in a sandbox, run while the UI gives up the
// terminal (tea.Exec): the same service call as `litterbox shell`.
type shellExec struct {
	ctx            context.Context
	svc            Sandboxes
	r              *api.Repo
	name           string
	stdin          io.Reader
	stdout, stderr io.Writer
}

func (c *shellExec) SetStdin(r io.Reader)  { c.stdin = r }
func (c *shellExec) SetStdout(w io.Writer) { c.stdout = w }
func (c *shellExec) SetStderr(w io.Writer) { c.stderr = w }

// Run runs sh in the sandbox's /src until it exits.
func (c *shellExec) Run() error {
	fmt.Fprintf(c.stderr, "litterbox: a shell in %s; exit it to come back to the UI.\n", c.name)
	_, err := c.svc.Exec(c.ctx, c.r, c.name, api.ExecOptions{
		Cmd: []string{"sh"}, TTY: true, Interactive: true, Stdin: c.stdin, Stdout: c.stdout, Stderr: c.stderr,
	})
	return err
}

// View draws the screen: exactly its height in rows.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	var lines []string
	switch {
	case m.dialog.kind == helpDialog:
		lines = append([]string{m.title()}, helpLines...)
	case m.mode == requestsView:
		lines = append([]string{m.title()}, m.requestLines()...)
	case m.mode != mainView:
		lines = m.text.view(m.st)
	default:
		lines = append(lines, m.title())
		lines = append(lines, m.list.view(m.st, m.now)...)
		lines = append(lines, m.rule())
		lines = append(lines, m.feed.view(m.st)...)
	}
	// The status line and the keys sit at the bottom, whatever is above.
	status := m.statusRows()
	room := max(m.height-1-len(status), 0)
	lines = append(lines[:min(len(lines), room)], make([]string, max(room-len(lines), 0))...)
	lines = append(append(lines, status...), m.keys())
	return screen(lines, m.width, m.height)
}

func (m *Model) title() string {
	where := "every repository"
	if !m.opts.AllRepos && m.opts.Repo != nil {
		where = termtext.Escape(m.opts.Repo.Root())
	}
	n := len(m.sandboxes)
	t := fmt.Sprintf(" litterbox · %s · %d sandbox%s ", where, n, map[bool]string{true: "", false: "es"}[n == 1])
	return m.st.title.Render(pad(t, m.width))
}

func (m *Model) rule() string {
	sel, ok := m.list.selected()
	label := "─ activity "
	if ok {
		label += "of " + sel.key.name + " "
	}
	if m.feed.focused {
		label += "(enter opens an event) "
	}
	return m.st.dim.Render(label + strings.Repeat("─", max(m.width-len([]rune(label)), 0)))
}

func (m *Model) statusLine() string {
	switch {
	case m.dialog.kind == confirmDialog:
		return m.st.warn.Render(m.dialog.question)
	case m.dialog.kind == promptDialog:
		return m.dialog.question + " " + m.dialog.input.View()
	case m.busy != "":
		return m.st.info.Render(m.busy)
	case m.statusErr:
		return m.st.err.Render(m.status)
	}
	return m.status
}

// keys are the keys of the current view, as many as fit, ending with help
// and quit.
func (m *Model) keys() string {
	var ks [][2]string
	switch {
	case m.dialog.kind == confirmDialog:
		ks = [][2]string{{"y", "yes"}, {"n", "no"}}
	case m.dialog.kind == promptDialog:
		ks = [][2]string{{"enter", "record"}, {"esc", "cancel"}}
	case m.dialog.kind == helpDialog:
		ks = [][2]string{{"any key", "back"}}
	case m.mode == requestsView:
		ks = [][2]string{{"↑↓", "select"}, {"a", "approve"}, {"A", "approve and save"}, {"x", "refuse"}, {"esc", "back"}, {"?", "help"}, {"q", "quit"}}
	case m.mode == diffView:
		ks = [][2]string{{"↑↓", "scroll"}, {"]/[", "next/prev file"}, {"m", "merge this"}, {"a", "apply this"}, {"esc", "back"}, {"?", "help"}, {"q", "back"}}
	case m.mode != mainView:
		ks = [][2]string{{"↑↓", "scroll"}, {"]/[", "next/prev file"}, {"esc", "back"}, {"?", "help"}, {"q", "quit"}}
	default:
		ks = [][2]string{{"↑↓", "select"}, {"tab", "activity"}, {"enter", "open"}, {"d", "diff"}, {"m", "merge"}, {"a", "apply"},
			{"p/r", "pause/resume"}, {"x", "delete"}, {"w", "requests"}, {"s", "shell"}, {"n", "milestone"}, {"?", "help"}, {"q", "quit"}}
	}
	tail := 2
	if m.mode != mainView || m.dialog.kind != noDialog {
		tail = 0
	}
	render := func(k [2]string) string { return m.st.key.Render(k[0]) + " " + k[1] }
	width := func(k [2]string) int { return len([]rune(k[0])) + 1 + len(k[1]) }
	must := 0
	for _, k := range ks[len(ks)-tail:] {
		must += width(k) + 2
	}
	var parts []string
	used := must
	for _, k := range ks[:len(ks)-tail] {
		if used+width(k)+2 > m.width {
			break
		}
		parts = append(parts, render(k))
		used += width(k) + 2
	}
	for _, k := range ks[len(ks)-tail:] {
		parts = append(parts, render(k))
	}
	return strings.Join(parts, "  ")
}
