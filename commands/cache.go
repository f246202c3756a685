package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Cache lists, empties and fills the repository's shared package caches
// ([cache], docs/config.md#shared-caches).
type Cache struct {
	Ls    CacheLs    `cmd:"" help:"List this repository's shared caches: name, volume, where sandboxes mount them."`
	Clear CacheClear `cmd:"" help:"Empty this repository's shared caches (the named ones, or all): what an agent put there is gone for later sandboxes."`
	Fill  CacheFill  `cmd:"" help:"Fill the shared caches by the setup command, in a sandbox made for it and deleted after: the way to fill them with [cache] mode = \"ro\"."`
}

// CacheLs lists the caches.
type CacheLs struct {
	JSON bool `name:"json" help:"Print JSON: [{name, volume, path, readOnly}]."`
}

// Run prints the caches.
func (c *CacheLs) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	caches, err := env.Sandboxes.Caches(ctx, r)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env, caches)
	}
	if len(caches) == 0 {
		env.errf("No shared caches of %s yet: [cache] use in .litterbox.toml names them, and the first sandbox that mounts one makes it (docs/config.md#shared-caches).\n", r.Root())
		return nil
	}
	w := newTable(env.Stdout)
	fmt.Fprintln(w, "NAME\tVOLUME\tMOUNTED AT")
	for _, in := range caches {
		at := in.Path
		switch {
		case at == "":
			at = "(no longer configured)"
		case in.ReadOnly:
			at += " (read-only)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", in.Name, in.Volume, at)
	}
	return w.Flush()
}

// CacheClear empties caches.
type CacheClear struct {
	Names []string `arg:"" optional:"" help:"The caches to empty (go, npm, pip, cargo, path-HASH as cache ls names them); all when none."`
}

// Run empties them.
func (c *CacheClear) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	done, err := env.Sandboxes.ClearCaches(ctx, r, c.Names)
	if err != nil {
		return err
	}
	if len(done) == 0 {
		env.outf("No shared caches to empty.\n")
	}
	for _, in := range done {
		env.outf("Emptied cache %s (%s)\n", in.Name, in.Volume)
	}
	return nil
}

// CacheFill fills the caches by the setup command in a throwaway sandbox.
type CacheFill struct{}

// Run makes the sandbox, with the caches writable whatever [cache] mode
// says, and deletes it once its setup ran: no agent ever has it.
func (c *CacheFill) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "cache-fill-" + hex.EncodeToString(b)
	created, err := env.Sandboxes.Create(ctx, r, name, api.CreateOptions{FillCache: true, NoPool: true})
	if created == nil {
		return err
	}
	_, derr := env.Sandboxes.Delete(context.WithoutCancel(ctx), r, name, true)
	if err == nil && derr == nil {
		env.outf("Filled the shared caches by the setup command (in sandbox %s, now deleted)\n", name)
	}
	if created.SetupOutput != "" {
		env.errf("%s", created.SetupOutput)
	}
	return errors.Join(err, derr)
}
