package commands

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Cp copies files between the host and a sandbox.
type Cp struct {
	Src string `arg:"" help:"What to copy: a host path, NAME:PATH in a sandbox, or - for a tar stream on stdin."`
	Dst string `arg:"" help:"Where to: NAME:PATH in a sandbox, a host path, or - for a tar stream on stdout."`
}

// sandboxPath splits NAME:PATH. A host path holding a colon can be given as
// ./a:b: a name never holds a slash.
func sandboxPath(arg string) (name, p string, ok bool) {
	name, p, ok = strings.Cut(arg, ":")
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return name, p, true
}

// Validate checks that exactly one side is in a sandbox.
func (c *Cp) Validate() error {
	name, _, in := sandboxPath(c.Dst)
	srcName, _, out := sandboxPath(c.Src)
	switch {
	case in && out:
		return errors.New("copy between the host and a sandbox: one side is NAME:PATH, the other a host path or -")
	case !in && !out:
		return errors.New("name the sandbox side as NAME:PATH, e.g. litterbox cp ./notes.txt mybox:docs/ or litterbox cp mybox:out.log ./")
	}
	if out {
		name = srcName
	}
	_, err := api.Slugify(name)
	return err
}

// Run copies, and says what was copied and committed.
func (c *Cp) Run(ctx context.Context, env *Env) error {
	if name, p, ok := sandboxPath(c.Dst); ok {
		h, err := env.Handle(ctx, name)
		if err != nil {
			return err
		}
		res, snap, err := env.Sandboxes.CopyIn(ctx, h, c.Src, os.Stdin, p)
		if res == nil {
			return err
		}
		for _, sk := range res.Skipped {
			env.errf("skipped %s: %s\n", termtext.Quote(sk.Name), sk.Reason)
		}
		env.outf("Copied %s to %s:%s (%d entries)\n", termtext.Quote(c.Src), h.Slug, termtext.Quote(res.Path), res.Entries)
		if snap != nil && snap.Committed {
			env.outf("Committed %s on %s%s\n", snap.Commit, api.BranchPrefix, h.Slug)
		}
		return err
	}
	name, p, _ := sandboxPath(c.Src)
	h, err := env.Handle(ctx, name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.CopyOut(ctx, h, p, c.Dst, env.Stdout)
	if res != nil && c.Dst != "-" {
		env.outf("Copied %s:%s to %s (%d entries, %d bytes)\n", h.Slug, termtext.Quote(p), termtext.Quote(res.Path), res.Entries, res.Bytes)
	}
	return err
}

// Fork starts a new sandbox from another one's branch tip.
type Fork struct {
	Name string `arg:"" predictor:"sandbox" help:"Sandbox to fork; snapshotted first when it runs."`
	New  string `arg:"" help:"Name of the new sandbox."`
	JSON bool   `name:"json" help:"Print the result as JSON."`
}

// Validate refuses bad names before anything runs.
func (c *Fork) Validate() error {
	if _, err := api.Slugify(c.Name); err != nil {
		return err
	}
	_, err := api.Slugify(c.New)
	return err
}

// Run forks and prints the new sandbox.
func (c *Fork) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	p := newProgress(env)
	f, err := env.Sandboxes.Fork(ctx, r, c.Name, c.New, api.CreateOptions{Progress: p.step, Note: p.notes(c.JSON)})
	p.done()
	if f == nil {
		return err
	}
	if c.JSON {
		if jerr := writeJSON(env, f); jerr != nil {
			return jerr
		}
		return err
	}
	env.outf("Forked sandbox %s from %s at %s\n  branch:    %s\n  container: %s\n  status:    %s\n", f.Name, f.From, shortID(f.Base), f.Branch, f.Container, f.Status)
	printCreatedExtras(env, &f.Created)
	return err
}

// Rewind puts a sandbox's /src back to one of its commits.
type Rewind struct {
	sandboxName
	Rev  string `arg:"" help:"A commit of the sandbox's branch, from its base to its tip (see litterbox log NAME)."`
	JSON bool   `name:"json" help:"Print the result as JSON."`
}

// Run rewinds and says what was recorded.
func (c *Rewind) Run(ctx context.Context, env *Env) error {
	h, err := env.Handle(ctx, c.Name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Rewind(ctx, h, c.Rev)
	if res == nil {
		return err
	}
	if c.JSON {
		if jerr := writeJSON(env, res); jerr != nil {
			return jerr
		}
		return err
	}
	if res.Unchanged {
		env.outf("Sandbox %s already holds the files of %s; nothing to rewind\n", res.Name, shortID(res.To))
		return err
	}
	env.outf("Rewound %s to %s: committed %s on %s%s\n", res.Name, shortID(res.To), res.Commit, api.BranchPrefix, res.Name)
	if len(res.Restarted) > 0 {
		env.outf("Restarted services: %s\n", strings.Join(res.Restarted, ", "))
	}
	return err
}
