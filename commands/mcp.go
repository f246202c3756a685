package commands

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/internal/buildinfo"
	lbmcp "github.com/litterbox-dev/litterbox/mcp"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// MCP serves the agent tools over MCP on stdio.
type MCP struct {
	MaxOutput        int           `name:"max-output" default:"262144" env:"LITTERBOX_MCP_MAX_OUTPUT" help:"Largest response in bytes (of JSON); longer output is cut, saying where and how to get the rest (at least 16384)."`
	ProgressInterval time.Duration `name:"progress-interval" default:"15s" env:"LITTERBOX_MCP_PROGRESS_INTERVAL" help:"How often a long call sends a progress notification, to clients that ask for them (0 for never)."`
	Pool             int           `name:"pool" default:"0" env:"LITTERBOX_POOL" help:"Keep this many sandboxes of the repository warm (0 to 16): made from HEAD at start and again after each sandbox-create takes one, in the background, so that a create takes a fraction of the time. Each holds a copy of the repository in memory. 0 keeps none (a pool filled by litterbox pool is still used)."`
}

// Run serves until stdin closes or a signal arrives, then returns, leaving
// every sandbox running. stdout carries only JSON-RPC; logs go to stderr.
func (m *MCP) Run(ctx context.Context, env *Env) error {
	// The sandboxes left idle are paused while the server runs.
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	r, err := env.RepoWatched(watch)
	if err != nil {
		return err
	}
	srv := lbmcp.New(env.Sandboxes, r, env.Sandboxes.Log())
	srv.MaxOutput, srv.ProgressInterval = max(m.MaxOutput, lbmcp.MinMaxOutput), m.ProgressInterval
	if m.Pool > 0 {
		f := &refiller{sandboxes: env.Sandboxes, r: r, size: m.Pool, gate: runner.NewGate()}
		srv.Created, srv.Creating = f.kick, f.gate.Hold
		f.kick()
		defer f.wait()
	}
	env.Sandboxes.Log().Info("serving MCP on stdio", "repo", r.Root(), "max-output", srv.MaxOutput, "pool", m.Pool)
	return srv.ServeStdio(ctx, buildinfo.Version(), os.Stdin, env.Stdout)
}

// refiller fills the warm pool in the background, one fill at a time: a
// kick during a fill makes one more fill after it. Its commands yield to
// the creates (gate).
type refiller struct {
	sandboxes *sandbox.Sandboxes
	r         *api.Repo
	size      int
	gate      *runner.Gate

	mu      sync.Mutex
	running bool
	again   bool
	done    sync.WaitGroup
}

func (f *refiller) kick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		f.again = true
		return
	}
	f.running = true
	f.done.Add(1)
	go f.loop()
}

func (f *refiller) loop() {
	defer f.done.Done()
	for {
		// Not the server's context: a fill cut short leaves a container
		// that only the next fill removes. Its commands wait while a
		// create runs (runner.Gate).
		if _, err := f.sandboxes.FillPool(runner.YieldTo(context.Background(), f.gate), f.r, f.size); err != nil {
			f.sandboxes.Log().Warn("could not fill the warm pool", "err", err)
		}
		f.mu.Lock()
		if !f.again {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.again = false
		f.mu.Unlock()
	}
}

// wait lets a fill under way finish before the server exits.
func (f *refiller) wait() { f.done.Wait() }

// Validate refuses a pool size out of range before the server starts.
func (m *MCP) Validate() error {
	if m.Pool < 0 || m.Pool > 16 {
		return fmt.Errorf("--pool %d: a warm pool holds 0 to 16 sandboxes", m.Pool)
	}
	return nil
}
