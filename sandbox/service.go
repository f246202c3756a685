// Package sandbox is the service the CLI and the MCP server share: it creates,
// lists, pauses, resumes, deletes and runs commands in sandboxes, each one a
// hardened Docker container holding a copy of the repository plus a git branch
// litterbox/<slug> on the host. It builds no argv itself: that is in packages
// docker and git.
package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

// Labels put on every container and network Litterbox makes. Docker labels
// plus git refs are the whole state: there is no registry file.
const (
	LabelPrefix = "dev.litterbox."
	LabelSlug   = LabelPrefix + "slug"
	LabelRepo   = LabelPrefix + "repo"   // working tree root
	LabelGitDir = LabelPrefix + "gitdir" // common git dir
	LabelBranch = LabelPrefix + "branch"
	LabelBase   = LabelPrefix + "base" // commit the sandbox started from
)

// BranchPrefix is where sandbox branches live.
const BranchPrefix = "litterbox/"

// Defaults of the sandbox container (DESIGN.md, "Sandbox container").
const (
	DefaultImage = "busybox:latest"
	Workdir      = "/src"
	// User is the unprivileged uid:gid agent commands run as. busybox has no
	// such user in /etc/passwd; a numeric id needs none.
	User = "1000:1000"
	// RunDir is a root-owned tmpfs the sandbox user can read but not write:
	// Litterbox's own helpers (the snapshot scanner, the service supervisor)
	// live there, out of the agent's reach.
	RunDir = "/run/litterbox"
)

// Service is the sandbox service. Its zero value is not usable: build it with
// New.
type Service struct {
	Docker *docker.Client
	Runner runner.Runner
	Log    *log.Logger
	Image  string
	// ExtraLabels go on every resource made; the test suite uses them to find
	// and remove what it made (LITTERBOX_LABELS).
	ExtraLabels map[string]string
}

// New builds a Service over r. Extra labels come from LITTERBOX_LABELS
// ("key=value,key=value").
func New(r runner.Runner, logger *log.Logger) *Service {
	if logger == nil {
		logger = log.Default()
	}
	return &Service{
		Docker:      &docker.Client{R: r},
		Runner:      r,
		Log:         logger,
		Image:       DefaultImage,
		ExtraLabels: parseLabels(os.Getenv("LITTERBOX_LABELS")),
	}
}

func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// Repo is the repository sandboxes are made from.
type Repo struct {
	Git  *git.Repo
	Slug string // slug of the root's base name, the container name prefix
}

// OpenRepo finds the git repository containing dir.
func (s *Service) OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	g, err := git.Open(ctx, s.Runner, abs)
	if err != nil {
		return nil, err
	}
	return &Repo{Git: g, Slug: repoSlug(filepath.Base(g.Root))}, nil
}

// Root is the repository's working tree root.
func (r *Repo) Root() string { return r.Git.Root }

// ContainerName is litterbox-<repo>-<slug> (FR1.11).
func (r *Repo) ContainerName(slug string) string {
	return "litterbox-" + r.Slug + "-" + slug
}

// BranchRef is the full ref of a sandbox's branch.
func BranchRef(slug string) string { return "refs/heads/" + BranchPrefix + slug }

// stateDir holds the host-side state of one sandbox (setup marker, locks,
// snapshot index) inside the common git dir, so linked worktrees share it and
// nothing lands in the working tree.
func (r *Repo) stateDir(slug string) string {
	return filepath.Join(r.Git.CommonDir, "litterbox", slug)
}

// labels are the labels of a sandbox's resources.
func (s *Service) labels(r *Repo, slug, base string) map[string]string {
	l := map[string]string{
		LabelSlug:   slug,
		LabelRepo:   r.Root(),
		LabelGitDir: r.Git.CommonDir,
		LabelBranch: BranchPrefix + slug,
		LabelBase:   base,
	}
	for k, v := range s.ExtraLabels {
		l[k] = v
	}
	return l
}

// runSpec is the hardened container of a sandbox (DESIGN.md): non-root, no
// capabilities, no privilege gain, read-only root with /src and /tmp in
// memory, limits on pids, memory and CPU, an init to reap zombies, and an idle
// main process. /src is a tmpfs because filling an overlay-backed /src was
// about 4x slower (notes/machine-facts.md); the branch, not the container, is
// the record of the work.
func (s *Service) runSpec(r *Repo, slug, base string) docker.RunSpec {
	name := r.ContainerName(slug)
	return docker.RunSpec{
		Name:            name,
		Image:           s.Image,
		Network:         name,
		Hostname:        slug,
		User:            User,
		Workdir:         Workdir,
		Labels:          s.labels(r, slug, base),
		Env:             []string{"HOME=/tmp", "LITTERBOX_SANDBOX=" + slug},
		Tmpfs:           []string{Workdir + ":rw,exec,uid=1000,gid=1000,mode=0755", "/tmp:rw,exec,mode=1777", RunDir + ":rw,exec,mode=0755"},
		ReadOnly:        true,
		Init:            true,
		CapDropAll:      true,
		NoNewPrivileges: true,
		PidsLimit:       1024,
		Memory:          "2g",
		CPUs:            fmt.Sprint(min(2, runtime.NumCPU())),
		Cmd:             []string{"sleep", "infinity"},
	}
}

// ContainerSpec is the container Create starts for sandbox slug of r at commit
// base, before the configuration's ports and limits. The benchmark's floor
// runs this very `docker run`, so the two stay in step.
func (s *Service) ContainerSpec(r *Repo, slug, base string) docker.RunSpec {
	return s.runSpec(r, slug, base)
}

// Status is what list shows for a sandbox.
type Status string

// Statuses. The two orphan states are shown, never repaired automatically.
const (
	StatusActive      Status = "active"
	StatusPaused      Status = "paused"
	StatusStopped     Status = "stopped"
	StatusFailedSetup Status = "failed-setup"
	StatusNoContainer Status = "orphan-branch"    // branch without container
	StatusNoBranch    Status = "orphan-container" // container without branch
)

// Sandbox is one sandbox as list and create report it.
type Sandbox struct {
	Name      string    `json:"name"`
	Status    Status    `json:"status"`
	Branch    string    `json:"branch"`
	Container string    `json:"container,omitempty"`
	Repo      string    `json:"repo"`
	Base      string    `json:"base,omitempty"`
	Created   time.Time `json:"created,omitzero"`
}
