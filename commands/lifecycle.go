package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Create makes a sandbox.
type Create struct {
	Name string `arg:"" help:"Sandbox name; slugified to [a-z0-9-], 1-63 characters."`
	JSON bool   `name:"json" help:"Print the result as JSON."`
	// FromBranch is the recovery path of a sandbox whose container is gone.
	FromBranch bool `name:"from-branch" help:"Recreate a sandbox whose container is gone from its branch litterbox/NAME: the container holds the branch tip, and the branch is kept."`
	// Image wins over the configuration's image and LITTERBOX_IMAGE.
	Image string `name:"image" placeholder:"IMAGE" help:"Image to make the sandbox from, instead of the image in .litterbox.toml (default busybox:latest, or LITTERBOX_IMAGE). It must be on the engine: litterbox pulls no image you name (see docs/images.md)."`
	// From starts the sandbox at another commit than HEAD.
	From string `name:"from" placeholder:"REF" help:"Start from this branch, tag or commit instead of HEAD; it is the sandbox's base for diff, log, apply and merge."`
	// NoPool skips the warm pool.
	NoPool bool `name:"no-pool" help:"Make a new container even when the warm pool (litterbox pool) holds one for this commit."`
	// Runtime wins over the configuration's runtime.
	Runtime string `name:"runtime" placeholder:"NAME" help:"The engine's runtime to run the sandbox under, instead of runtime in .litterbox.toml: gvisor (runsc on Docker: a kernel of its own between the sandbox and the host), or any runtime the engine offers (litterbox doctor lists them). One the engine lacks is refused before anything is made (see docs/kernels.md)."`
	// Idle wins over the configuration's idle.
	Idle string `name:"idle" placeholder:"DURATION" help:"Pause the sandbox (and its gateway) after this long without activity, instead of idle in .litterbox.toml (default 15m); 0 never does. The next command or MCP call on it resumes it (see Idle sandboxes in docs/cli.md)."`
}

// Validate refuses a bad name before anything runs.
func (c *Create) Validate() error {
	if _, err := api.Slugify(c.Name); err != nil {
		return err
	}
	if err := validImageRuntime(c.Image, c.Runtime, "busybox:latest"); err != nil {
		return err
	}
	_, err := idleOption(c.Idle)
	return err
}

// idleOption is --idle as CreateOptions.Idle: nil when not given.
func idleOption(s string) (*time.Duration, error) {
	if s == "" {
		return nil, nil
	}
	d, err := config.ParseIdle(s)
	if err != nil {
		return nil, fmt.Errorf("--idle %w", err)
	}
	return &d, nil
}

// validImageRuntime refuses an --image or --runtime that cannot be one
// (example is an image the message names).
func validImageRuntime(image, runtime, example string) error {
	if image != "" && !config.ValidImage(image) {
		return fmt.Errorf("--image %q is not an image reference such as %s", image, example)
	}
	if runtime != "" && !config.ValidRuntime(runtime) {
		return fmt.Errorf("--runtime %q is not a runtime name such as gvisor or runsc", runtime)
	}
	return nil
}

// Run creates the sandbox, showing progress on a terminal when it takes longer
// than a blink.
func (c *Create) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	p := newProgress(env)
	idle, _ := idleOption(c.Idle) // checked by Validate
	created, err := env.Sandboxes.Create(ctx, r, c.Name, api.CreateOptions{Progress: p.step, Note: p.notes(c.JSON), FromBranch: c.FromBranch, From: c.From, Image: c.Image, NoPool: c.NoPool, Runtime: c.Runtime, Idle: idle})
	p.done()
	if created != nil {
		if created.RemovedIncomplete {
			env.errf("note: removed the incomplete sandbox '%s' that an interrupted create had left (it held no work)\n", created.Name)
		}
		if created.Uncommitted {
			env.errf("note: the working tree has uncommitted changes; they were not copied (the sandbox holds HEAD %s)\n", created.Base[:12])
		}
		if c.JSON {
			if jerr := writeJSON(env, created); jerr != nil {
				return jerr
			}
		} else {
			verb := "Created"
			if c.FromBranch {
				verb = "Recreated"
			}
			env.outf("%s sandbox %s\n  branch:    %s\n  container: %s\n  image:     %s\n  runtime:   %s\n  status:    %s\n", verb, created.Name, created.Branch, created.Container, created.Image, runtimeName(created.Runtime), created.Status)
			if c.From != "" {
				env.outf("  base:      %s (%s)\n", shortID(created.Base), c.From)
			}
			printCreatedExtras(env, created)
		}
	}
	return err
}

// progress prints create's steps on one line of a terminal, but only once the
// create has taken longer than a blink.
type progress struct {
	env   *Env
	tty   bool
	start time.Time
	mu    sync.Mutex
	shown bool
}

func newProgress(env *Env) *progress {
	f, ok := env.Stderr.(*os.File)
	return &progress{env: env, tty: ok && isTerminal(f), start: time.Now()}
}

func (p *progress) step(s string) {
	if !p.tty || time.Since(p.start) < 150*time.Millisecond {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shown = true
	p.env.errf("\r\033[K%s…", s)
}

// note prints msg on a line of its own, where the steps are, on a
// terminal or not: a wait the user should know the cause of.
func (p *progress) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.env.errf("\r\033[K")
		p.shown = false
	}
	p.env.errf("%s\n", msg)
}

// notes is note for CreateOptions.Note, or nil when the command prints
// JSON: that output stays the JSON alone.
func (p *progress) notes(json bool) func(string) {
	if json {
		return nil
	}
	return p.note
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		p.env.errf("\r\033[K")
	}
}

// List shows sandboxes.
type List struct {
	AllRepos bool `name:"all-repos" help:"List the sandboxes of every repository, not just this one."`
	JSON     bool `name:"json" help:"Print JSON: {\"sandboxes\": [...]}."`
}

// Run prints the table or JSON.
func (l *List) Run(ctx context.Context, env *Env) error {
	var list []api.Sandbox
	var pool []api.PoolEntry
	var err error
	if l.AllRepos {
		list, err = env.Sandboxes.List(ctx, nil)
	} else {
		// Opening the repository pauses the sandboxes left idle, beside
		// the engine's list; when it paused any, the list is made again
		// so that it shows them paused.
		list, pool, err = env.Sandboxes.ListRepoPool(ctx, env.RepoBranches)
		if err == nil && len(env.paused) > 0 {
			list, pool, err = env.Sandboxes.ListRepoPool(ctx, env.RepoBranches)
		}
		if errors.Is(err, git.ErrNotRepository) {
			return fmt.Errorf("%w; `litterbox list --all-repos` lists the sandboxes of every repository", err)
		}
	}
	if err != nil {
		return err
	}
	if l.JSON {
		if list == nil {
			list = []api.Sandbox{}
		}
		if !l.AllRepos {
			if r, err := env.Repo(ctx); err == nil {
				env.Sandboxes.CollectRefused(ctx, r, list)
			}
		} else {
			env.Sandboxes.CollectRefused(ctx, nil, list)
		}
		out := map[string]any{"sandboxes": list}
		if len(pool) > 0 {
			out["pool"] = pool
		}
		if env.VM != nil {
			out["vm"] = env.VM.Status()
		}
		return writeJSON(env, out)
	}
	if env.VM != nil {
		defer func() { env.outf("VM: %s\n", vmLine(env.VM.Status())) }()
	}
	if len(pool) > 0 {
		defer printPoolLine(env, pool)
	}
	if len(list) == 0 {
		env.errf("No sandboxes. Create one with `litterbox create NAME`.\n")
		return nil
	}
	// The RUNTIME column shows once a sandbox runs under another runtime
	// than the engine's default.
	runtimes := slices.ContainsFunc(list, func(sb api.Sandbox) bool { return sb.Runtime != "" })
	tw := newTable(env.Stdout)
	head := "NAME\tSTATUS\tBRANCH\tCONTAINER\tAGE"
	if runtimes {
		head = "NAME\tSTATUS\tBRANCH\tCONTAINER\tRUNTIME\tAGE"
	}
	if l.AllRepos {
		head += "\tREPO"
	}
	fmt.Fprintln(tw, head)
	for _, sb := range list {
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", sb.Name, sb.Status, sb.Branch, orDash(sb.Container), age(sb.Created))
		if runtimes {
			row = fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", sb.Name, sb.Status, sb.Branch, orDash(sb.Container), orDash(sb.Runtime), age(sb.Created))
		}
		if l.AllRepos {
			row += "\t" + sb.Repo
		}
		fmt.Fprintln(tw, row)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, sb := range list {
		if sb.Note != "" {
			env.errf("%s: %s.\n", sb.Name, sb.Note)
		}
	}
	return nil
}

// runtimeName is how create names a sandbox's runtime.
func runtimeName(rt string) string {
	if rt == "" {
		return "engine default"
	}
	return rt
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func age(t time.Time) string { return activity.Ago(t, time.Now()) }

// toggleFlags are the shared target flags of pause and resume.
type toggleFlags struct {
	Name string `arg:"" optional:"" predictor:"sandbox" help:"Sandbox name."`
	// All was --all-envs, still accepted (a hidden alias) so that scripts
	// do not break.
	All      bool `name:"all" aliases:"all-envs" help:"Every sandbox of this repository."`
	AllRepos bool `name:"all-repos" help:"Every sandbox of every repository."`
}

func (t *toggleFlags) validate() error {
	n := 0
	for _, set := range []bool{t.Name != "", t.All, t.AllRepos} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of NAME, --all or --all-repos")
	}
	if t.Name != "" {
		_, err := api.Slugify(t.Name)
		return err
	}
	return nil
}

func (t *toggleFlags) run(ctx context.Context, env *Env, pause, force bool) error {
	verb, already := "Resumed", "already active"
	one, all := env.Sandboxes.Resume, env.Sandboxes.ResumeAll
	if pause {
		verb, already = "Paused", "already paused"
		one = func(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
			return env.Sandboxes.Pause(ctx, r, name, force)
		}
		all = func(ctx context.Context, r *api.Repo) ([]api.Outcome, error) {
			return env.Sandboxes.PauseAll(ctx, r, force)
		}
	}
	var r *api.Repo
	if !t.AllRepos {
		var err error
		if r, err = env.Repo(ctx); err != nil {
			return err
		}
	}
	var outs []api.Outcome
	var err error
	if t.Name != "" {
		var o api.Outcome
		o, err = one(ctx, r, t.Name)
		if err == nil {
			outs = append(outs, o)
		}
	} else {
		outs, err = all(ctx, r)
	}
	for _, o := range outs {
		if o.Name == "" {
			continue
		}
		where, lb := "", "litterbox"
		if t.AllRepos {
			where = " (" + o.Repo + ")"
			lb += " --repo " + runner.Quote(o.Repo)
		}
		switch {
		case o.Skipped == "stopped":
			env.errf("Skipped %s%s: it is stopped (its container exited). `%s resume %s` starts it again.\n", o.Name, where, lb, o.Name)
		case o.Skipped != "":
			env.errf("Skipped %s%s: its container is gone. See `litterbox list`.\n", o.Name, where)
		case o.Already:
			env.outf("Sandbox %s is %s%s\n", o.Name, already, where)
		default:
			env.outf("%s %s%s\n", verb, o.Name, where)
			if o.Gateway != "" {
				env.outf("  Its egress gateway %s was gone: resume made it again, with the policy `%s net %s` shows.\n", o.Gateway, lb, o.Name)
			}
			switch {
			case o.Ended && pause:
				env.outf("  This engine cannot freeze %s: its pod was deleted, and with it its processes, /tmp and the files of /src the repository ignores. Its branch keeps the rest of /src; `%s resume %s` makes a new pod from it (start its services again; the ignored files create copied in from your working tree are copied in again).\n", o.Name, lb, o.Name)
			case o.Ended:
				env.outf("  Its pod was made again too, to reach the new gateway: its processes and /tmp are gone, and /src was filled from its branch, where its work was recorded first (start its services again).\n")
			}
			if len(o.Lost) > 0 {
				env.errf("Lost with the pause of %s%s (--force; its branch does not hold them):\n", o.Name, where)
				for _, l := range o.Lost {
					env.errf("  %s: %s\n", termtext.Quote(l.Path), termtext.Escape(l.Reason))
				}
			}
		}
	}
	if err == nil && len(outs) == 0 && t.Name == "" {
		env.errf("No sandboxes to %s.\n", strings.ToLower(verb[:len(verb)-1]))
	}
	return err
}

// Pause freezes sandboxes, keeping their state.
type Pause struct {
	toggleFlags
	Force bool `short:"f" help:"On an engine where a pause ends the sandbox (Kubernetes), pause even when files its branch does not hold (over the snapshot size cap, unreadable) would be lost; they are named."`
}

// Validate checks that exactly one target was given.
func (p *Pause) Validate() error { return p.validate() }

// Run pauses.
func (p *Pause) Run(ctx context.Context, env *Env) error { return p.run(ctx, env, true, p.Force) }

// Resume thaws paused sandboxes.
type Resume struct {
	toggleFlags
}

// Validate checks that exactly one target was given.
func (r *Resume) Validate() error { return r.validate() }

// Run resumes.
func (r *Resume) Run(ctx context.Context, env *Env) error { return r.run(ctx, env, false, false) }

// Delete removes sandboxes, or the warm pool.
type Delete struct {
	Names []string `arg:"" optional:"" name:"name" predictor:"sandbox" help:"Sandbox names: each is deleted or says why not, and the others go all the same."`
	Force bool     `short:"f" help:"Delete even when the branch has commits that are not in HEAD."`
	Pool  bool     `name:"pool" help:"Remove this repository's warm pool instead: the pooled sandboxes no create has taken (see litterbox pool)."`
	Wait  bool     `name:"wait" help:"Return once everything of the sandbox is gone. Without it, delete returns once its container and branch are: its egress gateway, their volume and its state go just after, in a process of its own."`
}

// Validate refuses a bad name, or a name with --pool, before anything runs.
func (d *Delete) Validate() error {
	switch {
	case d.Pool && len(d.Names) > 0:
		return fmt.Errorf("delete --pool removes the warm pool and takes no sandbox name; delete %s on its own", strings.Join(d.Names, " "))
	case d.Pool:
		return nil
	case len(d.Names) == 0:
		_, err := api.Slugify("")
		return fmt.Errorf("%w Give the name of a sandbox (`litterbox list` shows them), or --pool to delete the warm pool", err)
	}
	for _, name := range d.Names {
		if _, err := api.Slugify(name); err != nil {
			return err
		}
	}
	return nil
}

// Run deletes.
func (d *Delete) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	if d.Pool {
		removed, err := env.Sandboxes.DeletePool(ctx, r)
		if len(removed) > 0 {
			env.outf("Deleted the warm pool (%d container(s): %s)\n", len(removed), strings.Join(removed, ", "))
		} else if err == nil {
			env.errf("The warm pool is empty: nothing to delete.\n")
		}
		if err == nil {
			stopIdleVM(ctx, env, r)
		}
		return err
	}
	if slug := os.Getenv(finishDeleteEnv); slug != "" {
		return env.Sandboxes.FinishDelete(ctx, r, slug, os.NewFile(3, "create.lock"))
	}
	var detach api.Detach
	if env.VM == nil && !d.Wait {
		// The VM stops once no sandbox is left in it (stopIdleVM): the
		// gateway goes before this returns.
		detach = detachDelete
	}
	// A sandbox named twice, in any spelling of its name, is deleted once.
	var names, slugs []string
	for _, name := range d.Names {
		if slug, _ := api.Slugify(name); !slices.Contains(slugs, slug) {
			names, slugs = append(names, name), append(slugs, slug)
		}
	}
	var failed notDeleted
	for _, name := range names {
		rep, err := env.Sandboxes.DeleteDetached(ctx, r, name, d.Force, detach)
		if rep != nil && len(rep.Removed) > 0 {
			later := ""
			if len(rep.Removing) > 0 {
				later = "; going in the background: " + strings.Join(rep.Removing, ", ")
			}
			env.outf("Deleted %s (%s%s)\n", rep.Name, strings.Join(rep.Removed, ", "), later)
		}
		if err != nil {
			if len(names) == 1 {
				return err
			}
			// Said as it fails, beside the others' lines; the error
			// returned names them all.
			env.errf("Error: %s: %s\n", name, termtext.EscapeText(err.Error()))
			failed.add(name, err)
		}
	}
	if len(failed.names) < len(names) {
		stopIdleVM(ctx, env, r)
	}
	if failed.first != nil {
		failed.of = len(names)
		return &failed
	}
	return nil
}

// notDeleted is the error of a delete of several sandboxes some of which
// are left; it unwraps to the first one's error, which sets the exit code.
type notDeleted struct {
	names []string
	of    int
	first error
}

func (e *notDeleted) add(name string, err error) {
	e.names = append(e.names, name)
	if e.first == nil {
		e.first = err
	}
}

func (e *notDeleted) Error() string {
	return fmt.Sprintf("%s not deleted (%d of the %d sandboxes named; each said why above)", strings.Join(e.names, ", "), len(e.names), e.of)
}

func (e *notDeleted) Unwrap() error { return e.first }

// finishDeleteEnv names, in the environment of the process detachDelete
// starts, the sandbox whose delete it finishes; the sandbox's create lock
// is its file descriptor 3.
const finishDeleteEnv = "LITTERBOX_FINISH_DELETE"

// detachDelete starts this program again with the same arguments and
// finishDeleteEnv set, in a session of its own with no terminal and no
// standard streams (a caller reading this one's output does not wait for
// it), to finish a delete: the sandbox's gateway, their volume, networks
// and state go there, after this process returned.
func detachDelete(slug string, lock *os.File) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), finishDeleteEnv+"="+slug)
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}

// Prune removes what sandboxes of repositories that no longer exist left.
type Prune struct {
	JSON bool `name:"json" help:"Print JSON: {\"removed\": [...]}."`
}

// Run prunes.
func (p *Prune) Run(ctx context.Context, env *Env) error {
	out, err := env.Sandboxes.Prune(ctx)
	if p.JSON {
		if jerr := writeJSON(env, map[string]any{"removed": out}); jerr != nil {
			return jerr
		}
		return err
	}
	for _, o := range out {
		what := "sandbox " + o.Sandbox
		if o.Sandbox == "" {
			what = "a shared cache"
		}
		env.outf("Removed %s %s (%s of %s, which no longer exists)\n", o.Kind, o.Name, what, o.Repo)
	}
	if err == nil && len(out) == 0 {
		env.errf("Nothing to prune: every sandbox's repository exists.\n")
	}
	return err
}

func writeJSON(env *Env, v any) error {
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
