// Package sandbox is the service the CLI and the MCP server share: it creates,
// lists, pauses, resumes, deletes and runs commands in sandboxes, each one a
// hardened container holding a copy of the repository plus a git branch
// litterbox/<slug> on the host. It builds no argv itself: the engine is
// behind a provider.Provider, and git is package git.
//
// Sandboxes is a façade: it composes one package per concern
// (sandbox/internal/..., which docs/architecture.md maps) and hands each
// call to one of them; its types are those packages' (aliases.go).
package sandbox

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/doctor"
	"github.com/litterbox-dev/litterbox/sandbox/internal/files"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/harnessrun"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/oplog"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pause"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/provision"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/review"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
)

// Sandboxes is the sandbox service. Its zero value is not usable: build it with
// New.
type Sandboxes struct {
	c        *core.Common // held, not embedded: nothing of it is the service's API
	pool     *pool.Pool
	inv      *inventory.Inventory
	services *services.Supervisor
	rec      *recording.Recorder
	files    *files.Files
	prov     *provision.Provisioner
	review   *review.Reviewer
	pause    *pause.Pauser
	doctor   *doctor.Doctor
	gate     *netgate.Gate
	ops      *oplog.Ops
	harness  *harnessrun.Runner
}

// newSandboxes composes the concerns over c.
func newSandboxes(c *core.Common) *Sandboxes {
	g := guest.New(c)
	gate := netgate.New(c)
	iso := isolation.New(c, g)
	p := pool.New(c, g, iso, gate)
	inv := inventory.New(c, p, gate)
	sv := services.New(c)
	rec := recording.New(c, g, inv, sv)
	fl, prov, rv := files.New(c, rec, gate), provision.New(c, g, iso, p, inv, sv, rec, gate), review.New(c, inv)
	pz := pause.New(c, inv, rec, g, sv, gate)
	inv.Wake = pz.Wake
	ops := oplog.New(c, inv, sv, rec, fl, prov, rv, pz)
	return &Sandboxes{c: c, pool: p, inv: inv, services: sv, rec: rec, files: fl, prov: prov, review: rv, pause: pz,
		doctor: doctor.New(c, g, iso), gate: gate, ops: ops, harness: harnessrun.New(c, inv, rec, gate, ops)}
}

// New builds the Sandboxes that run sandboxes with p and git with r, with
// opts. A nil logger is the default one.
func New(p provider.Provider, r runner.Runner, logger *log.Logger, opts api.Options) *Sandboxes {
	return newSandboxes(core.NewCommon(p, r, logger, opts))
}

// RepoID is the id of the repository containing dir, made when it has none
// yet: what an engine of its own (--engine vm) is kept under.
func RepoID(ctx context.Context, run runner.Runner, dir string) (string, error) {
	return core.RepoIDOf(ctx, run, dir)
}

// EnvOptions are the service's options from the environment (see
// core.EnvOptions), which main reads once, where it makes the service.
func EnvOptions() api.Options { return core.EnvOptions() }

// OpenRepo finds the git repository containing dir.
func (s *Sandboxes) OpenRepo(ctx context.Context, dir string) (*api.Repo, error) {
	return core.OpenRepo(ctx, s.c.Runner, dir)
}

// OpenRepoBranches is OpenRepo, with the repository's sandbox branches from
// the same git call, for a list (see ListRepoPool).
func (s *Sandboxes) OpenRepoBranches(ctx context.Context, dir string) (*api.Repo, map[string]string, error) {
	return core.OpenRepoBranches(ctx, s.c.Runner, dir)
}

// ContainerSpec is the container Create starts for sandbox slug of r at commit
// base, with the default configuration. The benchmark's floor runs this very
// spec, so the two stay in step.
func (s *Sandboxes) ContainerSpec(r *api.Repo, slug, base string) provider.Spec {
	return spec.For(s.c.Options, r, slug, base, config.Default())
}

// Pool lists r's unclaimed pooled containers.
func (s *Sandboxes) Pool(ctx context.Context, r *api.Repo) ([]api.PoolEntry, error) {
	return s.pool.List(ctx, r)
}

// FillPool brings r's pool to size ready members made from HEAD with its
// configuration (see pool.Fill).
func (s *Sandboxes) FillPool(ctx context.Context, r *api.Repo, size int) ([]api.PoolEntry, error) {
	return s.pool.Fill(ctx, r, size)
}

// DeletePool removes every unclaimed pooled container of r and its record;
// it returns their names.
func (s *Sandboxes) DeletePool(ctx context.Context, r *api.Repo) ([]string, error) {
	return s.pool.Delete(ctx, r)
}

// List returns the sandboxes of r, or of every repository when r is nil
// (see inventory.List).
func (s *Sandboxes) List(ctx context.Context, r *api.Repo) ([]api.Sandbox, error) {
	return s.inv.List(ctx, r)
}

// ListDir lists the sandboxes of the repository containing dir, at about
// the cost of one engine list. It first finishes an interrupted merge or
// apply of this working tree (see review.RecoverWorktree).
func (s *Sandboxes) ListDir(ctx context.Context, dir string) ([]api.Sandbox, error) {
	sbs, _, err := s.ListRepoPool(ctx, func(ctx context.Context) (*api.Repo, map[string]string, error) { return s.OpenRepoBranches(ctx, dir) })
	return sbs, err
}

// ListRepoPool is ListDir of the repository open finds, plus its warm pool
// (from the same engine list). open runs beside the engine list: what the
// caller does on opening the repository (the idle sweep) costs no time of
// its own. It may give the repository's sandbox branches, read as it
// opened it (OpenRepoBranches), or nil for the list to read them.
func (s *Sandboxes) ListRepoPool(ctx context.Context, open func(context.Context) (*api.Repo, map[string]string, error)) ([]api.Sandbox, []api.PoolEntry, error) {
	return s.review.ListDir(ctx, open)
}

// Handle resolves a running sandbox. Missing, incomplete, paused and stopped
// sandboxes are errors that say what to do.
func (s *Sandboxes) Handle(ctx context.Context, r *api.Repo, name string) (*api.Handle, error) {
	return s.inv.Handle(ctx, r, name)
}

// Delete removes a sandbox's container, networks, branch and host-side
// state, refusing to lose unmerged work unless force (see
// inventory.Delete).
func (s *Sandboxes) Delete(ctx context.Context, r *api.Repo, name string, force bool) (*api.DeleteReport, error) {
	return s.ops.Delete(ctx, r, name, force, nil)
}

// DeleteDetached is Delete, which may return once the sandbox's container
// and branch are gone, handing the rest (its gateway, their volume,
// networks, state) to the process detach starts, which calls FinishDelete.
func (s *Sandboxes) DeleteDetached(ctx context.Context, r *api.Repo, name string, force bool, detach api.Detach) (*api.DeleteReport, error) {
	return s.ops.Delete(ctx, r, name, force, detach)
}

// FinishDelete is the end of a delete of sandbox name that
// DeleteDetached's detach handed this process, with lock (see
// inventory.Finish).
func (s *Sandboxes) FinishDelete(ctx context.Context, r *api.Repo, name string, lock *os.File) error {
	return s.inv.Finish(ctx, r, name, lock)
}

// Prune removes the containers and networks of sandboxes whose repository
// no longer exists.
func (s *Sandboxes) Prune(ctx context.Context) ([]api.Pruned, error) {
	return s.inv.Prune(ctx)
}

// ServiceAction runs one action on a service of a running sandbox: start,
// stop, restart, status or logs (see services.Do).
func (s *Sandboxes) ServiceAction(ctx context.Context, h *api.Handle, name, action string, lines int) (*api.ServiceResult, error) {
	return s.ops.ServiceAction(ctx, h, name, action, lines)
}

// Ports lists the named ports of a running sandbox with the host URL of
// each.
func (s *Sandboxes) Ports(ctx context.Context, h *api.Handle) (*api.PortsResult, error) {
	return s.services.Ports(ctx, h)
}

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to its branch, with message, when something changed.
func (s *Sandboxes) Snapshot(ctx context.Context, h *api.Handle, message string) (*api.SnapshotResult, error) {
	return s.ops.Snapshot(ctx, h, message)
}

// Milestone snapshots pending changes, then squashes the commits since the
// previous milestone (or the base) into one commit with message.
func (s *Sandboxes) Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error) {
	return s.ops.Milestone(ctx, h, message)
}

// Rewind puts the sandbox's /src back to rev, a commit of its branch, and
// records that as a new commit (see recording.Rewind).
func (s *Sandboxes) Rewind(ctx context.Context, h *api.Handle, rev string) (*api.RewindResult, error) {
	return s.ops.Rewind(ctx, h, rev)
}

// Read returns lines of a text file with one exec.
func (s *Sandboxes) Read(ctx context.Context, h *api.Handle, p string, o api.ReadOptions) (*api.ReadResult, error) {
	return s.files.Read(ctx, h, p, o)
}

// Write creates or overwrites a file and snapshots it, with one exec.
func (s *Sandboxes) Write(ctx context.Context, h *api.Handle, p string, content []byte) (*api.WriteResult, *api.SnapshotResult, error) {
	return s.files.Write(ctx, h, p, content)
}

// Patch applies a unified diff to one file and snapshots the result.
func (s *Sandboxes) Patch(ctx context.Context, h *api.Handle, p, diff string) (*api.PatchResult, *api.SnapshotResult, error) {
	return s.files.Patch(ctx, h, p, diff)
}

// Ls lists a folder (recursively when asked), leaving hidden entries out.
func (s *Sandboxes) Ls(ctx context.Context, h *api.Handle, p string, recursive bool) (*api.LsResult, error) {
	return s.files.Ls(ctx, h, p, recursive)
}

// Glob finds files under p whose path relative to p matches pattern.
func (s *Sandboxes) Glob(ctx context.Context, h *api.Handle, pattern, p string) (*api.GlobResult, error) {
	return s.files.Glob(ctx, h, pattern, p)
}

// Grep searches files under p (or the file p) for an extended regular
// expression; include narrows the files by name.
func (s *Sandboxes) Grep(ctx context.Context, h *api.Handle, pattern, p, include string) (*api.GrepResult, error) {
	return s.files.Grep(ctx, h, pattern, p, include)
}

// Bash runs a shell command for an agent and snapshots what it changed, in
// one exec.
func (s *Sandboxes) Bash(ctx context.Context, h *api.Handle, command string, o api.BashOptions) (*api.BashResult, *api.SnapshotResult, error) {
	return s.ops.Bash(ctx, h, command, o)
}

// CopyIn copies src, a host file or folder (or a tar stream on in when src
// is "-"), to dst in the sandbox, and snapshots it.
func (s *Sandboxes) CopyIn(ctx context.Context, h *api.Handle, src string, in io.Reader, dst string) (*api.CopyResult, *api.SnapshotResult, error) {
	return s.ops.CopyIn(ctx, h, src, in, dst)
}

// CopyOut copies src, a file or folder in the sandbox, to dst on the host
// (or as a tar stream to w when dst is "-").
func (s *Sandboxes) CopyOut(ctx context.Context, h *api.Handle, src, dst string, w io.Writer) (*api.CopyResult, error) {
	return s.files.CopyOut(ctx, h, src, dst, w)
}

// Create makes a sandbox: branch litterbox/<slug> at HEAD (or opts.From)
// and a hardened container holding a copy of it, set up (see
// provision.Create).
func (s *Sandboxes) Create(ctx context.Context, r *api.Repo, name string, opts api.CreateOptions) (*api.Created, error) {
	return s.ops.Create(ctx, r, name, opts)
}

// Fork creates the sandbox newName from the tip of name's branch.
func (s *Sandboxes) Fork(ctx context.Context, r *api.Repo, name, newName string, opts api.CreateOptions) (*api.Forked, error) {
	return s.ops.Fork(ctx, r, name, newName, opts)
}

// History lists the commits of a sandbox's branch since its base, newest
// first (litterbox log).
func (s *Sandboxes) History(ctx context.Context, r *api.Repo, name string) (*api.History, error) {
	return s.review.History(ctx, r, name)
}

// Diff writes the sandbox's changes against its base to w.
func (s *Sandboxes) Diff(ctx context.Context, r *api.Repo, name string, opts git.DiffOptions, w io.Writer) (*api.DiffResult, error) {
	return s.review.Diff(ctx, r, name, opts, w)
}

// Apply puts the sandbox's changes into the working tree, uncommitted, and
// keeps the sandbox (see review.Apply); at, when set, is the commit a
// review showed, which it applies or refuses.
func (s *Sandboxes) Apply(ctx context.Context, r *api.Repo, name, at string) (*api.ApplyResult, error) {
	return s.ops.Apply(ctx, r, name, at)
}

// Merge merges a sandbox's branch into the current branch, then deletes the
// sandbox (see review.Merge); at, when set, is the commit a review showed,
// which it merges or refuses.
func (s *Sandboxes) Merge(ctx context.Context, r *api.Repo, name, at string) (*api.MergeResult, error) {
	return s.ops.Merge(ctx, r, name, at)
}

// ConfigRole says what the file at path p decides, when it is one that
// steers git or litterbox; "" for any other file.
func ConfigRole(p string) string { return review.ConfigRole(p) }

// Pause freezes a sandbox's processes, keeping all its state (see
// pause.Pause).
func (s *Sandboxes) Pause(ctx context.Context, r *api.Repo, name string, force bool) (api.Outcome, error) {
	return s.ops.Pause(ctx, r, name, force)
}

// Resume thaws a paused sandbox.
func (s *Sandboxes) Resume(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
	return s.ops.Resume(ctx, r, name)
}

// PauseAll pauses every sandbox of r, or of every repository when r is nil.
func (s *Sandboxes) PauseAll(ctx context.Context, r *api.Repo, force bool) ([]api.Outcome, error) {
	return s.ops.PauseAll(ctx, r, force)
}

// ResumeAll resumes every sandbox of r, or of every repository when r is
// nil.
func (s *Sandboxes) ResumeAll(ctx context.Context, r *api.Repo) ([]api.Outcome, error) {
	return s.ops.ResumeAll(ctx, r)
}

// Wake marks activity on h's sandbox and undoes an idle pause (see
// pause.Wake); every MCP call starts with it.
func (s *Sandboxes) Wake(ctx context.Context, h *api.Handle) (bool, error) {
	return s.pause.Wake(ctx, h)
}

// SweepIdle pauses r's sandboxes that have been idle (see pause.SweepIdle).
func (s *Sandboxes) SweepIdle(ctx context.Context, r *api.Repo, using ...string) ([]string, time.Duration) {
	return s.pause.SweepIdle(ctx, r, using...)
}

// WatchIdle sweeps r's idle sandboxes until ctx ends (see pause.WatchIdle).
func (s *Sandboxes) WatchIdle(ctx context.Context, r *api.Repo) { s.pause.WatchIdle(ctx, r) }

// Doctor checks what litterbox needs (the engine, the image, git, the
// repository dir is in, disk space); every problem is a check.
func (s *Sandboxes) Doctor(ctx context.Context, dir string) []api.Check {
	return s.doctor.Run(ctx, dir)
}

// ContainerPath turns a path an agent gave into a clean absolute path in
// the container (see core.ContainerPath).
func ContainerPath(p string) (string, error) { return core.ContainerPath(p) }

// Log is the service's log, which a front end may redirect.
func (s *Sandboxes) Log() *log.Logger { return s.c.Log }

// Exec runs a command in a running sandbox, in /src, as the sandbox user, and
// returns its exit code. Only failures to run it at all are errors.
func (s *Sandboxes) Exec(ctx context.Context, r *api.Repo, name string, o api.ExecOptions) (int, error) {
	return s.ops.Exec(ctx, r, name, o)
}
