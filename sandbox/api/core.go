package api

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Options are what the service is made with besides its engine, runner and
// log: what the environment or the command line set (main reads them once).
// The zero value is the documented default.
type Options struct {
	// Image is what sandboxes are made from unless the configuration's
	// image or create's names another: DefaultImage when "".
	Image string
	// ExtraLabels go on every resource made, and narrow every lookup: the
	// test suite uses them to find and remove what it made.
	ExtraLabels map[string]string
	// AllowUnisolated lets create go on an engine whose sandboxes can reach
	// each other, with a warning.
	AllowUnisolated bool
	// Scanner is a host file to copy into sandboxes as the snapshot
	// scanner instead of the embedded one (for tests); "" for the embedded.
	Scanner string
	// NoJournal makes every scan walk the whole tree instead of following
	// the change journal.
	NoJournal bool
	// MaxFileSize is the largest file a snapshot records, in bytes; 0 for
	// the default.
	MaxFileSize int64
	// CacheDir is where the isolation check and the harness image check
	// keep their verdicts; "" for the user's cache directory.
	CacheDir string
	// PoolRefillRate is how many warm pool members this process makes per
	// second at most once it made MaxSize (a token bucket); 0 for the
	// default, pool.DefaultRefillRate.
	PoolRefillRate float64
	// LongLived says the process serves many calls (the MCP server): a
	// snapshot that commits then reads, in the background, the trees the
	// next one will likely ask of the new tip (recording/branch.go).
	LongLived bool
}

// Handle is a sandbox resolved once for repeated tool calls: the MCP server
// caches it so each call costs one exec, not a lookup and an exec.
type Handle struct {
	Repo *Repo
	Slug string
	// Ref names the sandbox on its engine by id, so a same-named sandbox of
	// another repository can never be reached by accident.
	Ref provider.Ref
	// Base is the commit the sandbox started from.
	Base string
	// Image and Platform ("linux/arm64") are its labels: Platform is ""
	// when the engine did not hold the image at create (it pulled it).
	Image, Platform string
}

// LabelRepoID is the label holding the id of the repository a sandbox belongs
// to.
const LabelRepoID = LabelPrefix + "repo-id"

// idSuffixLen is how much of the id a container name takes when its plain
// name belongs to another repository.
const idSuffixLen = 8

// Labels put on every container and network Litterbox makes. The engine's
// labels plus git refs are the whole state: there is no registry file.
const (
	LabelPrefix = "dev.litterbox."
	LabelSlug   = LabelPrefix + "slug"
	LabelRepo   = LabelPrefix + "repo"   // working tree root
	LabelGitDir = LabelPrefix + "gitdir" // common git dir
	LabelBranch = LabelPrefix + "branch"
	LabelBase   = LabelPrefix + "base" // commit the sandbox started from
	// LabelImage is the image the sandbox was made from, and LabelPlatform
	// its os/arch when the engine held it at create: the snapshot scanner
	// copied in is the one for that platform.
	LabelImage    = LabelPrefix + "image"
	LabelPlatform = LabelPrefix + "platform"
	// LabelRuntime is the engine's runtime the sandbox runs under, by the
	// engine's name ("runsc" for gVisor on Docker); absent for the
	// engine's default.
	LabelRuntime = LabelPrefix + "runtime"
	// LabelRepoID, above, is the repository's id (made by core's identity.go).
	// LabelProbe marks a throwaway sandbox litterbox starts to check an
	// engine or an image, so it is never taken for a user's.
	LabelProbe = LabelPrefix + "probe"
	// LabelPool marks a container of a warm pool; its value is the pool key
	// (pool.Key).
	LabelPool = LabelPrefix + "pool"
)

// BranchPrefix is where sandbox branches live.
const BranchPrefix = "litterbox/"

// Defaults of the sandbox container.
const (
	DefaultImage = "busybox:latest"
	// User is the unprivileged uid:gid agent commands run as. busybox has no
	// such user in /etc/passwd; a numeric id needs none.
	User = "1000:1000"
	// RunDir is a root-owned tmpfs the sandbox user can read but not write:
	// Litterbox's own helpers (the snapshot scanner, the service supervisor)
	// live there, out of the agent's reach.
	RunDir = "/run/litterbox"
)

// Names of package config that every concern uses.
const (
	// ConfigFile is the repository's sandbox configuration (see package
	// config).
	ConfigFile = config.File
	// Workdir is the sandbox's working directory, where the repository is
	// copied.
	Workdir = config.Workdir
)

// Repo is the repository sandboxes are made from.
type Repo struct {
	Git  *git.Repo
	Slug string // slug of the root's base name, the container name prefix
	// ID is the repository's id (core's identity.go); "" until its first create
	// since ids exist.
	ID string
}

// BranchRef is the full ref of a sandbox's branch.
func BranchRef(slug string) string { return "refs/heads/" + BranchPrefix + slug }

// MaxNameLen is the longest valid slug: a Docker container name part and a
// DNS label (a sandbox's hostname) both fit.
const MaxNameLen = 63

// Slugify lowercases name, turns every run of characters outside [a-z0-9]
// into one dash and trims dashes at both ends, so any name a user or an
// agent gives becomes one git, the engine and a hostname accept. It returns
// an *InvalidNameError when the result is empty or longer than MaxNameLen,
// so its output is always a valid slug or an error.
func Slugify(name string) (string, error) {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	slug := b.String()
	if slug == "" || len(slug) > MaxNameLen {
		return "", &InvalidNameError{Name: name, Slug: slug}
	}
	return slug, nil
}

// CacheSub is the directory name under the cache (CacheDir, else the
// user's cache directory's litterbox), made when missing.
func (o Options) CacheSub(name string) (string, error) {
	base := o.CacheDir
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find a cache directory (set LITTERBOX_CACHE_DIR): %w", err)
		}
		base = filepath.Join(d, "litterbox")
	}
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}

// Owns reports whether an object with labels belongs to r: it carries r's
// id, or, made before ids existed, no id and r's common git dir.
func (r *Repo) Owns(labels map[string]string) bool {
	if id := labels[LabelRepoID]; id != "" {
		return id == r.ID
	}
	return labels[LabelGitDir] == r.Git.CommonDir
}

// SuffixedName is the container name of a sandbox whose plain name is held
// by another repository's.
func (r *Repo) SuffixedName(slug string) string {
	return r.ContainerName(slug) + "-" + r.ShortID()
}

// ShortID is the start of r's id that names take where r's must be told
// apart from another repository's.
func (r *Repo) ShortID() string { return r.ID[:idSuffixLen] }

// Root is the repository's working tree root.
func (r *Repo) Root() string { return r.Git.Root }

// ContainerName is litterbox-<repo>-<slug>: the name a sandbox's container
// gets unless another repository's holds it (see SuffixedName).
func (r *Repo) ContainerName(slug string) string {
	return "litterbox-" + r.Slug + "-" + slug
}

// StateDir holds the host-side state of one sandbox (setup marker, locks,
// snapshot index) inside the common git dir, so linked worktrees share it and
// nothing lands in the working tree.
func (r *Repo) StateDir(slug string) string {
	return filepath.Join(r.Git.CommonDir, "litterbox", slug)
}
