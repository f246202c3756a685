// Package sandbox is the service the CLI and the MCP server share: it creates,
// lists, pauses, resumes, deletes and runs commands in sandboxes, each one a
// hardened container holding a copy of the repository plus a git branch
// litterbox/<slug> on the host. It builds no argv itself: the engine is
// behind a provider.Provider, and git is package git.
package sandbox

import (
	"context"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"os"
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
	guest *guest.Guest
	iso   *isolation.Checker
	pool  *pool.Pool
}

// newService composes the concerns over c.
func newService(c *core.Common) *Service {
	g := guest.New(c)
	iso := isolation.New(c, g)
	return &Service{Common: c, guest: g, iso: iso, pool: pool.New(c, g, iso)}
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
	return newService(&core.Common{
		Provider: p,
		Runner:   r,
		Log:      logger,
		Options:  core.Options{Image: image, ExtraLabels: parseLabels(os.Getenv("LITTERBOX_LABELS")), Scanner: os.Getenv("LITTERBOX_SCANNER"), CacheDir: os.Getenv("LITTERBOX_CACHE_DIR")},
	})
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

// ContainerSpec is the container Create starts for sandbox slug of r at commit
// base, with the default configuration. The benchmark's floor runs this very
// spec, so the two stay in step.
func (s *Service) ContainerSpec(r *Repo, slug, base string) provider.Spec {
	return spec.For(s.Options, r, slug, base, config.Default())
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

// Pool lists r's unclaimed pooled containers.
func (s *Service) Pool(ctx context.Context, r *Repo) ([]PoolEntry, error) {
	return s.pool.List(ctx, r)
}

// FillPool brings r's pool to size ready members made from HEAD with its
// configuration (see pool.Fill).
func (s *Service) FillPool(ctx context.Context, r *Repo, size int) ([]PoolEntry, error) {
	return s.pool.Fill(ctx, r, size)
}

// DeletePool removes every unclaimed pooled container of r and its record;
// it returns their names.
func (s *Service) DeletePool(ctx context.Context, r *Repo) ([]string, error) {
	return s.pool.Delete(ctx, r)
}
