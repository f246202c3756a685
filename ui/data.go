package ui

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/fsnotify/fsnotify"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// What the UI reads, each in a command of its own, and the messages that
// bring it back. Nothing here touches the model.

// listMsg is the engine's list of sandboxes.
type listMsg struct {
	sbs []api.Sandbox
	err error
	// repo is the repository opened again: it had no id yet when the UI
	// started, and its first create made one, which every lookup selects
	// by (sandbox/identity.go).
	repo *api.Repo
}

// repoMsg is a repository opened (every repository's view finds them in
// the list).
type repoMsg struct {
	root string
	r    *api.Repo
	err  error
}

// historyMsg is the latest events of sandboxes: the last one of each
// sandbox seen for the first time, the latest historyLen of the one
// selected (full).
type historyMsg struct {
	events map[sbKey][]activity.Event
	full   bool
}

// eventsMsg is events as they are recorded.
type eventsMsg struct {
	repo   string
	events []activity.Event
}

// changedMsg says a sandbox's state changed on disk (made, ready, gone).
type changedMsg struct{}

// statsMsg is how much each sandbox's branch changes, for those whose tip
// moved.
type statsMsg struct {
	repo  string
	tips  map[string]string // by sandbox name
	stats map[string]sbStats
}

// diffMsg is a sandbox's diff against its base: every file, and what the
// limits held of the patch.
type diffMsg struct {
	key sbKey
	res *api.DiffResult
	err error
}

// commitDiffMsg is the diff of the commit an opened event made.
type commitDiffMsg struct {
	commit string
	files  *git.FileList
	patch  *git.PatchCutter
	err    error
}

// landMsg is what a merge or apply asked about a sandbox the diff view
// has not shown: the commit it would land and its files.
type landMsg struct {
	key    sbKey
	action string // m or a
	res    *api.DiffResult
	err    error
}

// actionMsg is how an action ended.
type actionMsg struct {
	text string
	err  error
}

// inboxMsg is what the followers and watchers sent meanwhile.
type inboxMsg []tea.Msg

// tickMsg moves the clock ("3s ago"); seq tells the latest clock from
// older ones.
type tickMsg struct {
	t   time.Time
	seq int
}

// refreshMsg asks the engine again, once the minimum gap has passed.
type refreshMsg struct{}

// pollMsg is the periodic ask; seq tells the latest from older timers.
type pollMsg struct{ seq int }

func listCmd(ctx context.Context, svc Sandboxes, r *api.Repo) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var again *api.Repo
		if r != nil && r.ID == "" {
			if r2, err := svc.OpenRepo(ctx, r.Root()); err == nil && r2.ID != "" {
				r, again = r2, r2
			}
		}
		sbs, err := svc.List(ctx, r)
		return listMsg{sbs: sbs, err: err, repo: again}
	}
}

func openRepoCmd(ctx context.Context, svc Sandboxes, root string) tea.Cmd {
	return func() tea.Msg {
		r, err := svc.OpenRepo(ctx, root)
		return repoMsg{root: root, r: r, err: err}
	}
}

// historyLen is how many of a sandbox's latest events the UI keeps; before
// them it keeps up to keptLen of the older events the record keeps aside
// (trimHistory).
const (
	historyLen = 500
	keptLen    = 2000
)

// historyCmd reads the last event of each sandbox of keys (a record
// folder each), or the latest historyLen when full: the list needs one,
// only the feed needs more, so the first screen decodes 50 events rather
// than 25,000.
func historyCmd(keys map[sbKey]string, full bool) tea.Cmd {
	n := 1
	if full {
		n = historyLen
	}
	return func() tea.Msg {
		out := map[sbKey][]activity.Event{}
		for k, dir := range keys {
			evs, _ := activity.Last(dir, k.name, n)
			out[k] = evs
		}
		return historyMsg{events: out, full: full}
	}
}

// statsCmd measures the branches whose tip moved since known: one
// for-each-ref, then two git calls per moved branch, a few at a time.
func statsCmd(ctx context.Context, r *api.Repo, sbs []api.Sandbox, known map[string]string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		msg := statsMsg{repo: r.Root(), tips: map[string]string{}, stats: map[string]sbStats{}}
		refs, err := r.Git.Refs(ctx, "refs/heads/"+api.BranchPrefix)
		if err != nil {
			return msg
		}
		var (
			mu  sync.Mutex
			wg  sync.WaitGroup
			sem = make(chan struct{}, 4)
		)
		for _, sb := range sbs {
			tip := refs[api.BranchRef(sb.Name)]
			if tip == "" || tip == known[sb.Name] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				st, ok := measure(ctx, r.Git, sb.Base, tip)
				if !ok {
					return
				}
				mu.Lock()
				msg.tips[sb.Name], msg.stats[sb.Name] = tip, st
				mu.Unlock()
			}()
		}
		wg.Wait()
		return msg
	}
}

// measure counts a branch's commits and lines since base (the commit the
// sandbox was made from), or since where it left HEAD when that is not
// known.
func measure(ctx context.Context, g *git.Repo, base, tip string) (sbStats, bool) {
	if base == "" {
		b, ok, err := g.CommonAncestor(ctx, "HEAD", tip)
		if err != nil || !ok {
			return sbStats{}, false
		}
		base = b
	}
	n, err := g.CountCommits(ctx, base, tip)
	if err != nil {
		return sbStats{}, false
	}
	s, err := g.NumStat(ctx, base, tip)
	if err != nil {
		return sbStats{}, false
	}
	return sbStats{commits: n, files: s.Files, added: s.Added, deleted: s.Deleted}, true
}

func diffCmd(ctx context.Context, svc Sandboxes, r *api.Repo, key sbKey) tea.Cmd {
	return func() tea.Msg {
		lim := git.DefaultPatchLimits
		res, err := svc.Diff(ctx, r, key.name, git.DiffOptions{Hold: &lim}, io.Discard)
		return diffMsg{key: key, res: res, err: err}
	}
}

// landCmd lists the files of a sandbox's branch as it is now, and the
// commit, for the question before a merge or apply of a diff not shown:
// the list only, no patch.
func landCmd(ctx context.Context, svc Sandboxes, r *api.Repo, key sbKey, action string) tea.Cmd {
	return func() tea.Msg {
		res, err := svc.Diff(ctx, r, key.name, git.DiffOptions{Hold: &git.PatchLimits{}}, io.Discard)
		return landMsg{key: key, action: action, res: res, err: err}
	}
}

func commitDiffCmd(ctx context.Context, r *api.Repo, commit string) tea.Cmd {
	return func() tea.Msg {
		lim := git.DefaultPatchLimits
		files, err := r.Git.ListFiles(ctx, commit+"^", commit, lim.Files, lim.NameBytes)
		if err != nil {
			return commitDiffMsg{commit: commit, err: err}
		}
		patch, err := r.Git.HoldPatch(ctx, commit+"^", commit, files, lim)
		return commitDiffMsg{commit: commit, files: files, patch: patch, err: err}
	}
}

// waitInbox brings what the followers and watchers sent, as one message per
// burst.
func waitInbox(ctx context.Context, inbox <-chan tea.Msg) tea.Cmd {
	return func() tea.Msg {
		var msgs inboxMsg
		select {
		case <-ctx.Done():
			return nil
		case m := <-inbox:
			msgs = append(msgs, m)
		}
		for len(msgs) < 512 {
			select {
			case m := <-inbox:
				msgs = append(msgs, m)
			default:
				return msgs
			}
		}
		return msgs
	}
}

// followCmd starts following a repository's records, and watching its
// sandboxes' state, for as long as ctx lasts.
func followCmd(ctx context.Context, r *api.Repo, since time.Time, inbox chan<- tea.Msg) tea.Cmd {
	return func() tea.Msg {
		root := r.Root()
		f := &activity.Follower{Dir: activity.Dir(r.Git.CommonDir), Since: since}
		go func() {
			defer guard(ctx, inbox, "following the activity of "+root)
			err := f.Run(ctx, func(evs []activity.Event) {
				select {
				case inbox <- eventsMsg{repo: root, events: evs}:
				case <-ctx.Done():
				}
			})
			if err != nil {
				select {
				case inbox <- actionMsg{err: fmt.Errorf("cannot follow the activity of %s: %w", root, err)}:
				case <-ctx.Done():
				}
			}
		}()
		go func() {
			defer guard(ctx, inbox, "watching the sandboxes of "+root)
			watchState(ctx, filepath.Join(r.Git.CommonDir, "litterbox"), inbox)
		}()
		return nil
	}
}

// guard turns a panic of a goroutine the UI started into an error on its
// status line: bubbletea restores the terminal after a panic in its own
// goroutines only, and a garbled terminal is worse than a follower gone.
func guard(ctx context.Context, inbox chan<- tea.Msg, what string) {
	if r := recover(); r != nil {
		select {
		case inbox <- actionMsg{err: fmt.Errorf("%s stopped: %v", what, r)}:
		case <-ctx.Done():
		}
	}
}

// stateMarks are the files of a sandbox's state folder whose coming and
// going changes what list says of it (sandbox/state.go): a create begun,
// a sandbox ready, a setup failed.
var stateMarks = map[string]bool{"creating": true, "ready": true, "setup-failed": true}

// watchState tells the UI when a sandbox's state folder appears or goes, or
// one of its marks does, so a create or a delete by any process shows at
// once rather than at the next ask.
func watchState(ctx context.Context, dir string, inbox chan<- tea.Msg) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil || w.Add(dir) != nil {
		return
	}
	addAll := func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && activity.ValidName(e.Name()) {
				_ = w.Add(filepath.Join(dir, e.Name()))
			}
		}
	}
	addAll()
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			parent := filepath.Dir(ev.Name)
			switch {
			case parent == dir && activity.ValidName(name):
				if ev.Has(fsnotify.Create) {
					_ = w.Add(ev.Name)
				}
			case parent != dir && stateMarks[name] && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)):
			default:
				continue
			}
			// A burst (a create writes several files) is one notice.
			if timer == nil {
				timer = time.After(50 * time.Millisecond)
			}
		case <-timer:
			timer = nil
			select {
			case inbox <- changedMsg{}:
			case <-ctx.Done():
				return
			}
		case <-w.Errors:
			addAll()
		}
	}
}
