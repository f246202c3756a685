package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
)

// The activity group: `litterbox ui` over 50 sandboxes whose
// records hold 100,000 events, driven in a real terminal (tmux) as the
// end-to-end test drives it, and `litterbox watch` under 1,000 events a
// second.

var activityCases = []string{
	"ui first screen, 50 sandboxes, 100k events",
	"ui shows a new event",
	"ui idle CPU, its own",
	"ui idle CPU, with its engine asks",
	"watch at 1,000 events/s, lag p99",
	"watch reads the history (100k events)",
	"audit verify (100k events)",
}

// activitySandboxes and activityEvents are the shape its targets are set for.
const (
	activitySandboxes = 50
	activityEvents    = 100_000
)

func (b *bench) caseActivity(ctx context.Context) error {
	if !b.has(ctx, "ui") || !b.has(ctx, "watch") {
		b.skip(activityCases, "not implemented yet: `litterbox ui`/`litterbox watch` absent")
		return nil
	}
	dir := filepath.Join(b.tmp, "repo-activity")
	if err := makeRepo(ctx, dir, b.small); err != nil {
		return err
	}
	progress("making %d sandboxes", activitySandboxes)
	if err := b.makeSandboxes(ctx, dir, activitySandboxes); err != nil {
		return err
	}
	progress("writing %d events into their records", activityEvents)
	recDir := activity.Dir(filepath.Join(dir, ".git"))
	if err := writeHistory(recDir, activitySandboxes, activityEvents); err != nil {
		return err
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		b.skip(activityCases[:4], "tmux is missing (scripts/ensure-tmux.sh)")
	} else if err := b.uiCases(ctx, dir, recDir); err != nil {
		return err
	}
	if err := b.watchCases(ctx, dir, recDir); err != nil {
		return err
	}
	return b.auditCase(ctx, dir)
}

// auditCase times `litterbox audit verify` over every record: the 100k
// events and those the other cases wrote, each line's hash checked.
func (b *bench) auditCase(ctx context.Context, dir string) error {
	if !b.has(ctx, "audit", "verify") {
		b.skip(activityCases[6:], "not implemented yet: `litterbox audit verify` absent")
		return nil
	}
	var samples []time.Duration
	for range max(b.n, 1) {
		var out []byte
		took, err := timed(func() (err error) {
			out, err = b.litterbox(dir, "audit", "verify").run(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("audit verify: %w", err)
		}
		if n := strings.Count("\n"+string(out), "\nok "); n < activitySandboxes {
			return fmt.Errorf("audit verify said %d records verify, not %d:\n%s", n, activitySandboxes, out)
		}
		samples = append(samples, took)
	}
	b.rows = append(b.rows, row(activityCases[6], samples, nil, target{"< 1000 ms", func(r Row) bool { return r.Median < 1000 }}))
	return nil
}

func sbName(i int) string { return fmt.Sprintf("s%02d", i) }

// makeSandboxes creates n sandboxes, four at a time.
func (b *bench) makeSandboxes(ctx context.Context, dir string, n int) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 4)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := b.litterbox(dir, "create", sbName(i)).run(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// writeHistory writes total events spread over n records with Append, an
// hour's worth ending now: tool calls with arguments, output and commits
// like an agent's.
func writeHistory(recDir string, n, total int) error {
	per := total / n
	start := time.Now().Add(-time.Hour)
	for s := range n {
		// in place of what its create recorded: the records hold only this
		rec := activity.Record{Dir: recDir, Sandbox: sbName(s)}
		for _, p := range []string{rec.Path(), filepath.Join(recDir, sbName(s)+".lock")} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		for i := range per {
			exit := i % 7 / 6
			e := activity.Event{
				Time: start.Add(time.Duration(i) * time.Hour / time.Duration(per)).UTC(), Kind: activity.KindCall,
				By: "mcp", PID: 4242, Tool: "bash", Args: fmt.Sprintf("go test ./pkg/%d/... -run 'Test%d'", i%40, i),
				Ms: int64(50 + i%900), Exit: &exit, Output: strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.0"+strconv.Itoa(i%10)+"s\n", 3),
			}
			if i%3 == 0 {
				e.Tool, e.Args, e.Exit, e.Output = "write", fmt.Sprintf("pkg/%d/file.go (%d bytes)", i%40, 1000+i%5000), nil, ""
				e.Commit, e.Files = fmt.Sprintf("%040x", i), []string{fmt.Sprintf("pkg/%d/file.go", i%40)}
			}
			if err := rec.Append(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// terminal is a tmux server of the bench's own, running litterbox ui.
type terminal struct {
	sock string
	env  []string
}

func (t terminal) cmd(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-u", "-L", t.sock}, args...)...)
	c.Env = t.env
	return c
}

func (t terminal) screen() string {
	out, _ := t.cmd("capture-pane", "-p", "-t", "0").Output()
	return string(out)
}

// waitScreen polls the screen every 5 ms until ok says yes.
func (t terminal) waitScreen(ok func(string) bool, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		if ok(t.screen()) {
			return time.Since(start), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("the screen never showed what was awaited in %s; it shows:\n%s", limit, t.screen())
}

// uiCases times the first screen, a new event, and the idle CPU.
func (b *bench) uiCases(ctx context.Context, dir, recDir string) error {
	t := terminal{sock: fmt.Sprintf("lb-bench-%d", os.Getpid()), env: append(append(os.Environ(), b.env...), "LANG=C.UTF-8", "TERM=xterm-256color")}
	defer func() {
		_ = t.cmd("kill-server").Run()
		_ = os.Remove(filepath.Join(cmp.Or(os.Getenv("TMUX_TMPDIR"), "/tmp"), fmt.Sprintf("tmux-%d", os.Getuid()), t.sock))
	}()
	ready := func(s string) bool {
		return strings.Contains(s, fmt.Sprintf("%d sandboxes", activitySandboxes)) && strings.Contains(s, "> s00") &&
			!strings.Contains(s, "none recorded") && !strings.Contains(s, "reading the record") && strings.Contains(s, "go test ./pkg/")
	}
	var first []time.Duration
	for i := 0; i <= b.n; i++ {
		start := time.Now()
		if out, err := t.cmd("-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-c", dir, "exec "+b.bin+" ui").CombinedOutput(); err != nil {
			return fmt.Errorf("tmux new-session: %v: %s", err, out)
		}
		if _, err := t.waitScreen(ready, 30*time.Second); err != nil {
			return err
		}
		if i > 0 { // the first run warms the caches
			first = append(first, time.Since(start))
		}
		if i < b.n {
			_ = t.cmd("kill-session", "-t", "0").Run()
			time.Sleep(200 * time.Millisecond)
		}
	}
	b.rows = append(b.rows, withNote(row(activityCases[0], first, nil, under(300)), "until the list and the selected sandbox's activity show (tmux capture-pane every 5 ms)"))

	rec := activity.Record{Dir: recDir, Sandbox: sbName(0)}
	var shown []time.Duration
	for i := range b.n {
		marker := fmt.Sprintf("bench-marker-%d-%d", os.Getpid(), i)
		start := time.Now()
		if err := rec.Append(activity.Event{Kind: activity.KindCall, Tool: "bash", Args: marker, By: "bench"}); err != nil {
			return err
		}
		if _, err := t.waitScreen(func(s string) bool { return strings.Contains(s, marker) }, 10*time.Second); err != nil {
			return err
		}
		shown = append(shown, time.Since(start))
		time.Sleep(300 * time.Millisecond)
	}
	b.rows = append(b.rows, withNote(row(activityCases[1], shown, nil, under(200)), "from the append to the screen showing it"))

	out, err := t.cmd("display-message", "-p", "-t", "0", "#{pane_pid}").Output()
	if err != nil {
		return err
	}
	pid := strings.TrimSpace(string(out))
	const window = 30 * time.Second
	progress("measuring the UI's idle CPU for %s", window)
	time.Sleep(2 * time.Second)
	own0, kids0, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	time.Sleep(window)
	own1, kids1, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	pct := func(ticks int64) float64 { return float64(ticks) / 100 / window.Seconds() * 100 }
	cpu := func(name string, v float64, note string) Row {
		return judge(Row{Case: name, Median: v, Unit: "%", Runs: 1, Note: note},
			target{"< 1% of a core", func(r Row) bool { return r.Median < 1 }})
	}
	b.rows = append(b.rows,
		cpu(activityCases[2], pct(own1-own0), fmt.Sprintf("over %s: the UI process", window)),
		cpu(activityCases[3], pct(own1-own0+kids1-kids0), fmt.Sprintf("over %s: with the docker and git it ran (the engine asked every 15 s)", window)))
	return nil
}

// cpuTicks reads a process's CPU time and its waited-for children's, in
// clock ticks (1/100 s), from /proc.
func cpuTicks(pid string) (own, kids int64, err error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// fields from 3 on: utime is field 14, stime 15, cutime 16, cstime 17
	n := func(i int) int64 { v, _ := strconv.ParseInt(f[i-3], 10, 64); return v }
	return n(14) + n(15), n(16) + n(17), nil
}

// watchCases runs watch --json beside a writer of 1,000 events a second,
// and times it reading the whole history.
func (b *bench) watchCases(ctx context.Context, dir, recDir string) error {
	received := make(chan time.Duration, 1<<20)
	stop, err := b.startWatch(ctx, dir, nil, func(e activity.Event) {
		if e.By == "bench-rate" {
			received <- time.Since(e.Time)
		}
	})
	if err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond) // it is following
	const rate, seconds = 1000, 5
	total := rate * seconds
	start := time.Now()
	tk := time.NewTicker(10 * time.Millisecond)
	for i := 0; i < total; {
		<-tk.C
		for j := 0; j < rate/100 && i < total; j, i = j+1, i+1 {
			rec := activity.Record{Dir: recDir, Sandbox: sbName(i % 10)}
			if err := rec.Append(activity.Event{Kind: activity.KindCall, Tool: "bash", Args: fmt.Sprintf("rate %d", i), By: "bench-rate"}); err != nil {
				tk.Stop()
				stop()
				return err
			}
		}
	}
	tk.Stop()
	wrote := time.Since(start)
	var lags []time.Duration
	deadline := time.After(20 * time.Second)
collect:
	for len(lags) < total {
		select {
		case l := <-received:
			lags = append(lags, l)
		case <-deadline:
			break collect
		}
	}
	stop()
	slices.Sort(lags)
	q := func(p float64) time.Duration {
		if len(lags) == 0 {
			return 0
		}
		return lags[min(len(lags)-1, int(p*float64(len(lags))))]
	}
	r := Row{Case: activityCases[4], Median: ms(q(0.99)), Unit: "ms", Runs: 1,
		Note: fmt.Sprintf("%d of %d events shown (written at %.0f/s); lag p50 %.1f ms, max %.1f ms", len(lags), total, float64(total)/wrote.Seconds(), ms(q(0.5)), ms(q(1)))}
	b.rows = append(b.rows, judge(r, target{"all shown, p99 < 1000 ms", func(r Row) bool { return len(lags) == total && r.Median < 1000 }}))

	// The whole history, 100k events and those just written (and the ui
	// case's markers), from --since.
	want := activityEvents + total
	var n int
	done := make(chan struct{})
	start = time.Now()
	stop, err = b.startWatch(ctx, dir, []string{"--since", "1d"}, func(activity.Event) {
		if n++; n == want {
			close(done)
		}
	})
	if err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
	}
	took := time.Since(start)
	stop()
	perSec := float64(n) / took.Seconds()
	b.rows = append(b.rows, judge(Row{Case: activityCases[5], Median: perSec, Unit: "ev/s", Runs: 1,
		Note: fmt.Sprintf("%d events in %.0f ms, litterbox's start included", n, ms(took))},
		target{">= 1000 ev/s", func(r Row) bool { return n >= want && r.Median >= 1000 }}))
	return nil
}

// startWatch runs `litterbox watch --json` in dir and calls fn with each
// event it prints; stop ends it.
func (b *bench) startWatch(ctx context.Context, dir string, extra []string, fn func(activity.Event)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, b.bin, append([]string{"watch", "--json"}, extra...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), b.env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e activity.Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				fn(e)
			}
		}
	}()
	return func() {
		cancel()
		_ = cmd.Wait()
		wg.Wait()
	}, nil
}
