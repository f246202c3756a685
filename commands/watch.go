package commands

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/activity/otlp"
	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Watch follows the activity records of sandboxes as they are written.
type Watch struct {
	Names    []string `arg:"" optional:"" predictor:"sandbox" help:"Sandboxes to follow (default: every sandbox of the repository, those made later too)."`
	AllRepos bool     `name:"all-repos" help:"Follow the sandboxes of every repository, found through their containers' labels as list --all-repos finds them."`
	JSON     bool     `name:"json" help:"Print each event as one line of JSON, with its repository: for scripts (--format json)."`
	Format   string   `name:"format" enum:"text,json,otlp-json" default:"text" help:"What stdout carries: text, one line an event; json, as --json; otlp-json, each batch of events as one OpenTelemetry export request a line (OTLP/JSON, the collector's file format)."`
	OTLP     string   `name:"otlp" placeholder:"URL" help:"Also send every event to the OpenTelemetry collector at URL, as log records over OTLP/HTTP (http://HOST:4318, or its /v1/logs); OTEL_EXPORTER_OTLP_HEADERS adds headers. An unreachable collector is an error at start; later failures are said on stderr, never block."`
	Since    string   `name:"since" placeholder:"WHEN" help:"First show what was recorded since WHEN: a duration (30s, 10m, 2h, 3d) or a time (15:04, 2006-01-02, 2006-01-02T15:04:05Z). Default: only what happens from now on."`

	since time.Time
	slugs []string
}

// Validate checks the names and the time before anything runs.
func (w *Watch) Validate() error {
	for _, n := range w.Names {
		slug, err := api.Slugify(n)
		if err != nil {
			return err
		}
		w.slugs = append(w.slugs, slug)
	}
	if w.AllRepos && len(w.Names) > 0 {
		return errors.New("give sandbox names or --all-repos, not both")
	}
	if w.JSON && w.Format != "text" && w.Format != "json" {
		return fmt.Errorf("--json is --format json: give one of them, not --json with --format %s", w.Format)
	}
	if w.JSON {
		w.Format = "json"
	}
	if w.OTLP != "" {
		u, err := otlp.Endpoint(w.OTLP)
		if err != nil {
			return err
		}
		w.OTLP = u
	}
	since, err := parseSince(w.Since, time.Now())
	if err != nil {
		return err
	}
	w.since = since
	return nil
}

// parseSince reads --since: empty is now, a duration is that long before
// now, otherwise a date, a time today, or both.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return now, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, now.Location()), nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a duration (10m, 2h, 3d) nor a time (15:04, 2006-01-02, 2006-01-02T15:04:05Z)", s)
}

// Run prints events until Ctrl-C.
func (w *Watch) Run(ctx context.Context, env *Env) error {
	p := &eventPrinter{out: bufio.NewWriter(env.Stdout), errOut: env.Stderr, format: w.Format, repoNames: w.AllRepos}
	if f, ok := env.Stdout.(*os.File); ok && w.Format == "text" && isTerminal(f) {
		p.term = f
	}
	if w.OTLP != "" {
		x, err := w.exporter(ctx, env)
		if err != nil {
			return err
		}
		p.export = x
		defer func() {
			// What the collector has not taken yet gets a few seconds
			// after Ctrl-C, not more: watch ends when asked.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if n := x.Close(cctx); n > 0 {
				env.errf("litterbox watch: %d events were not sent to %s before watch ended\n", n, w.OTLP)
			}
		}()
	}
	if !w.AllRepos {
		r, err := env.Repo(ctx)
		if errors.Is(err, git.ErrNotRepository) {
			return fmt.Errorf("%w; `litterbox watch --all-repos` follows the sandboxes of every repository", err)
		}
		if err != nil {
			return err
		}
		dir := activity.Dir(r.Git.CommonDir)
		// A name with no record yet is a sandbox not made yet, or a
		// typo: say what watch waits for rather than wait without a word.
		for i, slug := range w.slugs {
			if _, err := os.Stat(activity.Record{Dir: dir, Sandbox: slug}.Path()); err != nil {
				env.errf("litterbox watch: %s has recorded nothing in %s: no sandbox of that name has been made here (`litterbox list` shows those there are); waiting for one (Ctrl-C stops)\n",
					w.Names[i], r.Root())
			}
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		w.connections(ctx, env, r, p, &wg)
		f := &activity.Follower{Dir: dir, Names: w.slugs, Since: w.since}
		return f.Run(ctx, func(evs []activity.Event) { p.print(r.Root(), evs) })
	}
	return w.allRepos(ctx, env, p)
}

// exporter is the --otlp collector's, checked to answer before anything
// is watched.
func (w *Watch) exporter(ctx context.Context, env *Env) (*otlp.Exporter, error) {
	h, err := otlp.Headers(os.Getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	if err != nil {
		return nil, err
	}
	x := &otlp.Exporter{URL: w.OTLP, Headers: h, Errs: env.Stderr}
	if err := x.Check(ctx); err != nil {
		return nil, err
	}
	return x, nil
}

// connPoll is how often watch, when it exports, collects the records of
// connections from the gateways of the sandboxes it follows: one engine
// list and one exec in each gateway (what `litterbox net` does).
const connPoll = 5 * time.Second

// connections starts, when watch exports (--otlp, --format otlp-json), a
// follower of r's gateways' connection records (`litterbox net log`,
// allowed and refused), of the sandboxes named or all of them: every
// connPoll it collects them and gives p those new since, until ctx ends.
func (w *Watch) connections(ctx context.Context, env *Env, r *api.Repo, p *eventPrinter, wg *sync.WaitGroup) {
	if !p.exports() {
		return
	}
	tails := map[string]*egress.Tail{}
	poll := func(first bool) {
		list, err := env.Sandboxes.List(ctx, r)
		if err != nil {
			return // said by the activity's follower, or the engine is back next time
		}
		list = slices.DeleteFunc(list, func(sb api.Sandbox) bool {
			return sb.Egress == nil || (len(w.slugs) > 0 && !slices.Contains(w.slugs, sb.Name))
		})
		env.Sandboxes.CollectRefused(ctx, r, list)
		for _, sb := range list {
			t := tails[sb.Name]
			if t == nil {
				// Those there at the start: from the end, or --since;
				// those made later: all they have.
				since := w.since
				if first && w.Since == "" {
					since = time.Time{}
				}
				t = &egress.Tail{Store: sandbox.NetStore(r.Git.CommonDir, sb.Name), Since: since}
				tails[sb.Name] = t
			}
			rs, err := t.Next()
			if err != nil {
				env.errf("warning: cannot read the connections of %s: %v\n", sb.Name, err)
			}
			p.connections(r.Root(), sb.Name, rs)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			poll(first)
			select {
			case <-ctx.Done():
				return
			case <-time.After(connPoll):
			}
		}
	}()
}

// repoRescan is how often watch --all-repos asks the engine for
// repositories that have sandboxes, to follow those that appear.
const repoRescan = 10 * time.Second

// allRepos follows every repository that has sandboxes (and this one, when
// run in one), adding those that appear.
func (w *Watch) allRepos(ctx context.Context, env *Env, p *eventPrinter) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	followed := map[string]bool{} // by common git dir
	follow := func(r *api.Repo) {
		dir := activity.Dir(r.Git.CommonDir)
		if followed[dir] {
			return
		}
		followed[dir] = true
		w.connections(ctx, env, r, p, &wg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := &activity.Follower{Dir: dir, Since: w.since}
			if err := f.Run(ctx, func(evs []activity.Event) { p.print(r.Root(), evs) }); err != nil {
				env.errf("warning: cannot follow the activity of %s: %v\n", r.Root(), err)
			}
		}()
	}
	if r, err := env.Repo(ctx); err == nil {
		follow(r)
	}
	first := true
	for {
		list, err := env.Sandboxes.List(ctx, nil)
		switch {
		case ctx.Err() != nil:
			return nil // Ctrl-C, maybe while the engine was asked
		case err != nil && first:
			return err
		case err != nil && ctx.Err() == nil:
			env.errf("warning: cannot list the sandboxes of every repository: %v\n", err)
		}
		first = false
		roots := map[string]bool{}
		for _, sb := range list {
			roots[sb.Repo] = true
		}
		for root := range roots {
			if r, err := env.Sandboxes.OpenRepo(ctx, root); err == nil {
				follow(r)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(repoRescan):
		}
	}
}

// eventPrinter prints events as they come, from one or several followers.
// Agent text is escaped (termtext) in both forms, and in text each event
// is one line: on a terminal, cut to its width, so no line wraps into what
// would read as an event of its own.
type eventPrinter struct {
	mu        sync.Mutex
	out       *bufio.Writer
	errOut    io.Writer // where a loss is told
	term      *os.File  // stdout, when it is a terminal and the form text
	format    string    // text, json, otlp-json (Watch.Format)
	repoNames bool      // name the repository of each event
	export    *otlp.Exporter
}

// exports reports whether p gives events as OTLP log records: to a
// collector (--otlp), on stdout (--format otlp-json), or both.
func (p *eventPrinter) exports() bool { return p.export != nil || p.format == "otlp-json" }

// jsonEvent is an event as watch --json prints it.
type jsonEvent struct {
	Repo string `json:"repo"`
	activity.Event
}

func (p *eventPrinter) print(repo string, evs []activity.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exports() {
		p.emit(otlp.Records(repo, evs, time.Now()))
	}
	width := 0
	if p.term != nil {
		if w, _, err := term.GetSize(p.term.Fd()); err == nil && w > 0 {
			width = w
		}
	}
	for _, e := range evs {
		if e.Kind == activity.KindMissed {
			// Said on stderr whatever the form, since stdout may be what
			// stalled; the JSON stream holds it too, as a record.
			fmt.Fprintf(p.errOut, "litterbox watch: missed %d event%s of %s (numbers %d to %d): the record rotated them away before watch read them; the refused connections and failed operations among them are kept aside (`litterbox watch --since` and `litterbox ui` show them)\n",
				e.Missed, map[bool]string{true: "", false: "s"}[e.Missed == 1], termtext.Escape(e.Sandbox), e.Seq, e.Seq+e.Missed-1)
			if p.format != "json" {
				continue
			}
		}
		if e.Kind == activity.KindBroken {
			fmt.Fprintf(p.errOut, "litterbox watch: %s\n", activity.Line(e))
			if p.format != "json" {
				continue
			}
		}
		if p.format == "otlp-json" {
			continue
		}
		if p.format == "json" {
			line, err := json.Marshal(jsonEvent{Repo: repo, Event: e})
			if err != nil {
				continue
			}
			p.out.Write(termtext.JSON(line))
			p.out.WriteByte('\n')
			continue
		}
		if p.repoNames {
			e.Sandbox = filepath.Base(repo) + "/" + e.Sandbox
		}
		line := activity.Line(e)
		if width > 0 {
			line = ansi.Truncate(line, width, "…")
		}
		p.out.WriteString(line)
		p.out.WriteByte('\n')
	}
	p.out.Flush()
}

// connections gives a sandbox's gateway's records of connections to the
// export.
func (p *eventPrinter) connections(repo, sandbox string, rs []control.Record) {
	if len(rs) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emit(otlp.Connections(repo, sandbox, rs, time.Now()))
	p.out.Flush()
}

// emit sends records to the collector (--otlp) and, with --format
// otlp-json, writes them on stdout as one export request; p.mu is held.
func (p *eventPrinter) emit(records []otlp.LogRecord) {
	if len(records) == 0 {
		return
	}
	if p.export != nil {
		p.export.Add(records)
	}
	if p.format == "otlp-json" {
		p.out.Write(termtext.JSON(otlp.Encode(records)))
		p.out.WriteByte('\n')
	}
}
