// Package harnessrun runs an agent harness inside a sandbox (`litterbox
// run`, docs/run.md): the sandbox made for it (its released build mounted
// read-only from the host's cache, the model's API key held by the
// sandbox's egress gateway, an image that can run it) or taken by its name,
// the harness run attached to the user's terminal, and what it changes
// committed to the sandbox's branch at each quiet period of /src while it
// runs and once more when it ends.
package harnessrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/harness"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/oplog"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// Options describe a harness run.
type Options struct {
	// Harness is what runs; Build the host directory of its build (""
	// for --cmd: a program of the image).
	Harness *harness.Harness
	Build   string
	// Args pass through to it.
	Args []string
	// Settings, when not nil, are written as its settings file in its home
	// (harness.UserSettings: --with-config).
	Settings []byte
	// Create makes the sandbox when name is free (its image, --from...).
	Create api.CreateOptions
	// Getenv reads the user's environment (the key, the base URL).
	Getenv func(string) string
	// Quiet is how long /src must go without a change for what changed
	// to be committed while it runs; Every bounds the wait from a change
	// to its commit while the tree keeps changing (and is the period of
	// the commits where the sandbox has no change journal).
	Quiet, Every time.Duration
	// Remove deletes the sandbox after the run when its branch holds no
	// work that is not merged.
	Remove bool
	// Created, when set, is told of the sandbox the run made, before the
	// harness starts.
	Created func(*api.Created)
	// Notef tells the user what litterbox does (stderr).
	Notef func(format string, args ...any)
	TTY   bool
	// The user's terminal or pipes.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Result is what a run did.
type Result struct {
	// Name is the sandbox's; Created is set when the run made it.
	Name    string
	Created *api.Created
	// Exit is the harness's exit code.
	Exit int
	// Commits are the commits the run added to the branch.
	Commits int
	// Skipped are the files its snapshots left out (too large, over the
	// record limit, unreadable): they are in the sandbox only.
	Skipped []api.Skipped
	// Removed: --rm deleted the sandbox. Kept, when --rm did not, says
	// why: work the branch does not hold (its last snapshot failed, or
	// left files out).
	Removed bool
	Kept    string
	// Interrupted: litterbox was stopped (SIGINT, SIGTERM) before the
	// harness ended; Exit is then 130.
	Interrupted bool
}

// Runner runs harnesses in c's sandboxes.
type Runner struct {
	*core.Common
	inv  *inventory.Inventory
	rec  *recording.Recorder
	gate *netgate.Gate
	ops  *oplog.Ops
}

// New is the runner of c's sandboxes: inv finds them, rec follows their
// change journal, gate reads the declared secrets, ops does (and notes in
// the activity record) the rest.
func New(c *core.Common, inv *inventory.Inventory, rec *recording.Recorder, gate *netgate.Gate, ops *oplog.Ops) *Runner {
	return &Runner{Common: c, inv: inv, rec: rec, gate: gate, ops: ops}
}

// home is the harness's home in the sandbox: on its /tmp, nothing of the
// user's.
const home = "/tmp/litterbox-home"

// Run runs o.Harness in sandbox name of r: the one of that name, or one it
// makes. Everything that can be refused is refused before anything is
// made: an unknown harness, a build not cached (the caller), a key neither
// declared nor set, an image that cannot run the build.
func (hr *Runner) Run(ctx context.Context, r *api.Repo, name string, o Options) (*Result, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	h := o.Harness
	ctx = activity.WithActor(ctx, h.Name)
	out := &Result{Name: slug}
	// A sandbox of that name is looked up once; one the run makes, again
	// once it is made.
	hd, err := hr.inv.Handle(ctx, r, slug)
	switch {
	case err == nil:
		if err := hr.checkSandbox(ctx, hd, o); err != nil {
			return nil, err
		}
	case !errors.Is(err, api.ErrNotFound):
		return nil, err
	default:
		if out.Created, err = hr.create(ctx, r, slug, o); err != nil {
			return nil, err
		}
		if o.Created != nil {
			o.Created(out.Created)
		}
		if hd, err = hr.inv.Handle(ctx, r, slug); err != nil {
			return out, err
		}
	}
	if out.Created == nil {
		// A run whose litterbox was killed runs on in the sandbox.
		if runs := hr.runsGoing(ctx, hd); len(runs) > 0 {
			pids := make([]string, 0, len(runs))
			for _, r := range runs {
				pids = append(pids, r.pid)
			}
			o.Notef("note: an earlier run of %s is still running in sandbox %s (pid %s: its litterbox was stopped before it ended); it changes /src beside this one. `litterbox exec %s -- kill %s` ends it.\n",
				runs[0].name, slug, strings.Join(pids, ", "), slug, strings.Join(pids, " "))
		}
	}
	// list says a run is going, or was when its litterbox was killed: the
	// record stays unless the harness ended.
	if err := state.WriteRun(r, slug, h.Mark()); err != nil {
		return out, err
	}
	rec := &recorder{Runner: hr, hd: hd, o: o, out: out, skipped: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec.whileRuns(ctx, stop)
	}()
	cmd := append([]string{"sh", "-c", h.Wrapper(o.Settings), "litterbox-run"}, h.Argv(o.Args, o.Getenv)...)
	exit, runErr := hr.ops.ExecIn(ctx, r, slug, hd.Ref, api.ExecOptions{
		Cmd: cmd, TTY: o.TTY, Interactive: true, Env: h.RunEnv(home, o.Getenv),
		Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	close(stop)
	wg.Wait()
	out.Exit = exit
	how := fmt.Sprintf("exited %d", exit)
	if runErr != nil && ctx.Err() != nil {
		// Ctrl-C or a kill of litterbox without a terminal: the harness
		// is left to end with its sandbox, as a shell's command is.
		out.Interrupted, out.Exit, runErr = true, 130, nil
		how = "interrupted"
	} else if runErr != nil {
		how = "ended: " + runErr.Error()
	}
	// The last commit runs even when the user's Ctrl-C ended the run.
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	lastErr := rec.commit(final, h.Name+": "+how)
	if !out.Interrupted {
		if err := state.RemoveRun(r, slug); err != nil {
			hr.Log.Warn("could not remove the record of the run", "sandbox", slug, "err", err)
		}
	}
	if runErr != nil {
		return out, runErr
	}
	// --rm deletes only what the branch holds all of: the branch being
	// merged says nothing of files a snapshot failed to commit or left out.
	switch {
	case !o.Remove || out.Interrupted:
	case lastErr != nil:
		out.Kept = "its last snapshot failed, so what it changed since the one before is only in the sandbox"
	case len(out.Skipped) > 0:
		out.Kept = "a file its snapshots left out is only in the sandbox"
	default:
		if _, err := hr.ops.Delete(final, r, slug, false, nil); err == nil {
			out.Removed = true
		} else if !errors.Is(err, api.ErrUnmerged) {
			return out, err
		}
	}
	return out, nil
}

// recorder commits what a run changes.
type recorder struct {
	*Runner
	hd  *api.Handle
	o   Options
	out *Result

	mu      sync.Mutex // one snapshot at a time; guards out and skipped
	skipped map[string]bool
}

// commit snapshots /src with message.
func (rc *recorder) commit(ctx context.Context, message string) error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res, err := rc.ops.Snapshot(ctx, rc.hd, message)
	if err != nil {
		if ctx.Err() == nil {
			rc.o.Notef("note: could not commit what %s changed: %v\n", rc.o.Harness.Name, err)
		}
		return err
	}
	if res.Committed {
		rc.out.Commits++
	}
	for _, sk := range res.Skipped {
		if !rc.skipped[sk.Path] {
			rc.skipped[sk.Path] = true
			rc.out.Skipped = append(rc.out.Skipped, sk)
		}
	}
	return nil
}

// whileRuns commits what the harness changes until stop is closed: at
// each quiet period of /src the change journal's follower tells
// (scanner.Follow), or, where it cannot run, every o.Every.
func (rc *recorder) whileRuns(ctx context.Context, stop <-chan struct{}) {
	message := rc.o.Harness.Name + ": while it runs"
	// At once, while the harness starts, the scanner is installed and the
	// change journal started (in a sandbox the run made: nothing there is
	// to commit yet) or a first snapshot does both and commits what changed
	// since the last one: the later ones, the last above all, then cost
	// what changed. One under way when the run is interrupted is cut short
	// (an install cut short leaves nothing: the last snapshot installs
	// again).
	if rc.out.Created != nil {
		if err := rc.rec.Prepare(ctx, rc.hd); err != nil {
			rc.Log.Debug("could not install the scanner ahead of the snapshots", "sandbox", rc.hd.Slug, "err", err)
		}
	} else if rc.commit(ctx, message) != nil {
		return
	}
	select {
	case <-stop:
		return // it ended already: the last snapshot follows
	default:
	}
	quiet := make(chan struct{}, 1)
	followed := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		followed <- rc.rec.FollowQuiet(ctx, rc.hd, wire.QuietOptions{Quiet: rc.o.Quiet, Most: rc.o.Every}, stop, func() {
			select {
			case quiet <- struct{}{}:
			default: // one is pending already
			}
		})
	}()
	var clock <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case err := <-followed:
			// No follower (no journal, or a scanner of an earlier
			// litterbox in the sandbox): commit on the clock.
			rc.Log.Debug("no quiet periods: committing on a clock", "sandbox", rc.hd.Slug, "every", rc.o.Every, "err", err)
			t := time.NewTicker(rc.o.Every)
			defer t.Stop()
			clock, followed = t.C, nil
		case <-quiet:
			_ = rc.commit(ctx, message)
		case <-clock:
			_ = rc.commit(ctx, message)
		}
	}
}

// create makes the sandbox a harness runs in: its build mounted, the
// model's key bound to the model API's host and that host allowed, an image
// that can run it.
func (hr *Runner) create(ctx context.Context, r *api.Repo, slug string, o Options) (*api.Created, error) {
	h := o.Harness
	co := o.Create
	if o.Build != "" {
		co.Binds = append(slices.Clone(co.Binds), provider.Bind{Source: o.Build, Path: harness.Mount})
	}
	if h.KeyEnv != "" {
		declared, err := hr.gate.Declared(ctx, r)
		if err != nil {
			return nil, err
		}
		extra, allow, err := h.Key(declared, o.Getenv)
		if err != nil {
			return nil, core.NewError(api.ErrConfig, "Sandbox '%s' was not created: %v. Nothing was made.", slug, err)
		}
		co.Secrets = append(slices.Clone(co.Secrets), extra...)
		co.Allow = append(slices.Clone(co.Allow), allow...)
	}
	co.CheckImage = func(ctx context.Context, image string) error { return hr.checkImage(ctx, slug, h, image) }
	return hr.ops.Create(ctx, r, slug, co)
}

// checkSandbox checks that an existing sandbox can run the harness: it
// holds its build and the key's placeholder (a sandbox a run made for it;
// a build and a secret are fixed when a sandbox is made).
func (hr *Runner) checkSandbox(ctx context.Context, hd *api.Handle, o Options) error {
	h, slug := o.Harness, hd.Slug
	again := fmt.Sprintf("run it in a new sandbox instead: `litterbox run %s NEWNAME`", h.Name)
	if h.KeyEnv != "" {
		bs, _, err := netgate.ReadSecrets(hd.Repo.Git.CommonDir, slug)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(bs, func(b netgate.Bound) bool { return b.Env == h.KeyEnv }) {
			return core.NewError(api.ErrBadArgument, "Sandbox '%s' holds no placeholder for %s (it was not made by `litterbox run %s`; a sandbox's secrets are fixed when it is made): %s.", slug, h.KeyEnv, h.Name, again)
		}
	}
	if o.Build == "" {
		return nil
	}
	res, err := hr.Provider.Exec(ctx, provider.ExecRequest{Ref: hd.Ref, Cmd: []string{"test", "-x", harness.Mount + "/" + h.Exe}})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return core.NewError(api.ErrBadArgument, "Sandbox '%s' holds no build of %s (a build is mounted when `litterbox run %s` makes the sandbox): %s.", slug, h.Name, h.Name, again)
	}
	return nil
}
