package spec

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// A repository's shared package caches ([cache]) as its sandboxes mount
// them: an engine volume per cache and repository, named and labelled by
// the repository's id, so one repository never mounts another's. Package
// cache opens, lists and clears them.

// LabelCache is the label of a cache volume: its cache's name.
const LabelCache = api.LabelPrefix + "cache"

// CacheRoot is where the presets' volumes are mounted in a sandbox.
const CacheRoot = "/cache"

// CacheEntry is one cache as a sandbox mounts it.
type CacheEntry struct {
	// Name is the preset's name, or path-HASH for a path.
	Name string `json:"name"`
	// Path is where it is mounted in the sandbox.
	Path string `json:"path"`
	// Env are the variables that point the tools at it.
	Env []string `json:"env,omitempty"`
}

// CacheEntries are the caches c names, in its order.
func CacheEntries(c config.Cache) []CacheEntry {
	out := make([]CacheEntry, 0, len(c.Use))
	for _, u := range c.Use {
		p := CacheRoot + "/" + u
		switch u {
		case "go":
			out = append(out, CacheEntry{Name: u, Path: p, Env: []string{"GOMODCACHE=" + p + "/mod", "GOCACHE=" + p + "/build"}})
		case "npm":
			out = append(out, CacheEntry{Name: u, Path: p, Env: []string{"npm_config_cache=" + p}})
		case "pip":
			out = append(out, CacheEntry{Name: u, Path: p, Env: []string{"PIP_CACHE_DIR=" + p}})
		case "cargo":
			out = append(out, CacheEntry{Name: u, Path: p, Env: []string{"CARGO_HOME=" + p}})
		default:
			sum := sha256.Sum256([]byte(u))
			out = append(out, CacheEntry{Name: "path-" + hex.EncodeToString(sum[:4]), Path: u})
		}
	}
	return out
}

// CacheVolume is the name of r's volume of cache name.
func CacheVolume(r *api.Repo, name string) string {
	return "litterbox-cache-" + r.Slug + "-" + r.ID[:min(12, len(r.ID))] + "-" + name
}

// cacheLabels are the labels of r's cache volumes (of name, when set).
func cacheLabels(extra map[string]string, r *api.Repo, name string) map[string]string {
	l := map[string]string{LabelCache: name, api.LabelRepo: r.Root(), api.LabelGitDir: r.Git.CommonDir, api.LabelRepoID: r.ID}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// CacheMounts are the volumes and the variables of r's caches c in a sandbox
// (writable unless c is read-only); the engine makes a volume, labelled,
// the first time a sandbox mounts it. None for a repository without an
// id (there is none before its first create).
func CacheMounts(extra map[string]string, r *api.Repo, c config.Cache) ([]provider.Volume, []string) {
	if r.ID == "" {
		return nil, nil
	}
	var vols []provider.Volume
	var env []string
	for _, e := range CacheEntries(c) {
		vols = append(vols, provider.Volume{Name: CacheVolume(r, e.Name), Path: e.Path, Labels: cacheLabels(extra, r, e.Name), ReadOnly: c.ReadOnly})
		env = append(env, e.Env...)
	}
	return vols, env
}
