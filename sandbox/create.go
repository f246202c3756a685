package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

// DefaultSetup is the startup command run once after the copy (FR1.7).
var DefaultSetup = []string{"echo", "hello", "world"}

// CreateOptions tune Create. The zero value is the documented default.
type CreateOptions struct {
	// Setup is the startup command, as argv; nil means the configuration's
	// (see Config), which defaults to DefaultSetup.
	Setup []string
	// Config is the sandbox configuration; nil means LoadConfig's.
	Config *Config
	// Progress, when set, is told each step as it starts.
	Progress func(step string)
	// FromBranch recreates a sandbox whose container is gone from its
	// existing branch: the container holds the branch tip, the branch is
	// kept (never made, never removed on rollback), and the base is the
	// merge base of HEAD and the branch.
	FromBranch bool
}

// Created is the result of Create.
type Created struct {
	Sandbox
	// SetupOutput is what the startup command printed (stdout then stderr).
	SetupOutput string `json:"setupOutput"`
	// Uncommitted is set when the working tree had uncommitted changes to
	// tracked files: the sandbox holds HEAD, so those changes are not in it.
	Uncommitted bool `json:"uncommittedChangesNotCopied,omitempty"`
	// Ports are the named ports with their host URLs.
	Ports []PortInfo `json:"ports,omitempty"`
	// Services are the services started because of autostart.
	Services []ServiceStatus `json:"services,omitempty"`
}

// Create makes a sandbox: it validates the name before any git or docker call,
// claims the branch litterbox/<slug> at HEAD (atomically, so a name that is
// taken is refused), starts the container on its own network, copies HEAD
// into /src and runs the startup command once. Any failure before the startup
// command removes everything made so far. A failing startup command leaves
// the sandbox in place, marked failed-setup, and returns ErrSetupFailed.
func (s *Service) Create(ctx context.Context, r *Repo, name string, opts CreateOptions) (*Created, error) {
	slug, err := Slugify(name)
	if err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string) {}
	}

	head, err := r.Git.Head(ctx)
	if err != nil {
		return nil, err
	}
	// start is the commit copied into /src; head is the base label.
	start := head
	if opts.FromBranch {
		if start, head, err = s.recoverStart(ctx, r, slug); err != nil {
			return nil, err
		}
	}
	// The configuration, the one of the commit copied in, is checked
	// before anything is made.
	cfg := opts.Config
	if cfg == nil {
		if cfg, err = s.LoadConfig(ctx, r, start); err != nil {
			return nil, err
		}
	}
	setup := opts.Setup
	if setup == nil {
		setup = cfg.Setup
	}
	container := r.ContainerName(slug)
	out := &Created{Sandbox: Sandbox{
		Name: slug, Status: StatusActive, Branch: BranchPrefix + slug,
		Container: container, Repo: r.Root(), Base: head, Created: time.Now().UTC(),
	}}

	// Whether tracked files are dirty is only reported, so it runs beside
	// the real work.
	var dirtyWG sync.WaitGroup
	if !opts.FromBranch {
		dirtyWG.Add(1)
		go func() {
			defer dirtyWG.Done()
			out.Uncommitted, _ = r.Git.DirtyTracked(ctx)
		}()
	}
	defer dirtyWG.Wait()

	// Archiving only reads the repository, so it runs while the branch,
	// network and container are made, into memory, instead of after them.
	archCtx, cancelArchive := context.WithCancel(ctx)
	defer cancelArchive()
	archive := s.startArchive(archCtx, r, start)

	var undo undoStack
	fail := func(err error) (*Created, error) {
		cancelArchive()
		dirtyWG.Wait()
		return nil, undo.run(ctx, s, err)
	}

	// The branch and the network do not depend on each other.
	progress("creating branch " + out.Branch + " and network")
	labels := s.labels(r, slug, head)
	var branchErr, netErr error
	netExisted := false
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if !opts.FromBranch {
			branchErr = r.Git.CreateRef(ctx, BranchRef(slug), head, "litterbox: create sandbox "+slug)
		}
	}()
	go func() {
		defer wg.Done()
		if cfg.Network == NetworkNone {
			return
		}
		netErr = s.Docker.NetworkCreate(ctx, container, labels)
		if netErr != nil && strings.Contains(runner.Stderr(netErr), "already exists") {
			netErr, netExisted = nil, true
		}
	}()
	wg.Wait()
	removeNet := func(ctx context.Context) error { return s.removeNetworks(ctx, r, slug) }
	if netErr == nil && !netExisted && cfg.Network != NetworkNone {
		undo.push("network "+container, removeNet)
	}
	if branchErr != nil {
		if errors.Is(branchErr, git.ErrRefExists) {
			return fail(existsError(slug, "its branch "+out.Branch+" exists"))
		}
		return fail(fmt.Errorf("create branch %s: %w", out.Branch, branchErr))
	}
	if !opts.FromBranch {
		undo.push("branch "+out.Branch, func(ctx context.Context) error { return r.Git.DeleteRef(ctx, BranchRef(slug), head) })
	}
	// Host-side state (the scan stamp, a failed-setup mark) goes with a
	// rolled-back create, unless it was there before (a recovery).
	if _, err := os.Stat(r.stateDir(slug)); os.IsNotExist(err) {
		undo.push("state "+r.stateDir(slug), func(context.Context) error { return os.RemoveAll(r.stateDir(slug)) })
	}
	if netExisted {
		// The branch claim succeeded (or, from a branch, the branch is this
		// sandbox's), so a network of this name is either a leftover of an
		// earlier create of this very sandbox (ours to reuse) or another
		// repository's, whose directory has the same name: never touch that
		// one.
		ours, err := s.Docker.Networks(ctx, s.resourceFilters(r, slug))
		if err != nil {
			return fail(err)
		}
		if len(ours) == 0 {
			return fail(s.nameTaken(ctx, slug, container))
		}
		if !opts.FromBranch {
			// From a branch it is the old container's network: not ours.
			undo.push("network "+container, removeNet)
		}
	}
	if netErr != nil {
		if strings.Contains(runner.Stderr(netErr), "could not find an available, non-overlapping IPv4 address pool") {
			return fail(fmt.Errorf("create network %s: Docker has no address pool left for another network (each sandbox has its own, and Docker's defaults allow about 30). Delete sandboxes you no longer need (`litterbox list --all-repos`), or give Docker more room: \"default-address-pools\": [{\"base\": \"10.213.0.0/16\", \"size\": 26}] in /etc/docker/daemon.json, then restart it", container))
		}
		return fail(fmt.Errorf("create network %s: %w", container, netErr))
	}

	progress("starting container " + container)
	spec := s.runSpec(r, slug, head)
	cfg.apply(&spec)
	if _, err := s.Docker.RunDetached(ctx, spec); err != nil {
		if strings.Contains(runner.Stderr(err), "is already in use") {
			return fail(s.nameTaken(ctx, slug, container))
		}
		// docker run may have created the container before failing to start it.
		undo.push("container "+container, func(ctx context.Context) error { return ignoreMissing(s.Docker.Remove(ctx, container)) })
		return fail(fmt.Errorf("start container %s: %w", container, err))
	}
	undo.push("container "+container, func(ctx context.Context) error { return ignoreMissing(s.Docker.Remove(ctx, container)) })

	extras := s.prepareExtras(ctx, r, container, cfg, out)
	progress("copying " + short(start) + " into " + Workdir + ", then running setup: " + runner.Quote(setup...))
	var so, se bytes.Buffer
	err = s.copyAndSetup(ctx, archive, container, setup, &so, &se)
	if st := takeStamp(&so); st > 0 {
		if werr := writeSince(r, slug, st); werr != nil {
			s.Log.Warn("could not record the scan stamp; the first snapshot will scan all of /src", "err", werr)
		}
	}
	out.SetupOutput = so.String() + se.String()
	if xerr := extras(); xerr != nil {
		return fail(xerr)
	}
	var ce *copyError
	switch {
	case errors.As(err, &ce):
		return fail(fmt.Errorf("copy %s into %s: %w", short(start), Workdir, err))
	case errors.Is(err, docker.ErrPaused), errors.Is(err, docker.ErrNotRunning), errors.Is(err, docker.ErrNoSuchContainer):
		// Docker itself failed the exec (the container was paused, stopped
		// or removed meanwhile): that is no verdict on the setup command,
		// and docker's own words say what happened.
		_, daemon, _ := strings.Cut(runner.Stderr(err), "Error response from daemon:")
		return fail(fmt.Errorf("run setup in %s: docker refused: %s", container, strings.TrimSpace(daemon)))
	case err != nil && (ctx.Err() != nil || errors.Is(err, docker.ErrUnavailable) || runner.ExitCode(err) < 0):
		return fail(fmt.Errorf("run setup: %w", err))
	case err != nil:
		out.Status = StatusFailedSetup
		if merr := markSetupFailed(r, slug, out.SetupOutput); merr != nil {
			s.Log.Warn("could not record failed setup", "sandbox", slug, "err", merr)
		}
		return out, &SetupError{Slug: slug, Command: setup, ExitCode: runner.ExitCode(err), Output: out.SetupOutput}
	}
	// A service that cannot be started leaves a usable sandbox: say so and
	// let the caller start it by hand.
	if out.Services, err = s.autostart(ctx, container, cfg); err != nil {
		s.Log.Warn("could not start services", "sandbox", slug, "err", err)
	}
	dirtyWG.Wait()
	return out, nil
}

// archiveStream is the tree of a commit being archived into memory.
type archiveStream struct {
	pipe *bufferedPipe
}

// startArchive starts archiving commit's tree into a buffered pipe.
func (s *Service) startArchive(ctx context.Context, r *Repo, commit string) *archiveStream {
	a := &archiveStream{pipe: newBufferedPipe()}
	go func() {
		err := r.Git.TreeArchive(ctx, commit, a.pipe)
		a.pipe.CloseWithError(err)
	}()
	return a
}

// copyExitCode is the exit code the copy step uses for its own failure, told
// apart from the setup command's by copyMarker on stderr.
const (
	copyExitCode = 254
	copyMarker   = "litterbox: copying the repository into /src failed"
)

// stampMarker leads the line of copyAndSetup's stdout that holds the stamp.
const stampMarker = "litterbox-stamp "

// takeStamp removes the stamp line from the head of stdout and returns the
// stamp in unix nanoseconds, or 0 when there is none.
func takeStamp(stdout *bytes.Buffer) int64 {
	line, rest, _ := strings.Cut(stdout.String(), "\n")
	value, ok := strings.CutPrefix(line, stampMarker)
	if !ok {
		return 0
	}
	stdout.Reset()
	stdout.WriteString(rest)
	t, err := time.Parse("2006-01-02 15:04:05.999999999 -0700", value)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

// copyError is a failed copy of the repository into the container.
type copyError struct{ err error }

func (e *copyError) Error() string { return e.err.Error() }
func (e *copyError) Unwrap() error { return e.err }

// copyAndSetup extracts the archive into /src and runs the setup command, in
// one docker exec: a round trip saved on every create.
func (s *Service) copyAndSetup(ctx context.Context, a *archiveStream, container string, setup []string, stdout, stderr *bytes.Buffer) error {
	// After the copy, and before setup, the file system's clock is read off
	// a new file's ctime: the first snapshot then looks only at what changed
	// since, setup included, instead of at the whole tree.
	script := `tar -x -f - -C "$1" || { echo "` + copyMarker + `" >&2; exit ` + fmt.Sprint(copyExitCode) + `; }
s=/tmp/.litterbox-stamp; : >"$s" && echo "` + stampMarker + `$(stat -c %z "$s")"; rm -f "$s"
shift; [ $# -eq 0 ] || exec "$@"`
	_, err := s.Docker.Exec(ctx, docker.ExecSpec{
		Container: container,
		Cmd:       append([]string{"sh", "-c", script, "sh", Workdir}, setup...),
		Stdin:     a.pipe, Stdout: stdout, Stderr: stderr,
	})
	a.pipe.CloseRead()
	if err == nil {
		return nil // tar saw the end of the archive, so it got all of it
	}
	if aerr := a.pipe.writerErr(); aerr != nil && aerr != io.EOF && !errors.Is(aerr, io.ErrClosedPipe) {
		return &copyError{fmt.Errorf("archive the tree: %w", aerr)}
	}
	if runner.ExitCode(err) == copyExitCode && strings.Contains(stderr.String(), copyMarker) {
		return &copyError{fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))}
	}
	return err
}

// bufferedPipe is a pipe whose writer never waits for its reader: what is
// written waits in memory until read.
type bufferedPipe struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    bytes.Buffer
	err    error // the writer's end: io.EOF when it finished cleanly
	closed bool  // the reader is gone
}

func newBufferedPipe() *bufferedPipe {
	p := &bufferedPipe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *bufferedPipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, io.ErrClosedPipe
	}
	p.buf.Write(b)
	p.cond.Broadcast()
	return len(b), nil
}

func (p *bufferedPipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.buf.Len() == 0 && p.err == nil {
		p.cond.Wait()
	}
	if p.buf.Len() > 0 {
		return p.buf.Read(b)
	}
	return 0, p.err
}

// CloseWithError ends the writer's side; nil means a clean end.
func (p *bufferedPipe) CloseWithError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		err = io.EOF
	}
	if p.err == nil {
		p.err = err
	}
	p.cond.Broadcast()
}

// CloseRead drops what is unread and makes further writes fail.
func (p *bufferedPipe) CloseRead() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.buf.Reset()
}

func (p *bufferedPipe) writerErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// SetupError is a startup command that failed. The sandbox exists, marked
// failed-setup.
type SetupError struct {
	Slug     string
	Command  []string
	ExitCode int
	Output   string
}

func (e *SetupError) Error() string {
	return e.what() + fmt.Sprintf("\nInspect it with `litterbox shell %s`, or delete it with `litterbox delete %s`.", e.Slug, e.Slug)
}

// AgentMessage is the message for an agent, which has no shell or delete
// command but can use the sandbox with its tools.
func (e *SetupError) AgentMessage() string {
	return e.what() + fmt.Sprintf("\nThe sandbox exists and its tools work: investigate with bash (sandbox=%q), for example by running the setup command yourself, or tell the user.", e.Slug)
}

func (e *SetupError) what() string {
	msg := fmt.Sprintf("Sandbox '%s' was created, but its setup command `%s` failed with exit code %d; it is marked failed-setup.", e.Slug, runner.Quote(e.Command...), e.ExitCode)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += "\nsetup output:\n" + out
	}
	return msg
}

// Is makes errors.Is(err, ErrSetupFailed) hold.
func (e *SetupError) Is(target error) bool { return target == ErrSetupFailed }

// nameTaken explains a container or network name that is already used: by a
// container of this repository left without its branch, or by a sandbox of
// another repository whose directory has the same name (FR1.11 names
// containers after the directory, not its path).
func (s *Service) nameTaken(ctx context.Context, slug, container string) error {
	cts, _ := s.Docker.PS(ctx, []string{LabelSlug + "=" + slug}, labelKeys)
	for _, c := range cts {
		if c.Name == container {
			return newError(ErrExists, "Sandbox '%s' cannot be created: the container name %s is taken by the sandbox '%s' of %s, a repository with the same directory name. Please choose a different name.", slug, container, slug, c.Labels[LabelRepo])
		}
	}
	return existsError(slug, "container or network "+container+" exists")
}

func existsError(slug, why string) error {
	return &Error{Kind: ErrExists,
		Msg:   fmt.Sprintf("Sandbox '%s' already exists (%s). Please choose a different name, or remove it with `litterbox delete %s`.", slug, why, slug),
		Agent: fmt.Sprintf("Sandbox '%s' already exists (%s). Please choose a different name; or, if it is the one you created earlier, keep working in it with sandbox=%q.", slug, why, slug)}
}

const setupFailedFile = "setup-failed"

func markSetupFailed(r *Repo, slug, output string) error {
	dir := r.stateDir(slug)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, setupFailedFile), []byte(output), 0o644)
}

func setupFailed(gitDir, slug string) bool {
	_, err := os.Stat(filepath.Join(gitDir, "litterbox", slug, setupFailedFile))
	return err == nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, docker.ErrNoSuchContainer) {
		return nil
	}
	return err
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// undoStack records how to remove what a create made, so a failure leaves
// nothing behind.
type undoStack struct {
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func(context.Context) error
}

func (u *undoStack) push(what string, fn func(context.Context) error) {
	u.steps = append(u.steps, undoStep{what, fn})
}

// run undoes every step, newest first, and returns cause. Undo runs even when
// ctx was cancelled (an interrupted create must still clean up), with its own
// deadline. Whatever could not be removed is named in the error.
func (u *undoStack) run(ctx context.Context, s *Service, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	var left []string
	for i := len(u.steps) - 1; i >= 0; i-- {
		st := u.steps[i]
		if err := st.fn(ctx); err != nil {
			s.Log.Warn("rollback failed", "what", st.what, "err", err)
			left = append(left, st.what)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w\nrollback could not remove: %s (remove them by hand)", cause, strings.Join(left, ", "))
	}
	return cause
}
