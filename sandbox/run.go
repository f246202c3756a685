package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/harness"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
)

// `litterbox run` (docs/run.md): an agent harness run inside a sandbox,
// its released build mounted read-only from the host's cache, the model's
// API key held by the sandbox's egress gateway, and what it changes
// committed to the sandbox's branch while it runs and when it exits.

// HarnessOptions describe a harness run.
type HarnessOptions struct {
	// Harness is what runs; Build the host directory of its build (""
	// for --cmd: a program of the image).
	Harness *harness.Harness
	Build   string
	// Args pass through to it.
	Args []string
	// Create makes the sandbox when name is free (its image, --from...).
	Create api.CreateOptions
	// Getenv reads the user's environment (the key, the base URL).
	Getenv func(string) string
	// Every is how often what changed is committed while it runs.
	Every time.Duration
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

// HarnessRun is what a run did.
type HarnessRun struct {
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

// Home is the harness's home in the sandbox: on its /tmp, nothing of the
// user's.
const harnessHome = "/tmp/litterbox-home"

// RunHarness runs o.Harness in sandbox name of r: the one of that name, or
// one it makes. Everything that can be refused is refused before anything
// is made: an unknown harness, a build not cached (the caller), a key
// neither declared nor set, an image that cannot run the build.
func (s *Sandboxes) RunHarness(ctx context.Context, r *api.Repo, name string, o HarnessOptions) (*HarnessRun, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	h := o.Harness
	ctx = activity.WithActor(ctx, h.Name)
	out := &HarnessRun{Name: slug}
	if hd, err := s.inv.Handle(ctx, r, slug); err == nil {
		if err := s.checkHarnessSandbox(ctx, hd, o); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, api.ErrNotFound) {
		return nil, err
	} else if out.Created, err = s.createForHarness(ctx, r, slug, o); err != nil {
		return nil, err
	} else if o.Created != nil {
		o.Created(out.Created)
	}
	hd, err := s.inv.Handle(ctx, r, slug)
	if err != nil {
		return out, err
	}
	if out.Created == nil {
		// A run whose litterbox was killed runs on in the sandbox.
		if runs := s.runsGoing(ctx, hd); len(runs) > 0 {
			pids := make([]string, 0, len(runs))
			for _, r := range runs {
				pids = append(pids, r.pid)
			}
			o.Notef("note: an earlier run of %s is still running in sandbox %s (pid %s: its litterbox was stopped before it ended); it changes /src beside this one. `litterbox exec %s -- kill %s` ends it.\n",
				runs[0].name, slug, strings.Join(pids, ", "), slug, strings.Join(pids, " "))
		}
	}
	// What the harness changes is committed every o.Every while it runs,
	// once more when it ends, and whatever ended it.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	skipped := map[string]bool{}
	commit := func(ctx context.Context, message string) error {
		mu.Lock()
		defer mu.Unlock()
		res, err := s.Snapshot(ctx, hd, message)
		if err != nil {
			if ctx.Err() == nil {
				o.Notef("note: could not commit what %s changed: %v\n", h.Name, err)
			}
			return err
		}
		if res.Committed {
			out.Commits++
		}
		for _, sk := range res.Skipped {
			if !skipped[sk.Path] {
				skipped[sk.Path] = true
				out.Skipped = append(out.Skipped, sk)
			}
		}
		return nil
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The first snapshot, at once, installs the scanner and starts
		// the change journal while the harness starts: the later ones,
		// the last above all, then cost what changed. One under way when
		// the run is interrupted is cut short (an install cut short leaves
		// nothing: the last snapshot installs again).
		_ = commit(ctx, h.Name+": while it runs")
		t := time.NewTicker(o.Every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = commit(ctx, h.Name+": while it runs")
			}
		}
	}()
	cmd := append([]string{"sh", "-c", h.Wrapper(), "litterbox-run"}, h.Argv(o.Args, o.Getenv)...)
	exit, runErr := s.ops.ExecIn(ctx, r, slug, hd.Ref, api.ExecOptions{
		Cmd: cmd, TTY: o.TTY, Interactive: true, Env: h.RunEnv(harnessHome, o.Getenv),
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
	lastErr := commit(final, h.Name+": "+how)
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
		if _, err := s.Delete(final, r, slug, false); err == nil {
			out.Removed = true
		} else if !errors.Is(err, api.ErrUnmerged) {
			return out, err
		}
	}
	return out, nil
}

// runGoing is a process of a run, found by harness.RunMark.
type runGoing struct{ pid, name string }

// runsGoing are the processes of sandbox hd that a run started (they
// carry harness.RunMark), read as the sandbox's user: what they say is the
// agent's, so only a pid of digits and a mark of Mark's letters are kept.
// A failure to look finds none.
func (s *Sandboxes) runsGoing(ctx context.Context, hd *api.Handle) []runGoing {
	script := `for d in /proc/[0-9]*; do n=$(grep -ao '` + harness.RunMark + `=[A-Za-z0-9._-]*' "$d/environ" 2>/dev/null | head -n 1) && [ -n "$n" ] && echo "${d#/proc/} ${n#*=}"; done; true`
	res, err := s.c.ExecCapped(ctx, provider.ExecRequest{Ref: hd.Ref, Cmd: []string{"sh", "-c", script}}, 64<<10)
	if err != nil {
		return nil
	}
	var runs []runGoing
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		pid, name, ok := strings.Cut(line, " ")
		if ok && len(runs) < 20 && validRunField(pid, "0123456789") && validRunField(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") {
			runs = append(runs, runGoing{pid, name})
		}
	}
	return runs
}

// validRunField: 1 to 64 bytes, each of allowed.
func validRunField(s, allowed string) bool {
	return len(s) > 0 && len(s) <= 64 && strings.Trim(s, allowed) == ""
}

// createForHarness makes the sandbox a harness runs in: its build mounted,
// the model's key bound to the model API's host and that host allowed, an
// image that can run it.
func (s *Sandboxes) createForHarness(ctx context.Context, r *api.Repo, slug string, o HarnessOptions) (*api.Created, error) {
	h := o.Harness
	co := o.Create
	if o.Build != "" {
		co.Binds = append(slices.Clone(co.Binds), provider.Bind{Source: o.Build, Path: harness.Mount})
	}
	if h.KeyEnv != "" {
		declared, err := s.gate.Declared(ctx, r)
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
	co.CheckImage = func(ctx context.Context, image string) error { return s.checkHarnessImage(ctx, slug, h, image) }
	return s.Create(ctx, r, slug, co)
}

// checkHarnessSandbox checks that an existing sandbox can run the harness:
// it holds its build and the key's placeholder (a sandbox a run made for
// it; a build and a secret are fixed when a sandbox is made).
func (s *Sandboxes) checkHarnessSandbox(ctx context.Context, hd *api.Handle, o HarnessOptions) error {
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
	res, err := s.c.Provider.Exec(ctx, provider.ExecRequest{Ref: hd.Ref, Cmd: []string{"test", "-x", harness.Mount + "/" + h.Exe}})
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return core.NewError(api.ErrBadArgument, "Sandbox '%s' holds no build of %s (a build is mounted when `litterbox run %s` makes the sandbox): %s.", slug, h.Name, h.Name, again)
	}
	return nil
}

// harnessImageCheck is the shell test of what a build needs.
var harnessImageCheck = map[harness.Needs]string{
	harness.NeedsGlibc: `for f in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1 /lib/x86_64-linux-gnu/libc.so.6 /lib/aarch64-linux-gnu/libc.so.6 /usr/lib64/libc.so.6; do [ -e "$f" ] && exit 0; done; exit 1`,
	harness.NeedsNode:  `command -v node >/dev/null`,
}

// harnessImages name an image that can run what a build needs.
var harnessImages = map[harness.Needs]string{
	harness.NeedsGlibc: "debian:bookworm-slim (or litterbox-test/debian-python:bookworm, which scripts/ensure-debian-image.sh builds offline)",
	harness.NeedsNode:  "node:22-bookworm-slim",
}

// checkHarnessImage runs the check of what h needs in a throwaway hardened
// sandbox of image, before the sandbox is made.
func (s *Sandboxes) checkHarnessImage(ctx context.Context, slug string, h *harness.Harness, image string) error {
	script, ok := harnessImageCheck[h.Needs]
	if !ok {
		return nil
	}
	// An image's content does not change under its id: a verdict that it
	// can is kept (the check costs a container, about 0.7 s here).
	var kept string
	if img, err := s.c.Provider.Image(ctx, image); err == nil && img.ID != "" {
		if dir, err := s.c.CacheSub("images"); err == nil {
			sum := sha256.Sum256([]byte(img.ID + "\x00" + string(h.Needs)))
			kept = filepath.Join(dir, hex.EncodeToString(sum[:16]))
			if _, err := os.Stat(kept); err == nil {
				return nil
			}
		}
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sb, err := s.c.Provider.Create(ctx, spec.Probe(s.c.ExtraLabels, "run", "litterbox-run-check-"+hex.EncodeToString(b), image, provider.NetworkNone, 16<<20, 128<<20, 60*time.Second))
	if err != nil {
		return fmt.Errorf("check that %s can run %s: %w", image, h.Name, err)
	}
	defer func() {
		if err := s.c.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
			s.c.Log.Warn("could not remove the image check's sandbox", "name", sb.Name, "err", err)
		}
	}()
	res, err := s.c.Provider.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", script}})
	if err != nil {
		return fmt.Errorf("check that %s can run %s: %w", image, h.Name, err)
	}
	if res.ExitCode == 0 && kept != "" {
		_ = os.WriteFile(kept, []byte(image+" has "+string(h.Needs)+"\n"), 0o600)
	}
	if res.ExitCode != 0 {
		return core.NewError(api.ErrImage, "Sandbox '%s' was not created: %s needs %s, which the image %s lacks. Use an image that has it, such as %s: `litterbox run --image IMAGE %s`, or image = \"IMAGE\" in .litterbox.toml (docs/run.md). Nothing was made.", slug, h.Name, h.Needs, image, harnessImages[h.Needs], h.Name)
	}
	return nil
}
