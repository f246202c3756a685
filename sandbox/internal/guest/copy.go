package guest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// Archive is the tree of a commit being archived into memory.
type Archive struct {
	pipe *bufferedPipe
	done chan struct{} // closed once git archive has ended
}

// StartArchive starts archiving commit's tree, then the extra files, into
// a buffered pipe.
func StartArchive(ctx context.Context, r *api.Repo, commit string, extra []git.ArchiveFile) *Archive {
	a := &Archive{pipe: newBufferedPipe(), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		err := r.Git.TreeArchive(ctx, commit, a.pipe, extra...)
		a.pipe.CloseWithError(err)
	}()
	return a
}

// CopyExitCode is the exit code the copy step uses for its own failure, told
// apart from the setup command's by CopyMarker on stderr.
const (
	CopyExitCode = 254
	CopyMarker   = "litterbox: copying the repository into /src failed"
)

// Tools are the programs of the guest contract (docs/architecture.md)
// that create and snapshots run, besides sh, and sleep (the main process:
// without it the container does not start). CheckScript, run first in the
// copy step's shell, names those missing with guestMarker and exits
// guestExitCode: one exec checks the image, at no extra cost.
var Tools = []string{"tar", "stat", "cat", "mktemp", "chmod", "mv", "rm"}

const (
	guestExitCode = 253
	guestMarker   = "litterbox: the image lacks:"
)

// CheckScript is the guest contract's check, run first in the copy step's
// shell (and by doctor). It ends with "; ", so the copy's own
// " tar -x -f - " still reads as it did to the test suite's docker
// stand-ins.
var CheckScript = `m=; for c in ` + strings.Join(Tools, " ") + `; do command -v "$c" >/dev/null 2>&1 || m="$m $c"; done; ` +
	`[ -z "$m" ] || { echo "` + guestMarker + `$m" >&2; exit ` + fmt.Sprint(guestExitCode) + `; }; `

// Missing reads the tools CheckScript found missing off the exit code
// and stderr of the shell that ran it; lacks is false when it found none.
func Missing(exit int, stderr string) (missing []string, lacks bool) {
	_, rest, found := strings.Cut(stderr, guestMarker)
	if exit != guestExitCode || !found {
		return nil, false
	}
	rest, _, _ = strings.Cut(rest, "\n")
	return strings.Fields(rest), true
}

// StampMarker leads the line of CopyAndSetup's stdout that holds the stamp.
const StampMarker = "litterbox-stamp "

// TakeStamp removes the stamp line from the head of stdout and returns the
// stamp in unix nanoseconds, or 0 when there is none.
func TakeStamp(stdout *bytes.Buffer) int64 {
	line, rest, _ := strings.Cut(stdout.String(), "\n")
	value, ok := strings.CutPrefix(line, StampMarker)
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

// CopyError is a failed copy of the repository into the container.
type CopyError struct{ err error }

// Error is the copy's failure.
func (e *CopyError) Error() string { return e.err.Error() }

// Unwrap is the failure itself.
func (e *CopyError) Unwrap() error { return e.err }

// CopyAndSetup extracts the archive into /src and runs the setup command, in
// one exec: a round trip saved on every create.
func (g *Guest) CopyAndSetup(ctx context.Context, a *Archive, ref provider.Ref, image string, setup []string, stdout, stderr *bytes.Buffer) error {
	return g.copyAndSetup(ctx, a, ref, image, Handoff{}, "", nil, setup, stdout, stderr)
}

// Handoff is a line the copy step takes on its stdin before the archive,
// never in an argument: Script, a shell line, reads it (and must read no
// more). The zero Handoff hands nothing.
type Handoff struct{ Line, Script string }

// CopyHandingAndSetup is CopyAndSetup whose copy step first takes h.
func (g *Guest) CopyHandingAndSetup(ctx context.Context, a *Archive, ref provider.Ref, image string, h Handoff, setup []string, stdout, stderr *bytes.Buffer) error {
	return g.copyAndSetup(ctx, a, ref, image, h, "", nil, setup, stdout, stderr)
}

// ReplaceAndSetup is CopyAndSetup into a /src that holds another tree (a
// pooled sandbox of sandbox slug, filled from another commit): everything
// in /src, dotfiles included, is removed first, in the same exec, so that
// /src is exactly the archive's tree; the setup sees LITTERBOX_SANDBOX, as
// SetupOnly's.
func (g *Guest) ReplaceAndSetup(ctx context.Context, a *Archive, ref provider.Ref, image, slug string, setup []string, stdout, stderr *bytes.Buffer) error {
	return g.copyAndSetup(ctx, a, ref, image, Handoff{}, `(cd "$1" && rm -rf -- ./* ./.[!.]* ./..?*) || `+copyFailed+"\n", core.SandboxEnv(slug), setup, stdout, stderr)
}

// copyFailed ends the copy step's shell with the copy's own failure.
var copyFailed = `{ echo "` + CopyMarker + `" >&2; exit ` + fmt.Sprint(CopyExitCode) + `; }`

// copyAndSetup runs the copy step, after the handoff h and clear (a shell
// line, "" for none), with env added to the container's.
func (g *Guest) copyAndSetup(ctx context.Context, a *Archive, ref provider.Ref, image string, h Handoff, clear string, env, setup []string, stdout, stderr *bytes.Buffer) error {
	// After the copy, and before setup, the file system's clock is read off
	// a new file's ctime: the first snapshot then looks only at what changed
	// since, setup included, instead of at the whole tree.
	var stdin io.Reader = a.pipe
	if h.Script != "" {
		stdin = io.MultiReader(strings.NewReader(h.Line+"\n"), a.pipe)
	}
	script := CheckScript + h.Script + clear + `tar -x -f - -C "$1" || ` + copyFailed + `
s=/tmp/.litterbox-stamp; : >"$s" && echo "` + StampMarker + `$(stat -c %z "$s")"; rm -f "$s"
shift; [ $# -eq 0 ] || exec "$@"`
	kind := runner.Work
	if len(setup) > 0 {
		kind = runner.Stream // the user's setup command runs as long as it needs
	}
	_, err := g.Exec(ctx, provider.ExecRequest{
		Kind:  kind,
		Ref:   ref,
		Env:   env,
		Cmd:   append([]string{"sh", "-c", script, "sh", api.Workdir}, setup...),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
	})
	// tar stops at the archive's end-of-archive blocks, or at an end of
	// input that falls between two files, and succeeds either way: only an
	// archive that git finished whole was copied whole. The writer never
	// waits for the reader, so this wait ends with git archive.
	<-a.done
	a.pipe.CloseRead()
	aerr := a.pipe.writerErr()
	missing, lacks := Missing(runner.ExitCode(err), stderr.String())
	switch {
	case lacks:
		return core.NewError(api.ErrImage, "The image %s lacks what litterbox needs in a sandbox: %s (see the guest contract, docs/architecture.md). Use an image that has them, such as one built FROM busybox.",
			image, strings.Join(missing, ", "))
	case runner.ExitCode(err) == CopyExitCode && strings.Contains(stderr.String(), CopyMarker):
		return &CopyError{fmt.Errorf("%w: %s", err, core.CapText(stderr.String()))}
	case aerr != io.EOF && (err == nil || runner.ExitCode(err) > 0):
		return &CopyError{fmt.Errorf("archive the tree: %w", aerr)}
	}
	return err
}

// SetupOnly runs the setup command in a sandbox whose /src already holds the
// copy (a pooled one), after extracting files (the bootstrap) into /src, in
// the same exec.
func (g *Guest) SetupOnly(ctx context.Context, ref provider.Ref, slug string, files []git.ArchiveFile, setup []string, stdout, stderr *bytes.Buffer) error {
	if len(setup) == 0 && len(files) == 0 {
		return nil
	}
	req := provider.ExecRequest{Kind: runner.Stream, Ref: ref, Cmd: setup, Env: core.SandboxEnv(slug), Stdout: stdout, Stderr: stderr}
	if len(files) > 0 {
		var tarred bytes.Buffer
		if err := git.WriteFiles(&tarred, files); err != nil {
			return err
		}
		script := `tar -x -f - -C "$1" || ` + copyFailed + `
shift; [ $# -eq 0 ] || exec "$@"`
		req.Cmd = append([]string{"sh", "-c", script, "sh", api.Workdir}, setup...)
		req.Stdin = &tarred
	}
	_, err := g.Exec(ctx, req)
	if runner.ExitCode(err) == CopyExitCode && strings.Contains(stderr.String(), CopyMarker) {
		return &CopyError{fmt.Errorf("%w: %s", err, core.CapText(stderr.String()))}
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
