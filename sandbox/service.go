// Package sandbox is the service the CLI and the MCP server share: it creates,
// lists, pauses, resumes, deletes and runs commands in sandboxes, each one a
// hardened container holding a copy of the repository plus a git branch
// litterbox/<slug> on the host. It builds no argv itself: the engine is
// behind a provider.Provider, and git is package git.
package sandbox

import (
	"context"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/doctor"
	"github.com/litterbox-dev/litterbox/sandbox/internal/files"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pause"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/provision"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/review"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Service is the sandbox service. Its zero value is not usable: build it with
// New.
type Service struct {
	*core.Common
	guest    *guest.Guest
	iso      *isolation.Checker
	pool     *pool.Pool
	inv      *inventory.Inventory
	services *services.Supervisor
	rec      *recording.Recorder
	files    *files.Files
	prov     *provision.Provisioner
	review   *review.Reviewer
	pause    *pause.Pauser
	doctor   *doctor.Doctor
}

// newService composes the concerns over c.
func newService(c *core.Common) *Service {
	g := guest.New(c)
	iso := isolation.New(c, g)
	p := pool.New(c, g, iso)
	inv := inventory.New(c, p)
	sv := services.New(c)
	rec := recording.New(c, g, inv, sv)
	return &Service{Common: c, guest: g, iso: iso, pool: p, inv: inv, services: sv, rec: rec, files: files.New(c, rec),
		prov: provision.New(c, g, iso, p, inv, sv, rec), review: review.New(c, inv), pause: pause.New(c, inv, rec, g, sv),
		doctor: doctor.New(c, g, iso)}
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
		Options: core.Options{Image: image, ExtraLabels: parseLabels(os.Getenv("LITTERBOX_LABELS")), Scanner: os.Getenv("LITTERBOX_SCANNER"), CacheDir: os.Getenv("LITTERBOX_CACHE_DIR"),
			NoJournal: os.Getenv("LITTERBOX_JOURNAL") == "off", MaxFileSize: maxFileSize(os.Getenv("LITTERBOX_SNAPSHOT_MAX_FILE_SIZE"))},
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

// List returns the sandboxes of r, or of every repository when r is nil
// (see inventory.List).
func (s *Service) List(ctx context.Context, r *Repo) ([]Sandbox, error) {
	return s.inv.List(ctx, r)
}

// ListDir lists the sandboxes of the repository containing dir, at about
// the cost of one engine list. It first finishes an interrupted merge or
// apply of this working tree (see review.RecoverWorktree).
func (s *Service) ListDir(ctx context.Context, dir string) ([]Sandbox, error) {
	sbs, _, err := s.ListDirPool(ctx, dir)
	return sbs, err
}

// ListDirPool is ListDir, plus the repository's warm pool (from the same
// engine list).
func (s *Service) ListDirPool(ctx context.Context, dir string) ([]Sandbox, []PoolEntry, error) {
	r, list, members, err := s.inv.ListDir(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if err := s.review.RecoverWorktree(ctx, r); err != nil {
		// The message says what to do; the list is still worth showing.
		s.Log.Warn(err.Error())
	}
	return list, pool.Entries(r, members), nil
}

// Handle resolves a running sandbox. Missing, incomplete, paused and stopped
// sandboxes are errors that say what to do.
func (s *Service) Handle(ctx context.Context, r *Repo, name string) (*Handle, error) {
	return s.inv.Handle(ctx, r, name)
}

// Delete removes a sandbox's container, networks, branch and host-side
// state, refusing to lose unmerged work unless force (see
// inventory.Delete).
func (s *Service) Delete(ctx context.Context, r *Repo, name string, force bool) (*DeleteReport, error) {
	return s.inv.Delete(ctx, r, name, force)
}

// Prune removes the containers and networks of sandboxes whose repository
// no longer exists.
func (s *Service) Prune(ctx context.Context) ([]Pruned, error) {
	return s.inv.Prune(ctx)
}

// ServiceAction runs one action on a service of a running sandbox: start,
// stop, restart, status or logs (see services.Do).
func (s *Service) ServiceAction(ctx context.Context, h *Handle, name, action string, lines int) (*ServiceResult, error) {
	return s.services.Do(ctx, h, name, action, lines)
}

// Ports lists the named ports of a running sandbox with the host URL of
// each.
func (s *Service) Ports(ctx context.Context, h *Handle) (*PortsResult, error) {
	return s.services.Ports(ctx, h)
}

// maxFileSize reads LITTERBOX_SNAPSHOT_MAX_FILE_SIZE, in bytes; 0 (the
// default) unless it is a positive number.
func maxFileSize(v string) int64 {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
		return n
	}
	return 0
}

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to its branch, with message, when something changed.
func (s *Service) Snapshot(ctx context.Context, h *Handle, message string) (*SnapshotResult, error) {
	return s.rec.Snapshot(ctx, h, message)
}

// Run runs a shell command in the sandbox as the sandbox user, then
// snapshots what it changed, in one exec (see recording.Run).
func (s *Service) Run(ctx context.Context, h *Handle, spec RunSpec) (*RunResult, *SnapshotResult, error) {
	return s.rec.Run(ctx, h, spec)
}

// Milestone snapshots pending changes, then squashes the commits since the
// previous milestone (or the base) into one commit with message.
func (s *Service) Milestone(ctx context.Context, h *Handle, message string) (*MilestoneResult, error) {
	return s.rec.Milestone(ctx, h, message)
}

// Rewind puts the sandbox's /src back to rev, a commit of its branch, and
// records that as a new commit (see recording.Rewind).
func (s *Service) Rewind(ctx context.Context, h *Handle, rev string) (*RewindResult, error) {
	return s.rec.Rewind(ctx, h, rev)
}

// Read returns lines of a text file with one exec.
func (s *Service) Read(ctx context.Context, h *Handle, p string, o ReadOptions) (*ReadResult, error) {
	return s.files.Read(ctx, h, p, o)
}

// Write creates or overwrites a file and snapshots it, with one exec.
func (s *Service) Write(ctx context.Context, h *Handle, p string, content []byte) (*WriteResult, *SnapshotResult, error) {
	return s.files.Write(ctx, h, p, content)
}

// Patch applies a unified diff to one file and snapshots the result.
func (s *Service) Patch(ctx context.Context, h *Handle, p, diff string) (*PatchResult, *SnapshotResult, error) {
	return s.files.Patch(ctx, h, p, diff)
}

// Ls lists a folder (recursively when asked), leaving hidden entries out.
func (s *Service) Ls(ctx context.Context, h *Handle, p string, recursive bool) (*LsResult, error) {
	return s.files.Ls(ctx, h, p, recursive)
}

// Glob finds files under p whose path relative to p matches pattern.
func (s *Service) Glob(ctx context.Context, h *Handle, pattern, p string) (*GlobResult, error) {
	return s.files.Glob(ctx, h, pattern, p)
}

// Grep searches files under p (or the file p) for an extended regular
// expression; include narrows the files by name.
func (s *Service) Grep(ctx context.Context, h *Handle, pattern, p, include string) (*GrepResult, error) {
	return s.files.Grep(ctx, h, pattern, p, include)
}

// Bash runs a shell command for an agent and snapshots what it changed, in
// one exec.
func (s *Service) Bash(ctx context.Context, h *Handle, command string, o BashOptions) (*BashResult, *SnapshotResult, error) {
	return s.files.Bash(ctx, h, command, o)
}

// CopyIn copies src, a host file or folder (or a tar stream on in when src
// is "-"), to dst in the sandbox, and snapshots it.
func (s *Service) CopyIn(ctx context.Context, h *Handle, src string, in io.Reader, dst string) (*CopyResult, *SnapshotResult, error) {
	return s.files.CopyIn(ctx, h, src, in, dst)
}

// CopyOut copies src, a file or folder in the sandbox, to dst on the host
// (or as a tar stream to w when dst is "-").
func (s *Service) CopyOut(ctx context.Context, h *Handle, src, dst string, w io.Writer) (*CopyResult, error) {
	return s.files.CopyOut(ctx, h, src, dst, w)
}

// Create makes a sandbox: branch litterbox/<slug> at HEAD (or opts.From)
// and a hardened container holding a copy of it, set up (see
// provision.Create).
func (s *Service) Create(ctx context.Context, r *Repo, name string, opts CreateOptions) (*Created, error) {
	return s.prov.Create(ctx, r, name, opts)
}

// Fork creates the sandbox newName from the tip of name's branch.
func (s *Service) Fork(ctx context.Context, r *Repo, name, newName string, opts CreateOptions) (*Forked, error) {
	return s.prov.Fork(ctx, r, name, newName, opts)
}

// History lists the commits of a sandbox's branch since its base, newest
// first (litterbox log).
func (s *Service) History(ctx context.Context, r *Repo, name string) (*History, error) {
	return s.review.History(ctx, r, name)
}

// Diff writes the sandbox's changes against its base to w.
func (s *Service) Diff(ctx context.Context, r *Repo, name string, opts git.DiffOptions, w io.Writer) (*DiffResult, error) {
	return s.review.Diff(ctx, r, name, opts, w)
}

// Apply puts the sandbox's changes into the working tree, uncommitted, and
// keeps the sandbox (see review.Apply).
func (s *Service) Apply(ctx context.Context, r *Repo, name string) (*ApplyResult, error) {
	return s.review.Apply(ctx, r, name)
}

// Merge merges a sandbox's branch into the current branch, then deletes the
// sandbox (see review.Merge).
func (s *Service) Merge(ctx context.Context, r *Repo, name string) (*MergeResult, error) {
	return s.review.Merge(ctx, r, name)
}

// ConfigRole says what the file at path p decides, when it is one that
// steers git or litterbox; "" for any other file.
func ConfigRole(p string) string { return review.ConfigRole(p) }

// Pause freezes a sandbox's processes, keeping all its state (see
// pause.Pause).
func (s *Service) Pause(ctx context.Context, r *Repo, name string, force bool) (Outcome, error) {
	return s.pause.Pause(ctx, r, name, force)
}

// Resume thaws a paused sandbox.
func (s *Service) Resume(ctx context.Context, r *Repo, name string) (Outcome, error) {
	return s.pause.Resume(ctx, r, name)
}

// PauseAll pauses every sandbox of r, or of every repository when r is nil.
func (s *Service) PauseAll(ctx context.Context, r *Repo, force bool) ([]Outcome, error) {
	return s.pause.PauseAll(ctx, r, force)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is
// nil.
func (s *Service) ResumeAll(ctx context.Context, r *Repo) ([]Outcome, error) {
	return s.pause.ResumeAll(ctx, r)
}

// Doctor checks what litterbox needs (the engine, the image, git, the
// repository dir is in, disk space); every problem is a check.
func (s *Service) Doctor(ctx context.Context, dir string) []Check {
	return s.doctor.Run(ctx, dir)
}
