// Package recording records a sandbox's work on its branch: the snapshot
// (the scanner's stream turned into a commit with git fast-import), the
// command an agent runs with the snapshot after it in one exec (Run), the
// calls in flight that a commit names, milestones, the record limit, the
// rewind, and the audit of what a snapshot cannot record.
package recording

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// How work reaches git: after every mutation the
// scanner inside the container reports what changed in /src since the last
// snapshot, the host compares that with the tip of litterbox/<slug> and, only
// when something differs, writes one commit with git fast-import. Git runs
// only on the host and only moves the sandbox's own ref: the user's working
// tree, index, HEAD, hooks and signing config are never involved. The cost
// follows the change: the scan walks /src but reads and sends only changed
// files, and git reads only the trees of the directories involved.

// Recorder records the work of c's sandboxes. It keeps, per process,
// when it last tried to start each container's change journal, each
// repository's global excludes file, the record limit read from each local
// settings file, and what snapshots in flight reserved of the limit.
type Recorder struct {
	*core.Common
	guest    *guest.Guest
	inv      *inventory.Inventory
	services *services.Supervisor

	journalStarts sync.Map // container id -> time.Time of this process's last try
	excludesFiles sync.Map // common dir -> path
	localLimits   sync.Map // localStamp -> int64
	kept          sync.Map // keptKey -> *keptTrees (branch.go)
	prefetches    sync.WaitGroup
	reserved      *reservations
}

// New is the recorder of c's sandboxes: g installs the scanner, inv
// resolves a branch for a rewind, sv restarts the services a rewind
// changed.
func New(c *core.Common, g *guest.Guest, inv *inventory.Inventory, sv *services.Supervisor) *Recorder {
	return &Recorder{Common: c, guest: g, inv: inv, services: sv, reserved: &reservations{m: map[string]int64{}}}
}

func millis(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// snapshotAuthor is the identity of snapshot and milestone commits: the
// agent's work, recognisable in the user's history once merged.
const snapshotAuthor = "Litterbox <litterbox@localhost>"

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to litterbox/<slug>, with message as the commit message, and only
// when something changed. One snapshot per sandbox runs at a time, across
// processes. A snapshot cut short (a killed process) leaves the branch at a
// whole commit; the next one catches up, because it compares with the branch.
func (rec *Recorder) Snapshot(ctx context.Context, h *api.Handle, message string) (*api.SnapshotResult, error) {
	began := time.Now()
	opts := rec.scanOptions(ctx, h)
	sc, err := rec.scan(ctx, h, opts, nil)
	if err != nil {
		return nil, err
	}
	res, err := rec.commitScan(ctx, h, sc, opts, message)
	if res != nil {
		res.Ms = millis(time.Since(began))
	}
	return res, err
}

// scanOptions are the options of a plain scan of h: since its last stamp,
// walking the ignored directories the branch tracks files under. When the
// repository-wide excludes changed since the last snapshot, the whole tree
// is listed, so files they no longer ignore are found.
func (rec *Recorder) scanOptions(ctx context.Context, h *api.Handle) wire.Options {
	st := readRecordState(h)
	since, token := state.ReadSince(sincePath(h))
	o := wire.Options{
		Root:         api.Workdir,
		Since:        since,
		Excludes:     rec.excludes(ctx, h.Repo),
		MaxSize:      cmp.Or(rec.MaxFileSize, api.DefaultMaxFileSize),
		Tracked:      st.Tracked,
		Journal:      !rec.NoJournal,
		JournalToken: token,
		Ignored:      st.Ignored,
		Linked:       st.Linked,
	}
	if st.Excludes != "" && st.Excludes != excludesHash(o.Excludes) {
		o.List = []string{""}
	}
	o.Full = append(o.Full, st.Unread...)
	// Files skipped for the record limit, once they fit (recordlimit.go).
	o.Paths = rec.pendingToAsk(h)
	return o
}

func sincePath(h *api.Handle) string { return state.SinceFile(h.Repo, h.Slug) }

// maxFollowUps bounds the extra scans of one snapshot. Each asks for what
// the one before found missing; a tree that keeps changing under them could
// go on, so after this many the commit holds what is known and the stamp is
// left where it was: the next snapshot looks again.
const maxFollowUps = 3

// commitScan turns a scan into a commit. Scans run without the lock, so two
// calls can scan at once; under the lock, a scan older than the last one
// committed is replaced by a fresh one, so stale content never overwrites
// newer. opts are the options sc was scanned with.
func (rec *Recorder) commitScan(ctx context.Context, h *api.Handle, sc *scanned, opts wire.Options, message string) (*api.SnapshotResult, error) {
	// Its rescans share its share of the record limit (recordlimit.go).
	budget := sc.budget
	defer budget.release()
	defer func() { sc.release() }() // the last scan: each one before is released when replaced
	ctx = withBudget(ctx, budget)
	unlock, err := state.Lock(ctx, h.Repo.StateDir(h.Slug))
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Under the lock, what the scans stored is counted against the record
	// limit, and the files it skipped are kept (recordlimit.go).
	var trees map[string]map[string]git.TreeEntry
	requested := map[string]bool{}
	for _, p := range opts.Paths {
		requested[p] = true
	}
	defer func() { rec.settleRecord(h, budget, sc, trees, requested) }()

	// The stamp is read again under the lock: another call may have
	// committed a newer scan since this one began. Its files with other
	// names go with its journal token.
	opts.Since, opts.JournalToken = state.ReadSince(sincePath(h))
	rs := readRecordState(h)
	if sc.meta.Start < opts.Since {
		opts.Linked = rs.Linked
		sc.release()
		if sc, err = rec.scan(ctx, h, opts, nil); err != nil {
			return nil, err
		}
	}
	if rs.Excludes == "" {
		// The first snapshot of a sandbox: the excludes are taken to be
		// those its copy was made under, so it does not list the whole
		// tree to look for files they no longer ignore.
		rs.Excludes = excludesHash(opts.Excludes)
	}
	res := &api.SnapshotResult{Skipped: sc.meta.Skipped, Torn: sc.meta.Torn}
	if len(sc.files) == 0 && len(sc.meta.Dirs) == 0 && len(sc.meta.IgnoredChanged) == 0 && len(sc.meta.Torn) == 0 &&
		slices.Equal(sc.meta.Ignored, rs.Ignored) && slices.Equal(sc.meta.Linked, rs.Linked) && rs.Excludes == excludesHash(opts.Excludes) {
		// Nothing changed: no git. The stamp need not move, since nothing
		// carries a time between the old stamp and this scan's; but a
		// scan that walked the whole tree and got a journal token (the
		// first after create, or after the watcher restarted) keeps it,
		// with its stamp, as a commit would: the scans after it ask the
		// journal instead of walking the whole tree again.
		if !sc.meta.Partial && sc.meta.Journal != "" && sc.meta.Journal != opts.JournalToken && slices.Equal(rs.Tracked, opts.Tracked) {
			return res, state.WriteSinceToken(h.Repo, h.Slug, sc.meta.Start, sc.meta.Journal)
		}
		return res, nil
	}

	// One git process at most reads the branch: its tip, then its trees
	// (none when the last snapshot kept them, branch.go).
	ref := api.BranchRef(h.Slug)
	branch := rec.branchReader(ctx, h)
	defer branch.close()
	tip, ok, err := branch.tip()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, core.NewError(api.ErrNotFound, "the branch %s%s of sandbox '%s' is gone, so its changes cannot be recorded. Ask the user to check `litterbox list`.", api.BranchPrefix, h.Slug, h.Slug)
	}

	complete := false
	for round := 0; ; round++ {
		// The ignored directories the branch tracks files under, known
		// from the last snapshot unless the scan found other ignored
		// directories or the branch moved.
		if rs.Tip != tip || !slices.Equal(rs.Ignored, sc.meta.Ignored) {
			rs.Tracked, rs.trackedFiles, err = branch.treeFiles(tip, sc.meta.Ignored)
			if err != nil {
				return nil, err
			}
			rs.Tip, rs.Ignored = tip, sc.meta.Ignored
		}
		if trees, err = branch.trees(tip, sc.dirsToRead()); err != nil {
			return nil, err
		}
		fu := sc.followUps(trees, opts, rs)
		if fu.empty() {
			complete = true
			break
		}
		if round == maxFollowUps {
			break
		}
		opts.Full = appendNew(opts.Full, fu.Full...)
		opts.Paths = appendNew(opts.Paths, fu.Paths...)
		opts.List = appendNew(opts.List, fu.List...)
		opts.Tracked = appendNew(opts.Tracked, fu.Tracked...)
		sc.release()
		if sc, err = rec.scan(ctx, h, opts, nil); err != nil {
			return nil, err
		}
		res.Skipped = sc.meta.Skipped
	}

	if err := branch.close(); err != nil {
		return nil, err
	}
	changes, refused, err := rec.checkGitmodules(ctx, h, sc, sc.changes(trees))
	if err != nil {
		return nil, err
	}
	res.Skipped = append(res.Skipped, refused...)
	changes, refused, err = leaveBootstrapped(h, changes)
	if err != nil {
		return nil, err
	}
	res.Skipped = append(res.Skipped, refused...)
	if err := sc.inline(changes); err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		rec.keep(h, tip, trees)
	} else {
		rec.forget(h)
		id, err := h.Repo.Git.Commit(ctx, git.CommitSpec{
			Ref: ref, Parent: tip, Message: withConcurrent(ctx, h, message), Author: snapshotAuthor,
			When: time.Now(), Changes: changes,
		})
		if err != nil {
			return nil, err
		}
		res.Committed, res.Commit = true, id
		res.Files = make([]string, 0, len(changes))
		for _, c := range changes {
			if len(res.Files) == 0 || res.Files[len(res.Files)-1] != c.Path {
				res.Files = append(res.Files, c.Path)
			}
		}
		// A commit of ours adds no tracked directory under an ignored one
		// (files there are recorded only when already tracked), so what
		// was known stays true of it.
		rs.Tip = id
		rec.prefetch(h, id, trees)
	}
	rs.Excludes = excludesHash(opts.Excludes)
	rs.Unread = unreadDirs(sc.meta.Skipped)
	rs.Linked = sc.meta.Linked
	if err := writeRecordState(h, rs); err != nil {
		return nil, err
	}
	res.Torn = sc.meta.Torn
	if !complete {
		res.Incomplete = true
		return res, nil
	}
	return res, state.WriteSinceToken(h.Repo, h.Slug, sc.meta.Start, sc.meta.Journal)
}

// unreadDirs are the directories among skipped (named with a trailing
// slash) that could not be read.
func unreadDirs(skipped []api.Skipped) []string {
	var dirs []string
	for _, sk := range skipped {
		if d, ok := strings.CutSuffix(sk.Path, "/"); ok && (d == "" || wire.SafePath(d)) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// checkGitmodules holds every new or changed .gitmodules (any name git
// reads as one) to git's fsck rules, and leaves out those git refuses: a
// .gitmodules whose URL or path looks like a command-line option, or whose
// submodule name climbs out with "..", would make the branch fail
// `git fsck --strict`, and git itself refuses to fetch such a tree.
func (rec *Recorder) checkGitmodules(ctx context.Context, h *api.Handle, sc *scanned, changes []git.Change) ([]git.Change, []api.Skipped, error) {
	kept := changes[:0]
	var refused []api.Skipped
	for _, ch := range changes {
		if !ch.Delete && ch.Mode != "120000" && wire.IsDotGitmodules(path.Base(ch.Path)) {
			// git checks it in the repository: a held blob is stored.
			if err := sc.store(ch.ID); err != nil {
				return nil, nil, err
			}
			var fe *git.FsckError
			if err := h.Repo.Git.CheckGitmodules(ctx, ch.ID); errors.As(err, &fe) {
				refused = append(refused, api.Skipped{Path: ch.Path, Reason: "a .gitmodules that git fsck refuses: " + fe.Msg})
				continue
			} else if err != nil {
				return nil, nil, err
			}
		}
		kept = append(kept, ch)
	}
	return kept, refused, nil
}

// leaveBootstrapped takes out of changes the files create copied in from
// the user's working tree (state.Bootstrapped): git ignored them when they
// came, and they are never recorded, even once the sandbox's .gitignore
// stops ignoring them. Each is reported, as every file left out is.
func leaveBootstrapped(h *api.Handle, changes []git.Change) ([]git.Change, []api.Skipped, error) {
	set, err := state.Bootstrapped(h.Repo, h.Slug)
	if err != nil || len(set) == 0 {
		return changes, nil, err
	}
	kept := changes[:0]
	var left []api.Skipped
	for _, ch := range changes {
		if set[ch.Path] {
			left = append(left, api.Skipped{Path: ch.Path, Reason: "copied in from the user's working tree at create (.worktreeinclude, [bootstrap] include): never recorded"})
			continue
		}
		kept = append(kept, ch)
	}
	return kept, left, nil
}

// appendNew appends the values of add that list does not hold yet.
func appendNew(list []string, add ...string) []string {
	for _, v := range add {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// scanned is a parsed scan stream. The contents of its files are already in
// the repository, as blobs.
type scanned struct {
	files map[string]git.Change // by path: mode and blob id
	meta  wire.Meta
	run   *api.RunResult // set when the scan ran a command first
	// budget is the share of the record limit its snapshot holds
	// (recordlimit.go).
	budget *recordBudget
	// result holds the scan's share of the host's memory for scans
	// (wire.Result.Release) until release.
	result *wire.Result
	// blobs stored the scan's files, and holds the small ones in memory
	// (git.BlobWriter.Hold): what the branch has needs no storing.
	blobs *git.BlobWriter
}

// held is the content of blob id when the scan holds it, not stored.
func (sc *scanned) held(id string) ([]byte, bool) {
	if sc.blobs == nil || id == "" {
		return nil, false
	}
	return sc.blobs.Held(id)
}

// maxInline is the most changes a commit carries held blobs inline for:
// past it, they are stored first and the commit names them by id, which
// lets git.Commit write a big directory's tree whole (a folder of 100,000
// empty files is one held blob, named 100,000 times).
const maxInline = 100

// inline puts the content of each held blob among changes into the change
// (the commit's own fast-import stores it), or, for many changes, stores
// the held blobs (one fast-import).
func (sc *scanned) inline(changes []git.Change) error {
	var held []int
	for i, ch := range changes {
		if _, ok := sc.held(ch.ID); ok && !ch.Delete {
			held = append(held, i)
		}
	}
	if len(changes) > maxInline {
		ids := make([]string, 0, len(held))
		for _, i := range held {
			ids = append(ids, changes[i].ID)
		}
		return sc.store(ids...)
	}
	for _, i := range held {
		changes[i].Content, _ = sc.held(changes[i].ID)
		changes[i].ID = ""
	}
	return nil
}

// store writes the held blobs among ids into the repository.
func (sc *scanned) store(ids ...string) error {
	if sc.blobs == nil {
		return nil
	}
	return sc.blobs.Store(ids...)
}

// release gives back the scan's share of the host's memory for scans: its
// snapshot is done with it. sc may be nil.
func (sc *scanned) release() {
	if sc != nil {
		sc.result.Release()
	}
}

// newScanned is res as changes to the branch.
func newScanned(res *wire.Result) *scanned {
	sc := &scanned{files: make(map[string]git.Change, len(res.Files)), meta: res.Meta, run: res.Run}
	for p, f := range res.Files {
		sc.files[p] = git.Change{Path: f.Path, Mode: f.Mode, ID: f.ID}
	}
	return sc
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
	return slices.Sorted(maps.Keys(set))
}

// followUp is what a scan found missing: another scan must report it.
type followUp struct {
	Full, Paths, List, Tracked []string
}

func (f followUp) empty() bool {
	return len(f.Full) == 0 && len(f.Paths) == 0 && len(f.List) == 0 && len(f.Tracked) == 0
}

// followUps compares a scan with the branch's trees and finds what it could
// not see: directories the branch does not have (their files may carry old
// times and went unreported), files an ignore rule no longer excludes, the
// subtree of a deleted .gitignore, changed ignored files the branch tracks,
// and ignored directories the branch tracks files under that the scan did
// not walk. Requests already made (in opts) are not repeated.
func (sc *scanned) followUps(trees map[string]map[string]git.TreeEntry, opts wire.Options, st recordState) followUp {
	var fu followUp
	wantPath := func(p string) {
		if _, ok := sc.files[p]; !ok && !slices.Contains(opts.Paths, p) && !slices.Contains(fu.Paths, p) {
			fu.Paths = append(fu.Paths, p)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(sc.meta.Dirs)) {
		t := trees[d]
		if t == nil {
			continue // new itself: an ancestor is reported in full
		}
		hasIgnoreFile := false
		for _, e := range sc.meta.Dirs[d] {
			p := path.Join(d, e.Name)
			te, inTree := t[e.Name]
			switch e.Kind {
			case wire.EntryDir:
				if (!inTree || (!te.IsTree() && te.Mode != "160000")) && !slices.Contains(opts.Full, p) {
					fu.Full = append(fu.Full, p)
				}
			case wire.EntryNotIgnored:
				if !inTree || te.IsTree() {
					wantPath(p)
				}
			}
			if e.Name == ".gitignore" && !e.IsDir() {
				hasIgnoreFile = true
			}
		}
		if te, ok := t[".gitignore"]; ok && !te.IsTree() && !hasIgnoreFile && !slices.Contains(opts.List, d) {
			fu.List = append(fu.List, d)
		}
	}
	for _, p := range sc.meta.IgnoredChanged {
		if te, ok := trees[parentDir(p)][path.Base(p)]; ok && !te.IsTree() && te.Mode != "160000" {
			wantPath(p)
		}
	}
	// Ignored directories the branch tracks files under, that this scan did
	// not walk: walk them from now on, list them (deletions) and send
	// their tracked files (changes), whatever their times.
	fresh := map[string]bool{}
	for _, d := range st.Tracked {
		if !slices.Contains(opts.Tracked, d) {
			fu.Tracked = append(fu.Tracked, d)
			fresh[d] = true
			if !slices.Contains(opts.Full, d) {
				fu.Full = append(fu.Full, d)
			}
		}
	}
	for _, p := range st.trackedFiles {
		if fresh[parentDir(p)] {
			wantPath(p)
		}
	}
	return fu
}

// changes compares the scan with the branch's trees.
func (sc *scanned) changes(trees map[string]map[string]git.TreeEntry) []git.Change {
	var out []git.Change
	for p, ch := range sc.files {
		if te, ok := trees[parentDir(p)][path.Base(p)]; ok && te.Mode == ch.Mode && te.ID == ch.ID {
			continue
		}
		out = append(out, ch)
	}
	for d, listing := range sc.meta.Dirs {
		isDir := make(map[string]bool, len(listing))
		for _, e := range listing {
			isDir[e.Name] = e.IsDir()
		}
		for name, te := range trees[d] {
			dir, present := isDir[name]
			treeDir := te.IsTree() || te.Mode == "160000"
			if !present || dir != treeDir {
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
// A non-nil run holds a RunSpec: the scanner runs it before scanning. The
// scan streams: file contents go from the exec's output straight into git
// as blobs.
func (rec *Recorder) scan(ctx context.Context, h *api.Handle, o wire.Options, run *runInput) (*scanned, error) {
	bin, err := rec.guest.ScannerFor(ctx, h)
	if err != nil {
		return nil, err
	}
	args := []string{bin.Path, "scan-internal", "--root", o.Root, "--since", strconv.FormatInt(o.Since, 10), "--max-size", strconv.FormatInt(o.MaxSize, 10)}
	// The request, then with a run the spec, go in an argument when they
	// are small (the scanner reads them before its stdin): an exec's
	// stdin reaches it only after the engine has answered the client,
	// several milliseconds of every call on a loaded machine, while the
	// scanner could be running the command. A plain scan then needs no
	// stdin at all.
	input := wire.EncodeRequest(o)
	if run != nil {
		input = append(input, run.spec...)
	}
	if n := base64.StdEncoding.EncodedLen(len(input)); n <= maxArgInput && (run == nil || !run.private) {
		args = append(args, "--in", base64.StdEncoding.EncodeToString(input))
		input = nil
	}
	stdin := func() (io.Reader, func(), error) { return bytes.NewReader(input), func() {}, nil }
	if input == nil {
		stdin = func() (io.Reader, func(), error) { return nil, func() {}, nil }
	}
	kind := runner.Work
	named := func() {}
	if run != nil {
		args = append(args, "--run")
		// The command may meet a refusal, which names the sandbox.
		args, named = netgate.NameFirst(h.Repo, h.Slug, args)
		// What the argument does not hold; the pipe stays open until
		// the command is to stop. bash has its own timeout, enforced in
		// the container, of up to an hour; the caller's context bounds
		// the rest.
		withRequest := &runInput{spec: input, stop: run.stop}
		stdin = func() (io.Reader, func(), error) { return withRequest.pipe() }
		kind = runner.Stream
	}
	sc, err := rec.scanOnce(ctx, h, args, stdin, kind)
	// A container without the scanner (new, or made by another build) fails
	// the exec with 126 or 127 before anything runs: install, then retry.
	if code := runner.ExitCode(err); code == 126 || code == 127 {
		if ierr := rec.guest.InstallScanner(ctx, h, bin); ierr != nil {
			return nil, ierr
		}
		if o.Journal {
			rec.startJournal(ctx, h, bin)
		}
		sc, err = rec.scanOnce(ctx, h, args, stdin, kind)
	}
	if err == nil && o.Journal && sc.meta.Journal == "" {
		rec.startJournal(ctx, h, bin) // for the next scan
	}
	if err == nil {
		named()
		rec.Log.Debug("scanned", "sandbox", h.Slug, "journal", sc.meta.Partial, "dirs", len(sc.meta.Dirs), "files", len(sc.files), "took", time.Duration(sc.meta.Took))
	}
	return sc, err
}

// maxArgInput bounds the scanner's input given in an argument (base64):
// far below the kernel's bound on one argument (128 KiB), and small enough
// for any engine's API with room to spare (kubectl sends the command in its
// URL, and a proxy before a cluster's API server may refuse a request line
// of 8 KiB).
const maxArgInput = 4 << 10

// journalRetry is how long after a try to start a container's watcher this
// process tries again.
const journalRetry = time.Minute

// startJournal starts the change journal's watcher in h's container, at
// most once a minute per container and process: where it cannot run (an
// engine that cannot exec as its user, its place taken), scans walk the
// whole tree, as they would anyway. It runs as wire.WatchUID (see
// journal.go).
func (rec *Recorder) startJournal(ctx context.Context, h *api.Handle, bin guest.Scanner) {
	now := time.Now()
	if last, ok := rec.journalStarts.Load(h.Ref.ID); ok && now.Sub(last.(time.Time)) < journalRetry {
		return
	}
	rec.journalStarts.Store(h.Ref.ID, now)
	uid := strconv.Itoa(wire.WatchUID)
	_, err := rec.Common.Exec(ctx, provider.ExecRequest{
		Ref: h.Ref, User: uid + ":" + uid,
		Cmd: []string{bin.Path, "scan-internal", "watch", "--root", api.Workdir},
	})
	if err != nil {
		rec.Log.Debug("no change journal: scans walk the whole tree", "sandbox", h.Slug, "err", err)
	}
}

// execGrace is how long a scan's exec may run on after its whole stream
// was read (scanOnce): the scanner only exits then, and the engine's
// client asks for its exit code, in milliseconds even on a loaded machine.
const execGrace = 10 * time.Second

// scanOnce runs the scanner once and reads its stream as it comes. stdin
// makes the exec's input, and frees it once the exec is over.
func (rec *Recorder) scanOnce(ctx context.Context, h *api.Handle, args []string, stdin func() (io.Reader, func(), error), kind runner.Kind) (*scanned, error) {
	in, release, err := stdin()
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	execDone := make(chan error, 1)
	// The exec is stopped with ctx while the call waits on it, and left
	// to end on its own once the call returns (see below).
	execCtx, stopExec := context.WithCancel(context.WithoutCancel(ctx))
	untie := context.AfterFunc(ctx, stopExec)
	defer untie()
	go func() {
		defer release()
		defer stopExec()
		_, err := rec.Common.Exec(execCtx, provider.ExecRequest{Ref: h.Ref, Cmd: args, Env: core.SandboxEnv(h.Slug), Stdin: in, Stdout: pw, Kind: kind})
		if err != nil {
			pw.CloseWithError(err)
		} else {
			pw.Close()
		}
		execDone <- err
	}()
	budget, shared := rec.budgetOf(ctx, h)
	bw := h.Repo.Git.NewBlobWriter(ctx)
	bw.Hold()
	blobs := budgetStore{bw, budget}
	res, perr := wire.Read(pr, blobs)
	// Unblock the exec if the stream was not read to its end.
	pr.CloseWithError(errors.New("scan stream abandoned"))
	if perr != nil {
		// A scan that failed keeps nothing it sent (the agent can kill
		// its scanner mid-stream at will, and each pack it left used to
		// stay until git gc, charged to no limit), nor its charge.
		blobs.Discard()
		if !shared {
			budget.release()
		}
		// A stream the host refused says more than the broken pipe the
		// scanner then got; any other failure of the exec says more than
		// the stream it cut short.
		if eerr := <-execDone; eerr != nil && !errors.Is(perr, wire.ErrBadStream) {
			return nil, core.ExecError(h, "scan /src for changes", eerr)
		}
		return nil, perr
	}
	// A whole stream is the scan's result, and the call returns on it
	// without waiting for the exec to end: the stream's end is the
	// scanner's last act, and what the exec says after it tells nothing
	// the host can trust (the agent can kill its scanner then at will),
	// while waiting is waiting for the engine's client to ask for the exit
	// code and to exit, a few milliseconds of every bash call. The exec
	// ends on its own (execDone is buffered), or is stopped execGrace
	// after: a scanner that does not end after its stream (a tampered one
	// that sleeps, one the agent stopped) kept the engine's client
	// running on the host for as long, one per call. An exec that fails
	// ends the stream with its error (pw.CloseWithError), so a stream cut
	// at an entry's end is never taken for a whole one.
	time.AfterFunc(execGrace, stopExec)
	if err := blobs.Close(); err != nil {
		if !shared {
			budget.release()
		}
		res.Release()
		return nil, err
	}
	sc := newScanned(res)
	sc.budget, sc.result, sc.blobs = budget, res, bw
	return sc, nil
}

// excludes are the lines of the repository-wide ignore files git would use
// besides .gitignore files: core.excludesFile, then info/exclude (which
// takes precedence: it comes later). They are passed as git reads them: a
// UTF-8 byte order mark dropped, one line per newline, a line cut at a NUL;
// the scanner's parser does the rest (comments, CR, trailing spaces).
func (rec *Recorder) excludes(ctx context.Context, r *api.Repo) []string {
	var lines []string
	add := func(p string) {
		data, err := os.ReadFile(p)
		if err != nil {
			return
		}
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		for _, l := range strings.Split(string(data), "\n") {
			if i := strings.IndexByte(l, 0); i >= 0 {
				l = l[:i]
			}
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	add(rec.excludesFile(ctx, r))
	add(filepath.Join(r.Git.CommonDir, "info", "exclude"))
	return lines
}

// excludesHash identifies a set of exclude lines, to see them change.
func excludesHash(lines []string) string {
	h := sha1.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// recordState is what a snapshot keeps for the next one besides the stamp:
// which ignored directories the branch tracks files under (Tracked), as
// found at commit Tip for the ignored directories a scan reported
// (Ignored), the excludes last applied, and the files with other names
// (Linked), which every scan stats. It lives in the sandbox's state
// directory, in the record format of scanwire.go; a missing or unreadable
// one is computed again.
type recordState struct {
	Tip      string
	Excludes string
	Ignored  []string
	Tracked  []string
	// Unread are the directories the last scan could not read (no read or
	// no search permission). Changes made in one meanwhile moved no ctime
	// a later walk sees once it is readable again (chmod moves only the
	// directory's), so each is reported whole (Options.Full) until read.
	Unread []string
	Linked []string
	// trackedFiles are the files under Tracked, known only in the snapshot
	// that computed Tracked.
	trackedFiles []string
}

func recordStatePath(h *api.Handle) string { return filepath.Join(h.Repo.StateDir(h.Slug), "record") }

func readRecordState(h *api.Handle) recordState {
	var st recordState
	data, err := os.ReadFile(recordStatePath(h))
	if err != nil {
		return st
	}
	whole := wire.EachRecord(data, func(tag byte, v string) bool {
		switch tag {
		case 'C':
			st.Tip = v
		case 'E':
			st.Excludes = v
		case 'B':
			st.Ignored = append(st.Ignored, v)
		case 'T':
			st.Tracked = append(st.Tracked, v)
		case 'U':
			st.Unread = append(st.Unread, v)
		case 'H':
			st.Linked = append(st.Linked, v)
		default:
			return false
		}
		return true
	})
	if !whole {
		return recordState{}
	}
	return st
}

func writeRecordState(h *api.Handle, st recordState) error {
	var b bytes.Buffer
	wire.PutRecord(&b, 'C', st.Tip)
	wire.PutRecord(&b, 'E', st.Excludes)
	wire.PutRecords(&b, 'B', st.Ignored)
	wire.PutRecords(&b, 'T', st.Tracked)
	wire.PutRecords(&b, 'U', st.Unread)
	wire.PutRecords(&b, 'H', st.Linked)
	return state.WriteAtomic(recordStatePath(h), b.Bytes())
}

func (rec *Recorder) excludesFile(ctx context.Context, r *api.Repo) string {
	if p, ok := rec.excludesFiles.Load(r.Git.CommonDir); ok {
		return p.(string)
	}
	res, err := rec.Runner.Run(ctx, r.Git.Cmd("config", "--path", "--get", "core.excludesFile"))
	p := strings.TrimSpace(string(res.Stdout))
	if err != nil || p == "" {
		if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
			p = filepath.Join(x, "git", "ignore")
		} else if home, herr := os.UserHomeDir(); herr == nil {
			p = filepath.Join(home, ".config", "git", "ignore")
		}
	}
	rec.excludesFiles.Store(r.Git.CommonDir, p)
	return p
}
