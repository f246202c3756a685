package commands

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"time"

	"github.com/litterbox-dev/litterbox/harness"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// Run runs an agent harness inside a sandbox (docs/run.md).
type Run struct {
	Harness string   `arg:"" optional:"" help:"claude, codex, gemini or opencode (or nothing, with --cmd)."`
	Name    string   `arg:"" optional:"" predictor:"sandbox" help:"Sandbox to run it in: one that a run of this harness made, or a new one of this name (default: the harness's name, or its name with -2, -3... when taken)."`
	Args    []string `arg:"" optional:"" passthrough:"" help:"Arguments for the harness, after -- (litterbox run claude -- -p \"fix the tests\")."`

	Cmd          string        `name:"cmd" placeholder:"PROG" help:"Run PROG, a program of the image, instead of a known harness: no build is mounted and no API key is bound (declare what it needs in [secrets], docs/secrets.md)."`
	Image        string        `name:"image" placeholder:"IMAGE" help:"Image to make the sandbox from (as create --image). Claude Code and opencode need glibc, Gemini CLI node; busybox has neither."`
	From         string        `name:"from" placeholder:"REF" help:"Start the new sandbox from this branch, tag or commit instead of HEAD."`
	Runtime      string        `name:"runtime" placeholder:"NAME" help:"The engine's runtime for the new sandbox (as create --runtime: gvisor...)."`
	Rm           bool          `name:"rm" help:"Delete the sandbox after the harness exits, when its branch holds nothing that is not merged (nothing changed, or merged)."`
	HarnessCache string        `name:"harness-cache" env:"LITTERBOX_HARNESS_CACHE" placeholder:"DIR" help:"Where the harnesses' released builds are, one NAME-VERSION directory each (scripts/ensure-harnesses.sh fills it). Default: $LITTERBOX_CACHE/harnesses, else /var/cache/litterbox/harnesses."`
	WithConfig   bool          `name:"with-config" help:"Copy the harness's settings file from your home into the sandbox's (~/.claude/settings.json, ~/.codex/config.toml, ~/.gemini/settings.json, ~/.config/opencode/opencode.json), never its credentials: a file that holds one is refused."`
	QuietPeriod  time.Duration `name:"quiet-period" default:"500ms" help:"What the harness changed is committed to litterbox/NAME once /src has gone this long without a change (one commit per quiet period, not per write; one more when it exits)."`
	CommitEvery  time.Duration `name:"commit-every" default:"2s" help:"The longest a change waits for its commit while /src keeps changing without a quiet period."`
}

// Validate sorts the arguments out: with --cmd the first one is the name,
// a leading -- is kong's, and the harness must be one litterbox knows.
func (c *Run) Validate() error {
	if len(c.Args) > 0 && c.Args[0] == "--" {
		c.Args = c.Args[1:]
	}
	// Kong fills the optional positionals from what follows -- when
	// nothing came before it: those are the harness's arguments.
	if c.Name != "" && afterDashes(os.Args, c.Name) {
		c.Args, c.Name = append([]string{c.Name}, c.Args...), ""
	}
	if c.Cmd != "" && c.Harness != "" && afterDashes(os.Args, c.Harness) {
		c.Args, c.Harness = append([]string{c.Harness}, c.Args...), ""
	}
	if c.Cmd != "" && c.WithConfig {
		return fmt.Errorf("--with-config copies a known harness's settings file; --cmd %s has none", c.Cmd)
	}
	if c.Cmd != "" {
		if c.Name != "" {
			c.Args = append([]string{c.Name}, c.Args...)
		}
		c.Name, c.Harness = c.Harness, ""
	} else {
		if c.Harness == "" {
			return fmt.Errorf("name a harness: litterbox run claude|codex|gemini|opencode [NAME] [-- ARGS...], or litterbox run --cmd PROG [NAME]")
		}
		if _, err := harness.Lookup(c.Harness); err != nil {
			return err
		}
	}
	if c.Name != "" {
		if _, err := api.Slugify(c.Name); err != nil {
			return err
		}
	}
	if err := validImageRuntime(c.Image, c.Runtime, "debian:bookworm-slim"); err != nil {
		return err
	}
	if c.QuietPeriod < wire.QuietPoll {
		return fmt.Errorf("--quiet-period %s is too short: at least %s", c.QuietPeriod, wire.QuietPoll)
	}
	if c.CommitEvery < c.QuietPeriod {
		return fmt.Errorf("--commit-every %s is shorter than --quiet-period %s: it bounds the wait for a quiet period", c.CommitEvery, c.QuietPeriod)
	}
	return nil
}

// Run makes (or takes) the sandbox and runs the harness in it, attached to
// the terminal when there is one; the harness's exit code is litterbox's.
func (c *Run) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	h := &harness.Harness{Name: path.Base(c.Cmd), Prog: c.Cmd}
	build := ""
	if c.Cmd == "" {
		if h, err = harness.Lookup(c.Harness); err != nil {
			return err
		}
		cache := c.HarnessCache
		if cache == "" {
			cache = harness.DefaultCache(os.Getenv)
		}
		if build, err = h.Build(cache); err != nil {
			return &api.Error{Kind: api.ErrBadArgument, Msg: err.Error() + ". Nothing was made."}
		}
	}
	var settings []byte
	if c.WithConfig {
		home, err := os.UserHomeDir()
		if err == nil {
			settings, err = h.UserSettings(home)
		}
		if err != nil {
			return &api.Error{Kind: api.ErrBadArgument, Msg: err.Error() + ". Nothing was made."}
		}
	}
	name := c.Name
	if name == "" {
		if name, err = freeName(ctx, env, r, h.Name); err != nil {
			return err
		}
	}
	tty := isTerminal(os.Stdin) && isTerminal(os.Stdout)
	p := newProgress(env)
	res, err := env.Sandboxes.RunHarness(ctx, r, name, sandbox.HarnessOptions{
		Harness: h, Build: build, Args: c.Args, Settings: settings, Getenv: os.Getenv, Quiet: c.QuietPeriod, Every: c.CommitEvery, Remove: c.Rm,
		Create: api.CreateOptions{Progress: p.step, Note: p.note, Image: c.Image, From: c.From, Runtime: c.Runtime},
		Notef:  env.errf, Created: func(cr *api.Created) {
			p.done()
			env.errf("Created sandbox %s (image %s); %s runs in it, in /src.\n", cr.Name, cr.Image, h.Name)
		},
		TTY: tty, Stdin: os.Stdin, Stdout: env.Stdout, Stderr: env.Stderr,
	})
	p.done()
	if res != nil {
		saySkipped(env, res.Skipped)
		if res.Kept != "" {
			env.errf("--rm: sandbox %s kept: %s (`litterbox cp %s:PATH .` copies a file out).\n", res.Name, res.Kept, res.Name)
		}
		switch {
		case res.Removed:
			env.errf("%s exited %d; nothing to keep: sandbox %s deleted.\n", h.Name, res.Exit, res.Name)
		case res.Created != nil || res.Commits > 0 || err == nil:
			how := fmt.Sprintf("exited %d", res.Exit)
			if res.Interrupted {
				how = "was interrupted"
			}
			env.errf("%s %s; its work is on litterbox/%s (%d new commit(s)): `litterbox diff %s`, `litterbox merge %s`.\n", h.Name, how, res.Name, res.Commits, res.Name, res.Name)
		}
	}
	if err != nil {
		return err
	}
	if res.Exit != 0 {
		return &ExitCodeError{Code: res.Exit}
	}
	return nil
}

// afterDashes says whether arg is the first argument after -- in argv,
// and not before it.
func afterDashes(argv []string, arg string) bool {
	i := slices.Index(argv, "--")
	return i >= 0 && i+1 < len(argv) && argv[i+1] == arg && !slices.Contains(argv[:i], arg)
}

// freeName is base, or base-2, base-3... the first that no sandbox of r
// holds.
func freeName(ctx context.Context, env *Env, r *api.Repo, base string) (string, error) {
	list, err := env.Sandboxes.List(ctx, r)
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, sb := range list {
		taken[sb.Name] = true
	}
	slug, err := api.Slugify(base)
	if err != nil {
		return "", err
	}
	name := slug
	for i := 2; taken[name]; i++ {
		name = slug + "-" + strconv.Itoa(i)
	}
	return name, nil
}
