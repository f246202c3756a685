package pause

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// The idle pause. A sandbox with no activity for its idle time (`idle` in
// the configuration, `create --idle`; state.DefaultIdle) is paused, its
// gateway too, and the next operation on it resumes it first (Wake).
// Nothing is ever deleted for being idle.
//
// No process runs to watch: a litterbox process that looks acts. Every
// CLI command sweeps its repository's sandboxes once (SweepIdle; but those
// it names, which it is about to wake), and the
// MCP server and `litterbox ui` sweep for as long as they run (WatchIdle).
// A sweep costs a directory read and two stat(2)s per sandbox; only one
// whose last activity is older than its idle time costs an exec, which
// looks for what the host cannot see:
//
//   - a command running in it (bash, exec, shell, run's agent): a process
//     whose parent is outside the sandbox, as every process an engine's
//     exec starts is (its parent pid is 0), other than its init; a build
//     that prints nothing for 30 minutes is at work, not idle;
//   - a service's output: the time its log was last written.
//
// and, beside the exec, the gateway's audit: the time of the last
// connection through it (allowed or refused), once collected.
//
// What the host sees is in the state directory (state/idle.go): the
// activity record's last write (every call, operation and service event)
// and the active file's time (the start of every operation, Wake; what
// the exec found). Either one keeps the sandbox awake for another idle
// time; an exec that found it at work marks it active, so a sandbox at
// work costs one exec per idle time.
//
// A sweep and a wake of one sandbox take its idle lock, so a wake never
// meets a pause half made, and an operation never runs against a sandbox
// the sweep paused under it (pauseIdle says how).

// probeScript prints "busy PID" for each process of the sandbox an exec
// started (its parent pid is 0), but init and itself, and "log SECONDS"
// with each service log's modification time. Plain sh (busybox ash, dash,
// bash) and stat: no other program of the image is needed.
const probeScript = `for f in /proc/[0-9]*/status; do
	p=${f#/proc/}; p=${p%/status}
	if [ "$p" = 1 ] || [ "$p" = "$$" ]; then continue; fi
	while read -r k v; do
		if [ "$k" = PPid: ]; then
			if [ "$v" = 0 ]; then echo "busy $p"; fi
			break
		fi
	done <"$f"
done 2>/dev/null
for f in ` + api.RunDir + `/state/*/log; do
	if [ -f "$f" ]; then echo "log $(stat -c %Y "$f" 2>/dev/null)"; fi
done
exit 0`

// probe says what the sandbox ref is doing that the host cannot see: busy
// when a command runs in it, and when its services last wrote output
// (zero when none did).
func (ps *Pauser) probe(ctx context.Context, ref provider.Ref) (busy bool, output time.Time, err error) {
	res, err := ps.ExecCapped(ctx, provider.ExecRequest{Ref: ref, Cmd: []string{"sh", "-c", probeScript}}, 64<<10)
	if err != nil {
		return false, time.Time{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		kind, v, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "busy":
			busy = true
		case "log":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && time.Unix(n, 0).After(output) {
				output = time.Unix(n, 0)
			}
		}
	}
	return busy, output, nil
}

// Sweep bounds: a watcher looks at least every maxWatch (a sandbox made
// meanwhile is seen), at most every minWatch.
const (
	minWatch = 500 * time.Millisecond
	maxWatch = time.Minute
)

// SweepIdle pauses each sandbox of r that has been idle for its idle time
// (see above); next is when the next one may be. A sandbox it cannot look
// into (stopped, paused, gone) is looked at again an idle time later.
// It returns the names of those it paused. The sandboxes named in using
// (slugs) are left alone: the caller is about to work on them, and its
// Wake would resume each straight away.
func (ps *Pauser) SweepIdle(ctx context.Context, r *api.Repo, using ...string) (paused []string, next time.Duration) {
	next = maxWatch
	if ps.pauseEnds() {
		// Kubernetes: a pause ends the sandbox, so idleness never does.
		return nil, next
	}
	gitDir := r.Git.CommonDir
	entries, err := os.ReadDir(filepath.Join(gitDir, "litterbox"))
	if err != nil {
		return nil, next
	}
	now := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range entries {
		slug := e.Name()
		if !e.IsDir() || !activity.ValidName(slug) || slices.Contains(using, slug) {
			continue
		}
		idle := state.ReadIdle(gitDir, slug)
		id := state.ReadyContainer(gitDir, slug)
		if idle == 0 || id == "" {
			continue
		}
		if _, ok := state.IdlePaused(gitDir, slug); ok {
			continue
		}
		last := state.LastActive(gitDir, slug)
		if last.IsZero() {
			// Nothing recorded yet: its idle time counts from now.
			_ = state.Touch(gitDir, slug, now)
			continue
		}
		if left := idle - now.Sub(last); left > 0 {
			next = min(next, left)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ps.pauseIdle(ctx, gitDir, slug, provider.Ref{ID: id}, idle) {
				mu.Lock()
				paused = append(paused, slug)
				mu.Unlock()
			}
		}()
		next = min(next, idle)
	}
	wg.Wait()
	return paused, max(next, minWatch)
}

// WatchIdle sweeps r's sandboxes (SweepIdle) until ctx ends.
func (ps *Pauser) WatchIdle(ctx context.Context, r *api.Repo) {
	for {
		_, next := ps.SweepIdle(ctx, r)
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}

// pauseIdle pauses sandbox slug (container ref) and its gateway, unless
// it shows activity; paused says it did.
func (ps *Pauser) pauseIdle(ctx context.Context, gitDir, slug string, ref provider.Ref, idle time.Duration) (paused bool) {
	unlock, ok, err := flock.TryLock(state.File(gitDir, slug, state.IdleLockFile))
	if err != nil || !ok {
		return false // another process looks at it now
	}
	defer unlock()
	if _, ok := state.IdlePaused(gitDir, slug); ok {
		return false
	}
	last := state.LastActive(gitDir, slug)
	if time.Since(last) < idle {
		return false
	}
	var traffic time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		traffic = ps.lastTraffic(ctx, gitDir, slug)
	}()
	busy, output, err := ps.probe(ctx, ref)
	<-done
	seen := output
	if traffic.After(seen) {
		seen = traffic
	}
	switch {
	case err != nil || busy:
		// Not running (stopped, paused by someone, gone) or at work: look
		// again an idle time from now.
		_ = state.Touch(gitDir, slug, time.Now())
		return false
	case seen.After(last):
		_ = state.Touch(gitDir, slug, seen)
		if time.Since(seen) < idle {
			return false
		}
	}
	last = state.LastActive(gitDir, slug)
	// The mark goes first, then a last look at the activity: an operation
	// marks activity before it looks for the mark (Wake), so one that
	// started before the mark is seen here, and one after it finds the
	// mark and waits for this lock to resume the sandbox. None runs
	// against a sandbox paused here.
	if err := state.MarkIdlePaused(gitDir, slug, idle); err != nil {
		ps.Log.Warn("cannot mark the sandbox paused for being idle", "sandbox", slug, "err", err)
		return false
	}
	if !state.LastActive(gitDir, slug).Equal(last) {
		_ = state.UnmarkIdlePaused(gitDir, slug)
		return false
	}
	already, err := ps.Provider.Pause(ctx, ref)
	if err != nil || already {
		_ = state.UnmarkIdlePaused(gitDir, slug)
		_ = state.Touch(gitDir, slug, time.Now())
		return false
	}
	gw := gatewayRef(gitDir, slug)
	if gw != nil {
		if _, err := ps.Provider.Pause(ctx, *gw); err != nil {
			ps.Log.Warn("cannot pause the sandbox's gateway", "sandbox", slug, "err", err)
		}
	}
	ps.noteIdle(gitDir, slug, activity.KindPause, fmt.Sprintf("idle: no activity for %s", idle))
	return true
}

// lastTraffic is the time of the last connection through sandbox slug's
// gateway, allowed or refused, as its audit says once collected; zero
// when it has no gateway or it cannot be asked.
func (ps *Pauser) lastTraffic(ctx context.Context, gitDir, slug string) time.Time {
	rec, ok, err := netgate.Read(gitDir, slug)
	if err != nil || !ok || rec.Gateway == "" {
		return time.Time{}
	}
	if _, err := ps.gate.CollectLocked(ctx, gitDir, slug, rec); err != nil {
		return time.Time{}
	}
	rs, err := netgate.Store(gitDir, slug).Records(1)
	if err != nil || len(rs) == 0 {
		return time.Time{}
	}
	return rs[0].Time
}

// gatewayRef is the gateway of sandbox slug, nil when it has none.
func gatewayRef(gitDir, slug string) *provider.Ref {
	rec, ok, err := netgate.Read(gitDir, slug)
	if err != nil || !ok || rec.Gateway == "" {
		return nil
	}
	ref := rec.Ref()
	return &ref
}

// Wake marks activity on h's sandbox and, when it was paused for being
// idle, resumes it (with its gateway) and says so: to ctx's front end
// (api.WithWoken), else in the log. Every operation on a sandbox starts
// with it.
func (ps *Pauser) Wake(ctx context.Context, h *api.Handle) (resumed bool, err error) {
	gitDir := h.Repo.Git.CommonDir
	_ = state.Touch(gitDir, h.Slug, time.Now())
	if _, ok := state.IdlePaused(gitDir, h.Slug); !ok {
		return false, nil
	}
	unlock, err := flock.Wait(ctx, state.File(gitDir, h.Slug, state.IdleLockFile), 5*time.Millisecond)
	if err != nil {
		return false, err
	}
	defer unlock()
	idle, ok := state.IdlePaused(gitDir, h.Slug)
	if !ok {
		return false, nil // another process resumed it meanwhile
	}
	start := time.Now()
	if err := ps.thaw(ctx, gitDir, h.Slug, h.Ref); err != nil {
		return false, fmt.Errorf("resume sandbox '%s', paused for being idle: %w", h.Slug, err)
	}
	ps.noteIdle(gitDir, h.Slug, activity.KindResume, fmt.Sprintf("for %s's operation, after an idle pause (%s without activity)", activity.Actor(ctx), idle))
	note := fmt.Sprintf("Sandbox '%s' had been paused after %s without activity; it was resumed for this %s (%d ms).", h.Slug, idle, callOrCommand(ctx), time.Since(start).Milliseconds())
	if !api.NoteWoken(ctx, note) {
		ps.Log.Warn(note)
	}
	return true, nil
}

// thaw resumes sandbox slug's gateway and its container ref, and removes
// the idle pause's mark. The two resume at once: a connection the sandbox
// makes before its gateway is thawed waits in the socket's backlog, as
// one made while the gateway is busy does.
func (ps *Pauser) thaw(ctx context.Context, gitDir, slug string, ref provider.Ref) error {
	var wg sync.WaitGroup
	if gw := gatewayRef(gitDir, slug); gw != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := ps.Provider.Resume(ctx, *gw); err != nil {
				ps.Log.Warn("cannot resume the sandbox's gateway", "sandbox", slug, "err", err)
			}
		}()
	}
	_, err := ps.Provider.Resume(ctx, ref)
	wg.Wait()
	if err != nil {
		return err
	}
	return state.UnmarkIdlePaused(gitDir, slug)
}

// noteIdle records the idle pause's doing in sandbox slug's activity
// record, by litterbox.
func (ps *Pauser) noteIdle(gitDir, slug string, kind activity.Kind, msg string) {
	rec := activity.Record{Dir: activity.Dir(gitDir), Sandbox: slug}
	if err := rec.Append(activity.Event{Kind: kind, By: activity.ByLitterbox, Message: msg}); err != nil {
		ps.Log.Warn("cannot write the activity record", "sandbox", slug, "err", err)
	}
}

// callOrCommand is what the actor of ctx makes: an agent's call, or a
// command.
func callOrCommand(ctx context.Context) string {
	if activity.Actor(ctx) == activity.ByMCP {
		return "call"
	}
	return "command"
}
