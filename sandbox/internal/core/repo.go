// Package core is the vocabulary every concern of the sandbox service
// shares: the repository and its id, a sandbox's handle, names and labels,
// paths in the sandbox, the outcomes callers branch on (errors.go), and
// Common, what each concern is given: the engine, git's runner, the log,
// the options, and the bounded exec every concern runs in a sandbox with.
package core

import (
	"context"
	"path/filepath"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

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
	// LabelRepoID (identity.go) is the repository's id.
	// LabelProbe marks a throwaway sandbox litterbox starts to check an
	// engine or an image, so it is never taken for a user's.
	LabelProbe = LabelPrefix + "probe"
	// LabelPool marks a container of a warm pool; its value is the pool key
	// (pool.Key).
	LabelPool = LabelPrefix + "pool"
)

// LabelKeys are the labels every lookup asks the engine to report.
var LabelKeys = []string{LabelSlug, LabelRepo, LabelGitDir, LabelRepoID, LabelBranch, LabelBase, LabelImage, LabelPlatform, LabelGatewayOf, LabelRuntime}

// LabelGatewayOf marks a sandbox's egress gateway (its container and
// volume) with the sandbox container's name (egress.LabelGatewayOf): it
// carries the sandbox's labels too, so that delete and the removal of
// leftovers find it, but it is never taken for the sandbox.
const LabelGatewayOf = "dev.litterbox.gateway-of"

// LabelPoolMember marks the egress gateway of a warm pool's member with the
// member container's id: the member's claim is the gateway's too.
const LabelPoolMember = "dev.litterbox.pool-member"

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
	// ID is the repository's id (identity.go); "" until its first create
	// since ids exist.
	ID string
}

// OpenRepo finds the git repository containing dir.
func OpenRepo(ctx context.Context, run runner.Runner, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	g, err := git.Open(ctx, run, abs)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: g, Slug: repoSlug(filepath.Base(g.Root)), ID: ReadRepoID(g.CommonDir)}, nil
}

// Root is the repository's working tree root.
func (r *Repo) Root() string { return r.Git.Root }

// ContainerName is litterbox-<repo>-<slug>: the name a sandbox's container
// gets unless another repository's holds it (see SuffixedName).
func (r *Repo) ContainerName(slug string) string {
	return "litterbox-" + r.Slug + "-" + slug
}

// BranchRef is the full ref of a sandbox's branch.
func BranchRef(slug string) string { return "refs/heads/" + BranchPrefix + slug }

// StateDir holds the host-side state of one sandbox (setup marker, locks,
// snapshot index) inside the common git dir, so linked worktrees share it and
// nothing lands in the working tree.
func (r *Repo) StateDir(slug string) string {
	return filepath.Join(r.Git.CommonDir, "litterbox", slug)
}
