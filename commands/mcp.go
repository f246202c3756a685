package commands

import (
	"context"
	"os"

	lbmcp "github.com/litterbox-dev/litterbox/mcp"
)

// MCP serves the agent tools over MCP on stdio.
type MCP struct{}

// Run serves until stdin closes or a signal arrives, then returns, leaving
// every sandbox running. stdout carries only JSON-RPC; logs go to stderr.
func (m *MCP) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	srv := lbmcp.New(env.Service, r, env.Service.Log)
	env.Service.Log.Info("serving MCP on stdio", "repo", r.Root())
	return srv.ServeStdio(ctx, version(), os.Stdin, env.Stdout)
}
