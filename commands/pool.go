package commands

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Pool fills or shows the repository's warm pool.
type Pool struct {
	Size int  `arg:"" optional:"" default:"-1" help:"Fill the pool to this many sandboxes (0 to 16), made from HEAD with its configuration, and drop stale ones; without it, only show the pool."`
	JSON bool `name:"json" help:"Print the pool as JSON: [{container, state, commit, created}]."`
}

// Run fills the pool when a size is given, then shows it.
func (p *Pool) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	var entries []api.PoolEntry
	if p.Size >= 0 {
		entries, err = env.Sandboxes.FillPool(ctx, r, p.Size)
	} else {
		entries, err = env.Sandboxes.Pool(ctx, r)
	}
	if err != nil {
		return err
	}
	if p.JSON {
		if entries == nil {
			entries = []api.PoolEntry{}
		}
		return writeJSON(env, entries)
	}
	ready := 0
	for _, e := range entries {
		if e.State == "ready" {
			ready++
		}
	}
	env.outf("Warm pool of %s: %d ready, %d in all\n", r.Root(), ready, len(entries))
	if len(entries) == 0 {
		env.errf("A create takes a pooled sandbox when one is ready for HEAD; `litterbox pool 2` fills the pool, `litterbox delete --pool` empties it.\n")
		return nil
	}
	w := newTable(env.Stdout)
	fmt.Fprintln(w, "CONTAINER\tSTATE\tCOMMIT\tCREATED")
	for _, e := range entries {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Container, e.State, shortID(e.Commit), e.Created.Local().Format("2006-01-02 15:04:05"))
	}
	return w.Flush()
}

// printPoolLine is list's last line when the repository has a warm pool.
func printPoolLine(env *Env, pool []api.PoolEntry) {
	ready := 0
	for _, e := range pool {
		if e.State == "ready" {
			ready++
		}
	}
	env.outf("Warm pool: %d ready, %d in all (`litterbox pool` lists them, `litterbox delete --pool` removes them)\n", ready, len(pool))
}
