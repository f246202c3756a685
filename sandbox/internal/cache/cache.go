// Package cache is the package caches a repository's sandboxes share
// ([cache] in the configuration, docs/config.md#shared-caches): each is an
// engine volume of the repository (named and labelled by its id, so one
// repository never mounts another's), mounted into each of its sandboxes,
// the warm pool's members too (the mounts are in the spec, and so in the
// pool's key). A sandbox's agent can write them, and so poison what later
// sandboxes of the repository read (docs/security.md); mode = "ro" mounts
// them read-only, and only the setup of `litterbox cache fill`'s
// throwaway sandbox writes them. `litterbox cache ls` lists them, `cache
// clear` empties them.
package cache

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
)

// Check refuses caches c on an engine that cannot make a volume,
// labelled, as a sandbox mounts it (Podman, Kubernetes): litterbox could
// not find, list or clear them there.
func Check(p provider.Provider, c config.Cache) error {
	if len(c.Use) == 0 {
		return nil
	}
	if v, ok := p.(provider.Volumes); ok && v.KeepsVolumes() {
		return nil
	}
	return core.NewError(api.ErrConfig, "[cache] is kept on Docker's engine only: this engine (Podman, Kubernetes) cannot make the caches' volumes labelled as a sandbox mounts them. Take [cache] out of the configuration to use it (see docs/config.md#shared-caches). Nothing was made.")
}

// Open lets the sandbox's user write the writable caches of c in the
// running sandbox ref: a volume's root is root's, made by the engine, and
// root in the sandbox (with no capability, but its owner) opens it as
// /tmp is (1777). One the image's folder made the user's already (the
// engine copies a folder of the image at the path into a new volume) is
// left as it is: root may not change it.
func Open(ctx context.Context, p provider.Provider, ref provider.Ref, c config.Cache) error {
	if c.ReadOnly || len(c.Use) == 0 {
		return nil
	}
	paths := make([]string, 0, len(c.Use))
	for _, e := range spec.CacheEntries(c) {
		paths = append(paths, e.Path)
	}
	uid, _, _ := strings.Cut(api.User, ":")
	res, err := p.Exec(ctx, provider.ExecRequest{Ref: ref, User: "0", Cmd: append([]string{"sh", "-c", openScript, "sh", uid}, paths...)})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err != nil {
		return fmt.Errorf("open the shared caches %s to the sandbox's user: %w", strings.Join(paths, ", "), err)
	}
	return nil
}

// openScript opens each folder after $1 (the sandbox user's uid) to it.
const openScript = `u=$1; shift; for p in "$@"; do chmod 1777 "$p" 2>/dev/null || [ "$(stat -c %u "$p")" = "$u" ] || { echo "$p is owned by uid $(stat -c %u "$p"), and root in the sandbox may not change it" >&2; exit 1; }; done`

// Caches lists and clears a repository's cache volumes on c's engine.
type Caches struct{ *core.Common }

// New is the caches of c's engine.
func New(c *core.Common) *Caches { return &Caches{Common: c} }

// configured is the [cache] of r's configuration at HEAD.
func (c *Caches) configured(ctx context.Context, r *api.Repo) (config.Cache, error) {
	head, err := r.Git.Head(ctx)
	if err != nil {
		return config.Cache{}, err
	}
	cfg, err := c.LoadConfig(ctx, r, head)
	if err != nil {
		return config.Cache{}, err
	}
	return cfg.Cache, nil
}

// List is r's cache volumes on the engine, and where its configuration
// mounts them.
func (c *Caches) List(ctx context.Context, r *api.Repo) ([]api.CacheInfo, error) {
	if r.ID == "" {
		return []api.CacheInfo{}, nil
	}
	cfg, err := c.configured(ctx, r)
	if err != nil {
		return nil, err
	}
	d, ok := c.Provider.(provider.Volumes)
	if !ok {
		return nil, core.NewError(api.ErrBadArgument, "this engine keeps no shared caches: they are volumes of Docker's engine (see docs/config.md#shared-caches)")
	}
	filters := []string{spec.LabelCache, api.LabelRepoID + "=" + r.ID}
	for k, v := range c.ExtraLabels {
		filters = append(filters, k+"="+v)
	}
	names, err := d.ListVolumes(ctx, filters...)
	if err != nil {
		return nil, err
	}
	prefix := spec.CacheVolume(r, "")
	out := []api.CacheInfo{}
	for _, v := range names {
		name, ok := strings.CutPrefix(v, prefix)
		if !ok {
			continue
		}
		in := api.CacheInfo{Name: name, Volume: v}
		for _, e := range spec.CacheEntries(cfg) {
			if e.Name == name {
				in.Path, in.ReadOnly = e.Path, cfg.ReadOnly
			}
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b api.CacheInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// clearScript empties each folder it is given: what the sandbox user made
// read-only (Go's module cache) made writable first.
// The folder itself is root's (the engine made it): only what is in it
// is the sandbox user's to change.
const clearScript = `for d in "$@"; do chmod -R u+w "$d"/* "$d"/.[!.]* "$d"/..?* 2>/dev/null; rm -rf "$d"/* "$d"/.[!.]* "$d"/..?* || exit 1; done`

// Clear empties r's cache volumes (those of names; all of them when none
// is named) in place, in a throwaway sandbox as hardened as any that
// mounts them: the sandboxes that mount them keep running, and see them
// empty. It returns the caches it emptied.
func (c *Caches) Clear(ctx context.Context, r *api.Repo, names []string) ([]api.CacheInfo, error) {
	all, err := c.List(ctx, r)
	if err != nil {
		return nil, err
	}
	var do []api.CacheInfo
	for _, in := range all {
		if len(names) == 0 || slices.Contains(names, in.Name) {
			do = append(do, in)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(in api.CacheInfo) bool { return in.Name == n }) {
			return nil, core.NewError(api.ErrBadArgument, "the repository has no cache %q: `litterbox cache ls` lists its caches", n)
		}
	}
	if len(do) == 0 {
		return []api.CacheInfo{}, nil
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sp := spec.Probe(c.ExtraLabels, "cache", "litterbox-cache-clear-"+hex.EncodeToString(b), cmp.Or(c.Image, api.DefaultImage), provider.NetworkNone, 16<<20, 128<<20, 10*time.Minute)
	args := []string{"sh", "-c", clearScript, "sh"}
	for _, in := range do {
		p := "/c/" + in.Name
		sp.Volumes = append(sp.Volumes, provider.Volume{Name: in.Volume, Path: p})
		args = append(args, p)
	}
	sb, err := c.Provider.Create(ctx, sp)
	if err != nil {
		return nil, fmt.Errorf("start a sandbox to empty the caches: %w", err)
	}
	defer func() {
		if err := c.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
			c.Log.Warn("could not remove the sandbox that emptied the caches", "name", sb.Name, "err", err)
		}
	}()
	res, err := c.Provider.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: args})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, core.CapText(string(res.Stderr)))
	}
	if err != nil {
		return nil, fmt.Errorf("empty the caches: %w", err)
	}
	return do, nil
}

// Prune removes the cache volumes of repositories gone says are gone
// (prune's test, on a volume's labels), and returns their names, each
// with its repository's path. An engine that keeps no caches has none.
func (c *Caches) Prune(ctx context.Context, gone func(labels map[string]string) bool) (map[string]string, error) {
	d, ok := c.Provider.(provider.Volumes)
	if !ok {
		return nil, nil
	}
	filters := []string{spec.LabelCache}
	for k, v := range c.ExtraLabels {
		filters = append(filters, k+"="+v)
	}
	names, err := d.ListVolumes(ctx, filters...)
	if err != nil {
		return nil, err
	}
	labels, err := d.VolumeLabels(ctx, names)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var errs []error
	for _, n := range names {
		if !gone(labels[n]) {
			continue
		}
		if err := d.RemoveVolume(ctx, n); err != nil {
			errs = append(errs, err)
			continue
		}
		out[n] = labels[n][api.LabelRepo]
	}
	return out, errors.Join(errs...)
}
