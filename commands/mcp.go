package commands

import (
	"context"
	"os"
	"time"

	"github.com/litterbox-dev/litterbox/internal/buildinfo"
	lbmcp "github.com/litterbox-dev/litterbox/mcp"
)

// MCP serves the agent tools over MCP on stdio.
type MCP struct {
	MaxOutput        int           `name:"max-output" default:"262144" env:"LITTERBOX_MCP_MAX_OUTPUT" help:"Largest response in bytes (of JSON); longer output is cut, saying where and how to get the rest (at least 16384)."`
	ProgressInterval time.Duration `name:"progress-interval" default:"15s" env:"LITTERBOX_MCP_PROGRESS_INTERVAL" help:"How often a long call sends a progress notification, to clients that ask for them (0 for never)."`
}

// Run serves until stdin closes or a signal arrives, then returns, leaving
// every sandbox running. stdout carries only JSON-RPC; logs go to stderr.
func (m *MCP) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	srv := lbmcp.New(env.Service, r, env.Service.Log)
	srv.MaxOutput, srv.ProgressInterval = max(m.MaxOutput, lbmcp.MinMaxOutput), m.ProgressInterval
	env.Service.Log.Info("serving MCP on stdio", "repo", r.Root(), "max-output", srv.MaxOutput)
	return srv.ServeStdio(ctx, buildinfo.Version(), os.Stdin, env.Stdout)
}
