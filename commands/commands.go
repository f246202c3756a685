// Package commands holds the CLI subcommands. Each is a kong command struct
// whose Run calls the sandbox service; none builds docker or git argv itself.
package commands

import (
	"context"
	"fmt"
	"github.com/mattn/go-isatty"
	"io"
	"os"
	"sync"

	"github.com/litterbox-dev/litterbox/internal/buildinfo"
	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Env is what every command runs with: the sandboxes, the repository directory
// and the output streams. Main binds it lazily, so --help never runs docker
// or git.
type Env struct {
	Sandboxes *sandbox.Sandboxes
	// VM is the repository's VM with --engine vm, else nil.
	VM      *vm.Machine
	RepoDir string
	Stdout  io.Writer
	Stderr  io.Writer
	// Using are the slugs of the sandboxes the command names: Repo's sweep
	// leaves them to the command, which wakes them, rather than pause one
	// for the command to resume it at once.
	Using []string

	swept sync.Once
	// paused are the sandboxes the sweep paused.
	paused []string

	mu   sync.Mutex
	repo *api.Repo // once opened
}

// Repo opens the repository the command works on (git, once per command).
// The first time, it pauses the repository's sandboxes that have been idle
// for their idle time (sandbox.SweepIdle): every command looks, so no
// process of its own has to.
func (e *Env) Repo(ctx context.Context) (*api.Repo, error) {
	r, _, err := e.repoSwept(ctx, false)
	return r, err
}

// RepoBranches is Repo; the first time, it gives the repository's sandbox
// branches too, read by the git call that opens it
// (Sandboxes.OpenRepoBranches), for list; nil after.
func (e *Env) RepoBranches(ctx context.Context) (*api.Repo, map[string]string, error) {
	return e.repoSwept(ctx, true)
}

func (e *Env) repoSwept(ctx context.Context, branches bool) (*api.Repo, map[string]string, error) {
	r, refs, err := e.open(ctx, branches)
	if err == nil {
		e.swept.Do(func() { e.paused, _ = e.Sandboxes.SweepIdle(ctx, r, e.Using...) })
	}
	return r, refs, err
}

// open opens the repository, once; with branches, the first time, it
// reads the sandbox branches in the same git call.
func (e *Env) open(ctx context.Context, branches bool) (*api.Repo, map[string]string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.repo != nil {
		return e.repo, nil, nil
	}
	var (
		r    *api.Repo
		refs map[string]string
		err  error
	)
	if branches {
		r, refs, err = e.Sandboxes.OpenRepoBranches(ctx, e.RepoDir)
	} else {
		r, err = e.Sandboxes.OpenRepo(ctx, e.RepoDir)
	}
	if err == nil {
		e.repo = r
	}
	return r, refs, err
}

// RepoWatched opens the repository as Repo does, for a command that runs
// until ctx ends (mcp, ui): its idle sandboxes are paused in the
// background all along (sandbox.WatchIdle), whose first sweep is at once,
// so the command neither waits for Repo's sweep nor makes it twice.
func (e *Env) RepoWatched(ctx context.Context) (*api.Repo, error) {
	r, _, err := e.open(ctx, false)
	if err == nil {
		e.swept.Do(func() {})
		go e.Sandboxes.WatchIdle(ctx, r)
	}
	return r, err
}

// Handle resolves a running sandbox of the repository.
func (e *Env) Handle(ctx context.Context, name string) (*api.Handle, error) {
	r, err := e.Repo(ctx)
	if err != nil {
		return nil, err
	}
	return e.Sandboxes.Handle(ctx, r, name)
}

func (e *Env) outf(format string, args ...any) {
	fmt.Fprintf(e.Stdout, format, args...)
}

func (e *Env) errf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, format, args...)
}

// sandboxName is the argument of the commands that work on an existing
// sandbox.
type sandboxName struct {
	Name string `arg:"" predictor:"sandbox" help:"Sandbox name."`
}

// Validate refuses a bad name before anything runs.
func (n *sandboxName) Validate() error {
	_, err := api.Slugify(n.Name)
	return err
}

// Version prints the build's version.
type Version struct{}

// Run prints the version and commit of this build, as --version does.
func (v *Version) Run(env *Env) error {
	env.outf("%s\n", buildinfo.String())
	return nil
}

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
