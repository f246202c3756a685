package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

// How work reaches git (DESIGN.md, "Snapshots"): after every mutation the
// scanner inside the container reports what changed in /src since the last
// snapshot, the host compares that with the tip of litterbox/<slug> and, only
// when something differs, writes one commit with git fast-import. Git runs
// only on the host and only moves the sandbox's own ref: the user's working
// tree, index, HEAD, hooks and signing config are never involved. The cost
// follows the change: the scan walks /src but reads and sends only changed
// files, and git reads only the trees of the directories involved.

// DefaultMaxFileSize is the largest file a snapshot commits; larger ones are
// skipped and named (LITTERBOX_SNAPSHOT_MAX_FILE_SIZE overrides it, in bytes).
const DefaultMaxFileSize = 50 << 20

// SnapshotResult says what a snapshot committed to the sandbox's branch.
type SnapshotResult struct {
	Committed bool      `json:"committed"`
	Commit    string    `json:"commit,omitempty"`
	Skipped   []Skipped `json:"skipped,omitempty"` // files left out, never silently
}

// Skipped is a file a snapshot could not commit, with the reason.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// snapshotAuthor is the identity of snapshot and milestone commits: the
// agent's work, recognisable in the user's history once merged.
const snapshotAuthor = "Litterbox <litterbox@localhost>"

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to litterbox/<slug>, with message as the commit message, and only
// when something changed. One snapshot per sandbox runs at a time, across
// processes. A snapshot cut short (a killed process) leaves the branch at a
// whole commit; the next one catches up, because it compares with the branch.
func (s *Service) Snapshot(ctx context.Context, h *Handle, message string) (*SnapshotResult, error) {
	opts := s.scanOptions(ctx, h)
	sc, err := s.scan(ctx, h, opts, nil)
	if err != nil {
		return nil, err
	}
	return s.commitScan(ctx, h, sc, opts, message)
}

// scanOptions are the options of a plain scan of h: since its last stamp.
func (s *Service) scanOptions(ctx context.Context, h *Handle) ScanOptions {
	return ScanOptions{
		Root:     Workdir,
		Since:    readSince(sincePath(h)),
		Excludes: s.excludes(ctx, h.Repo),
		MaxSize:  maxFileSize(),
	}
}

func sincePath(h *Handle) string { return sinceFile(h.Repo, h.Slug) }

func sinceFile(r *Repo, slug string) string { return filepath.Join(r.stateDir(slug), "since") }

// commitScan turns a scan into a commit. Scans run without the lock, so two
// calls can scan at once; under the lock, a scan older than the last one
// committed is replaced by a fresh one, so stale content never overwrites
// newer. opts are the options sc was scanned with.
func (s *Service) commitScan(ctx context.Context, h *Handle, sc *scanned, opts ScanOptions, message string) (*SnapshotResult, error) {
	unlock, err := lockState(ctx, h.Repo.stateDir(h.Slug))
	if err != nil {
		return nil, err
	}
	defer unlock()

	// The stamp is read again under the lock: another call may have
	// committed a newer scan since this one began.
	opts.Since = readSince(sincePath(h))
	if sc.meta.Start < opts.Since {
		if sc, err = s.scan(ctx, h, opts, nil); err != nil {
			return nil, err
		}
	}
	res := &SnapshotResult{Skipped: sc.meta.Skipped}
	if len(sc.files) == 0 && len(sc.meta.Dirs) == 0 && len(sc.meta.IgnoredChanged) == 0 {
		// Nothing changed: no git, and no new stamp either, since nothing
		// carries a time between the old stamp and this scan's.
		return res, nil
	}

	ref := BranchRef(h.Slug)
	tip, ok, err := h.Repo.Git.ResolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newError(ErrNotFound, "the branch %s%s of sandbox '%s' is gone, so its changes cannot be recorded. Ask the user to check `litterbox list`.", BranchPrefix, h.Slug, h.Slug)
	}
	trees, err := h.Repo.Git.Trees(ctx, tip, sc.dirsToRead())
	if err != nil {
		return nil, err
	}
	// Directories that are new to the branch (made, or moved in with old
	// times), and ignored files the branch tracks anyway, need a second,
	// wider scan.
	if full, paths := sc.followUps(trees); len(full) > 0 || len(paths) > 0 {
		opts.Full, opts.Paths = full, paths
		if sc, err = s.scan(ctx, h, opts, nil); err != nil {
			return nil, err
		}
		res.Skipped = sc.meta.Skipped
		if more := missing(trees, sc.dirsToRead()); len(more) > 0 {
			extra, err := h.Repo.Git.Trees(ctx, tip, more)
			if err != nil {
				return nil, err
			}
			for d, t := range extra {
				trees[d] = t
			}
		}
	}

	if changes := sc.changes(trees); len(changes) > 0 {
		id, err := h.Repo.Git.Commit(ctx, git.CommitSpec{
			Ref: ref, Parent: tip, Message: message, Author: snapshotAuthor,
			When: time.Now(), Changes: changes,
		})
		if err != nil {
			return nil, err
		}
		res.Committed, res.Commit = true, id
	}
	return res, writeSince(h.Repo, h.Slug, sc.meta.Start)
}

// scanned is a parsed scan stream.
type scanned struct {
	files map[string]git.Change
	meta  ScanMeta
	run   *RunResult // set when the scan ran a command first
}

// dirsToRead are the directories whose trees the comparison needs.
func (sc *scanned) dirsToRead() []string {
	set := map[string]bool{}
	for p := range sc.files {
		set[parentDir(p)] = true
	}
	for d := range sc.meta.Dirs {
		set[d] = true
	}
	for _, p := range sc.meta.IgnoredChanged {
		set[parentDir(p)] = true
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func missing(trees map[string]map[string]git.TreeEntry, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if _, ok := trees[d]; !ok {
			out = append(out, d)
		}
	}
	return out
}

// followUps finds directories the branch does not have as directories (so
// their files may carry old times and went unreported), and ignored changed
// files the branch tracks.
func (sc *scanned) followUps(trees map[string]map[string]git.TreeEntry) (full, paths []string) {
	for d, listing := range sc.meta.Dirs {
		t := trees[d]
		if t == nil {
			continue // new itself: an ancestor is reported in full
		}
		for _, e := range listing {
			name, ok := strings.CutSuffix(e, "/")
			if !ok {
				continue
			}
			if te, ok := t[name]; !ok || (!te.IsTree() && te.Mode != "160000") {
				full = append(full, path.Join(d, name))
			}
		}
	}
	for _, p := range sc.meta.IgnoredChanged {
		if te, ok := trees[parentDir(p)][path.Base(p)]; ok && !te.IsTree() {
			paths = append(paths, p)
		}
	}
	return full, paths
}

// changes compares the scan with the branch's trees.
func (sc *scanned) changes(trees map[string]map[string]git.TreeEntry) []git.Change {
	var out []git.Change
	for p, ch := range sc.files {
		if te, ok := trees[parentDir(p)][path.Base(p)]; ok && te.Mode == ch.Mode && te.ID == git.BlobID(ch.Content) {
			continue
		}
		out = append(out, ch)
	}
	for d, listing := range sc.meta.Dirs {
		kinds := make(map[string]byte, len(listing)) // 'f' file, 'd' directory
		for _, e := range listing {
			if name, ok := strings.CutSuffix(e, "/!"); ok {
				kinds[name] = 'd'
			} else if name, ok := strings.CutSuffix(e, "/"); ok {
				kinds[name] = 'd'
			} else {
				kinds[e] = 'f'
			}
		}
		for name, te := range trees[d] {
			kind, present := kinds[name]
			isDir := te.IsTree() || te.Mode == "160000"
			if !present || (isDir && kind == 'f') || (!isDir && kind == 'd') {
				out = append(out, git.Change{Path: path.Join(d, name), Delete: true})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Delete && !out[j].Delete
	})
	return out
}

func parentDir(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// scan runs the scanner in the container, installing it first when needed.
// A non-nil run is a RunSpec as JSON: the scanner runs it before scanning.
func (s *Service) scan(ctx context.Context, h *Handle, o ScanOptions, run io.Reader) (*scanned, error) {
	bin, err := scannerBinary()
	if err != nil {
		return nil, err
	}
	args := []string{bin.inContainer, "scan-internal", "--root", o.Root, "--since", strconv.FormatInt(o.Since, 10), "--max-size", strconv.FormatInt(o.MaxSize, 10)}
	for _, d := range o.Full {
		args = append(args, "--full", d)
	}
	for _, p := range o.Paths {
		args = append(args, "--path", p)
	}
	for _, e := range o.Excludes {
		args = append(args, "--exclude", e)
	}
	if run != nil {
		// Read the spec now: a retry after installing needs it again.
		data, err := io.ReadAll(run)
		if err != nil {
			return nil, err
		}
		args = append(args, "--run")
		run = bytes.NewReader(data)
	}
	spec := docker.ExecSpec{Container: h.Container, Cmd: args}
	if run != nil {
		spec.Stdin = run
	}
	res, err := s.Docker.Exec(ctx, spec)
	// A container without the scanner (new, or made by another build) fails
	// the exec with 126 or 127 before anything runs: install, then retry.
	if code := runner.ExitCode(err); code == 126 || code == 127 {
		if ierr := s.installScanner(ctx, h, bin); ierr != nil {
			return nil, ierr
		}
		if r, ok := spec.Stdin.(*bytes.Reader); ok {
			r.Seek(0, io.SeekStart)
		}
		res, err = s.Docker.Exec(ctx, spec)
	}
	if err != nil {
		return nil, s.execError(h, "scan /src for changes", err)
	}
	return parseScan(res.Stdout)
}

// execError turns a failed docker exec into an error that says what to do.
func (s *Service) execError(h *Handle, what string, err error) error {
	switch {
	case errors.Is(err, docker.ErrPaused):
		return pausedError(h.Slug)
	case errors.Is(err, docker.ErrNoSuchContainer):
		return notFound(h.Slug)
	case errors.Is(err, docker.ErrNotRunning):
		return stoppedError(h.Slug)
	}
	return fmt.Errorf("%s in sandbox '%s': %w", what, h.Slug, err)
}

// parseScan reads a scan stream. Names are checked, never trusted: an entry
// that is absolute, climbs with "..", or holds a .git component is dropped
// and reported.
func parseScan(out []byte) (*scanned, error) {
	sc := &scanned{files: map[string]git.Change{}}
	tr := tar.NewReader(bytes.NewReader(out))
	gotMeta := false
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read scan: %w", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read scan: %w", err)
		}
		switch hdr.Name {
		case runStdoutName:
			sc.ensureRun().Stdout = string(data)
			continue
		case runStderrName:
			sc.ensureRun().Stderr = string(data)
			continue
		case runResultName:
			out, errOut := sc.ensureRun().Stdout, sc.run.Stderr
			if err := json.Unmarshal(data, sc.run); err != nil {
				return nil, fmt.Errorf("read command result: %w", err)
			}
			sc.run.Stdout, sc.run.Stderr = out, errOut
			continue
		}
		if hdr.Name == scanMetaName {
			if err := json.Unmarshal(data, &sc.meta); err != nil {
				return nil, fmt.Errorf("read scan meta: %w", err)
			}
			gotMeta = true
			continue
		}
		if !safeRelPath(hdr.Name) {
			sc.meta.Skipped = append(sc.meta.Skipped, Skipped{Path: hdr.Name, Reason: "unsafe path"})
			continue
		}
		ch := git.Change{Path: hdr.Name, Mode: "100644", Content: data}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			ch.Mode, ch.Content = "120000", []byte(hdr.Linkname)
		case tar.TypeReg:
			if hdr.Mode&0o111 != 0 {
				ch.Mode = "100755"
			}
		default:
			continue
		}
		sc.files[hdr.Name] = ch
	}
	if !gotMeta {
		return nil, errors.New("read scan: the stream ended early (no meta entry)")
	}
	// The meta is as untrusted as the names: the agent runs as the
	// scanner's uid and can tamper with it. Its paths go back to the
	// scanner (--full, --path) and into git queries, so they get the same
	// checks; a listing entry is one name, never a path.
	for d, listing := range sc.meta.Dirs {
		if d != "" && !safeRelPath(d) {
			delete(sc.meta.Dirs, d)
			continue
		}
		kept := listing[:0]
		for _, e := range listing {
			if safeListingEntry(e) {
				kept = append(kept, e)
			}
		}
		sc.meta.Dirs[d] = kept
	}
	ignored := sc.meta.IgnoredChanged[:0]
	for _, p := range sc.meta.IgnoredChanged {
		if safeRelPath(p) {
			ignored = append(ignored, p)
		} else {
			sc.meta.Skipped = append(sc.meta.Skipped, Skipped{Path: p, Reason: "unsafe path"})
		}
	}
	sc.meta.IgnoredChanged = ignored
	return sc, nil
}

func (sc *scanned) ensureRun() *RunResult {
	if sc.run == nil {
		sc.run = &RunResult{}
	}
	return sc.run
}

// safeListingEntry checks one entry of ScanMeta.Dirs: "name", "name/" or
// "name/!", where name is a single path component.
func safeListingEntry(e string) bool {
	name, ok := strings.CutSuffix(e, "/!")
	if !ok {
		name = strings.TrimSuffix(e, "/")
	}
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

func safeRelPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || path.Clean(p) != p {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." || c == "." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}

// scannerFile is the static binary copied into containers to scan them.
type scannerFile struct {
	host        string // path on the host
	inContainer string // path inside the container, unique per build
}

var (
	scannerInstalls sync.Map // container -> *sync.Mutex
	scannerOnce     sync.Once
	scannerBin      scannerBinaryInfo
)

type scannerBinaryInfo struct {
	bin scannerFile
	err error
}

// scannerBinary finds the binary to copy into containers: LITTERBOX_SCANNER,
// else this executable. It must be statically linked, since busybox has no C
// library; `make build` builds litterbox with CGO_ENABLED=0 for that.
func scannerBinary() (scannerFile, error) {
	scannerOnce.Do(func() {
		p := os.Getenv("LITTERBOX_SCANNER")
		if p == "" {
			var err error
			if p, err = os.Executable(); err != nil {
				scannerBin.err = err
				return
			}
		}
		fi, err := os.Stat(p)
		if err != nil {
			scannerBin.err = fmt.Errorf("snapshot scanner: %w", err)
			return
		}
		f, err := elf.Open(p)
		if err != nil {
			scannerBin.err = fmt.Errorf("snapshot scanner %s is not a Linux executable (%v): point LITTERBOX_SCANNER at a static linux build of litterbox (CGO_ENABLED=0 GOOS=linux go build)", p, err)
			return
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				scannerBin.err = fmt.Errorf("snapshots need a statically linked litterbox, but %s is dynamically linked: build it with CGO_ENABLED=0 (`make build` does), or point LITTERBOX_SCANNER at such a build", p)
				return
			}
		}
		scannerBin.bin = scannerFile{host: p, inContainer: fmt.Sprintf("%s/lb-%x-%x", RunDir, fi.Size(), fi.ModTime().UnixNano())}
	})
	return scannerBin.bin, scannerBin.err
}

// installScanner copies the scanner into the container's root-owned RunDir,
// where the sandbox user can run it but not replace it. The copy lands under
// a temporary name and is renamed, so a concurrent install is harmless. The
// installs of one container still run one at a time, and one that finds the
// scanner in place writes nothing: RunDir is a small tmpfs (runDirSize), and
// the first tool calls of a new sandbox, made at once, each found the
// scanner missing and wrote a 16 MiB copy of their own until it was full.
func (s *Service) installScanner(ctx context.Context, h *Handle, bin scannerFile) error {
	mu, _ := scannerInstalls.LoadOrStore(h.Container, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	f, err := os.Open(bin.host)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = s.Docker.Exec(ctx, docker.ExecSpec{
		Container: h.Container, User: "0", Stdin: f,
		Cmd: []string{"sh", "-c", `set -e; if [ -x "$1" ]; then cat >/dev/null; exit 0; fi; t=$(mktemp "$1.XXXXXX"); cat >"$t"; chmod 0755 "$t"; mv -f "$t" "$1"`, "sh", bin.inContainer},
	})
	if err != nil {
		return s.execError(h, "install the snapshot scanner", err)
	}
	return nil
}

// excludes are the repository-wide ignore patterns git would use besides
// .gitignore files: info/exclude and core.excludesFile.
func (s *Service) excludes(ctx context.Context, r *Repo) []string {
	var lines []string
	add := func(p string) {
		data, err := os.ReadFile(p)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	add(s.excludesFile(ctx, r))
	add(filepath.Join(r.Git.CommonDir, "info", "exclude"))
	return lines
}

var excludesFiles sync.Map // common dir -> path

func (s *Service) excludesFile(ctx context.Context, r *Repo) string {
	if p, ok := excludesFiles.Load(r.Git.CommonDir); ok {
		return p.(string)
	}
	res, err := s.Runner.Run(ctx, r.Git.Cmd("config", "--path", "--get", "core.excludesFile"))
	p := strings.TrimSpace(string(res.Stdout))
	if err != nil || p == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			p = filepath.Join(x, "git", "ignore")
		} else if home, herr := os.UserHomeDir(); herr == nil {
			p = filepath.Join(home, ".config", "git", "ignore")
		}
	}
	excludesFiles.Store(r.Git.CommonDir, p)
	return p
}

func maxFileSize() int64 {
	if v, err := strconv.ParseInt(os.Getenv("LITTERBOX_SNAPSHOT_MAX_FILE_SIZE"), 10, 64); err == nil && v > 0 {
		return v
	}
	return DefaultMaxFileSize
}

func readSince(p string) int64 {
	data, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// writeSince records the scan stamp, only after the branch holds the scan's
// changes: a crash before it makes the next scan look further back, which
// costs time but loses nothing.
func writeSince(r *Repo, slug string, n int64) error {
	if err := os.MkdirAll(r.stateDir(slug), 0o755); err != nil {
		return err
	}
	p := sinceFile(r, slug)
	tmp := fmt.Sprintf("%s.%d", p, os.Getpid())
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(n, 10)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// lockState takes the sandbox's writer lock, an flock on a file in its state
// directory, so snapshots from concurrent calls and from several processes
// run one at a time. It waits until ctx is done.
func lockState(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
