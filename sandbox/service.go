// Package sandbox is the service the CLI and the MCP server share: it creates,
// lists, pauses, resumes, deletes and runs commands in sandboxes, each one a
// hardened container holding a copy of the repository plus a git branch
// litterbox/<slug> on the host. It builds no argv itself: the engine is
// behind a provider.Provider, and git is package git.
package sandbox

import (
	"context"
	"fmt"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Service is the sandbox service. Its zero value is not usable: build it with
// New.
type Service struct {
	*core.Common
}

// New builds a Service that runs sandboxes with p and git with r. Extra
// labels come from LITTERBOX_LABELS ("key=value,key=value").
func New(p provider.Provider, r runner.Runner, logger *log.Logger) *Service {
	if logger == nil {
		logger = log.Default()
	}
	image := os.Getenv("LITTERBOX_IMAGE")
	if image == "" {
		image = DefaultImage
	}
	return &Service{Common: &core.Common{
		Provider: p,
		Runner:   r,
		Log:      logger,
		Options:  core.Options{Image: image, ExtraLabels: parseLabels(os.Getenv("LITTERBOX_LABELS"))},
	}}
}

// OpenRepo finds the git repository containing dir.
func (s *Service) OpenRepo(ctx context.Context, dir string) (*Repo, error) {
	return core.OpenRepo(ctx, s.Runner, dir)
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

// labels are the labels of a sandbox's resources.
func (s *Service) labels(r *Repo, slug, base, image string) map[string]string {
	l := map[string]string{
		LabelSlug:   slug,
		LabelRepo:   r.Root(),
		LabelGitDir: r.Git.CommonDir,
		LabelRepoID: r.ID,
		LabelBranch: BranchPrefix + slug,
		LabelBase:   base,
		LabelImage:  image,
	}
	for k, v := range s.ExtraLabels {
		l[k] = v
	}
	return l
}

// spec is the hardened container of a sandbox (DESIGN.md): non-root, no
// capabilities, no privilege gain, read-only root with /src and /tmp in
// memory, limits on pids, memory and CPU, an init to reap zombies, and an idle
// main process, on a network where it cannot reach other sandboxes. /src is a tmpfs because filling an
// overlay-backed /src was about 4x slower (notes/machine-facts.md); the
// branch, not the container, is the record of the work. cfg's image,
// network, ports, host port range and limits apply over the defaults; none
// of what the image itself says (its USER, ENTRYPOINT, CMD, VOLUMEs,
// EXPOSEd ports, WORKDIR, HEALTHCHECK) weakens the hardening: the provider
// sets each of those explicitly (see docs/images.md).
func (s *Service) spec(r *Repo, slug, base string, cfg *config.Config) provider.Spec {
	image := s.Image
	if cfg.Image != "" {
		image = cfg.Image
	}
	memory := DefaultMemory
	if cfg.Memory != "" {
		memory = cfg.Memory
	}
	sp := provider.Spec{
		Name:            r.ContainerName(slug),
		Image:           image,
		Network:         provider.NetworkIsolated,
		Hostname:        slug,
		User:            User,
		Workdir:         Workdir,
		Labels:          s.labels(r, slug, base, image),
		Env:             []string{"HOME=/tmp", "LITTERBOX_SANDBOX=" + slug},
		Tmpfs:           tmpfsMounts(memory),
		ReadOnlyRoot:    true,
		Init:            true,
		DropCaps:        true,
		NoNewPrivileges: true,
		NoHealthcheck:   true,
		Limits:          provider.Limits{Pids: 1024, Memory: memoryBytes(memory), CPUs: float64(min(2, runtime.NumCPU()))},
		Cmd:             []string{"sleep", "infinity"},
	}
	switch cfg.Network {
	case config.NetworkNone:
		sp.Network = provider.NetworkNone
	case config.NetworkOwn:
		sp.Network = provider.NetworkOwn
	}
	for _, p := range cfg.Ports {
		sp.Ports = append(sp.Ports, provider.PortSpec{Name: p.Name, Port: p.ContainerPort})
		sp.Env = append(sp.Env, fmt.Sprintf("%s=%d", p.EnvName(), p.ContainerPort))
	}
	sp.HostPorts = provider.PortRange{First: cfg.HostPorts.First, Last: cfg.HostPorts.Last}
	if n, err := strconv.ParseFloat(cfg.CPUs, 64); err == nil && n > 0 {
		sp.Limits.CPUs = n
	}
	if cfg.Pids > 0 {
		sp.Limits.Pids = cfg.Pids
	}
	return sp
}

// DefaultMemory is a sandbox's memory limit unless its configuration sets one.
const DefaultMemory = "2g"

// runDirSize caps RunDir: the scanner (about 16 MiB) and the services' state
// and logs fit with room to spare.
const runDirSize = 64 << 20

// tmpfsMounts are the in-memory file systems of a sandbox with the memory
// limit memory. Their pages count against that limit, so an unbounded /src
// that the agent fills leaves no memory for any process: every command, the
// snapshot scanner and `rm` included, is then OOM-killed, and the sandbox is
// dead while the engine still calls it running. Capped below the limit (half
// of it for /src, a quarter for /tmp), a full file system is "No space left
// on device" instead, and there is memory left to clean up. A memory of 0
// (no limit) or one that does not parse leaves the sizes to the engine.
func tmpfsMounts(memory string) []provider.Tmpfs {
	src := provider.Tmpfs{Path: Workdir, Exec: true, Owner: User, Mode: 0o755}
	tmp := provider.Tmpfs{Path: "/tmp", Exec: true, Mode: 0o1777}
	run := provider.Tmpfs{Path: RunDir, Exec: true, Mode: 0o755, Size: runDirSize}
	if n := memoryBytes(memory); n > 0 {
		src.Size, tmp.Size = n/2, n/4
	}
	return []provider.Tmpfs{src, tmp, run}
}

// memoryBytes reads a docker memory size ("512m", "1.5g", "1048576"); 0 when
// it is 0 or does not parse.
func memoryBytes(s string) int64 {
	unit := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			unit = 1 << 10
		case 'm', 'M':
			unit = 1 << 20
		case 'g', 'G':
			unit = 1 << 30
		}
	}
	s = strings.TrimRight(s, "bBkKmMgG")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0
	}
	return int64(f * float64(unit))
}

// ContainerSpec is the container Create starts for sandbox slug of r at commit
// base, with the default configuration. The benchmark's floor runs this very
// spec, so the two stay in step.
func (s *Service) ContainerSpec(r *Repo, slug, base string) provider.Spec {
	return s.spec(r, slug, base, config.Default())
}

// Status is what list shows for a sandbox.
type Status string

// Statuses. The orphan states are shown, never repaired automatically;
// delete removes them.
const (
	StatusActive      Status = "active"
	StatusPaused      Status = "paused"
	StatusStopped     Status = "stopped"
	StatusFailedSetup Status = "failed-setup"
	// StatusCreating: a create of this sandbox is running right now.
	StatusCreating Status = "creating"
	// StatusIncomplete: a create was cut short (killed, the engine failed)
	// before the copy of the repository was verified complete. Whatever is
	// left (container, branch, network) is unusable and holds no work.
	StatusIncomplete  Status = "incomplete"
	StatusNoContainer Status = "orphan-branch"    // branch without container
	StatusNoBranch    Status = "orphan-container" // container without branch
	StatusNoSandbox   Status = "orphan-network"   // network without container or branch
)

// Sandbox is one sandbox as list and create report it.
type Sandbox struct {
	Name      string    `json:"name"`
	Status    Status    `json:"status"`
	Branch    string    `json:"branch"`
	Container string    `json:"container,omitempty"`
	Network   string    `json:"network,omitempty"`
	Repo      string    `json:"repo"`
	Base      string    `json:"base,omitempty"`
	Created   time.Time `json:"created,omitzero"`
}

// DefaultSetup is the startup command run once after the copy (FR1.7).
var DefaultSetup = config.DefaultSetup
