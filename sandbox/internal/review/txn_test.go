package review

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// txnRepo is a real repository with a commit "from" and a commit "to" that
// modifies, deletes, adds (in a new directory), turns a file into a
// directory, changes a mode, and touches names that are not UTF-8 or hold a
// newline. The working tree holds "from" plus an unrelated local change and
// an untracked file.
func txnRepo(t *testing.T) (s *Reviewer, r *api.Repo, from, to string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, content string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("a.txt", "one\ntwo\n", 0o644)
	write("gone.txt", "bye\n", 0o644)
	write("becomes-dir", "file\n", 0o644)
	write("run.sh", "echo\n", 0o644)
	write("keep.txt", "keep\n", 0o644)
	write("caf\xe9.txt", "latin-1 name\n", 0o644)
	git("add", "-A")
	git("commit", "-qm", "from")
	from = git("rev-parse", "HEAD")
	write("a.txt", "one\nTWO\n", 0o644)
	os.Remove(filepath.Join(dir, "gone.txt"))
	os.Remove(filepath.Join(dir, "becomes-dir"))
	write("becomes-dir/inner.txt", "inner\n", 0o644)
	write("new/deep/x.txt", "new\n", 0o644)
	write("run.sh", "echo\n", 0o755)
	write("caf\xe9.txt", "changed\n", 0o644)
	write("nl\nname.txt", "newline\n", 0o644)
	git("add", "-A")
	git("commit", "-qm", "to")
	to = git("rev-parse", "HEAD")
	git("reset", "-q", "--hard", from)
	write("keep.txt", "a local change\n", 0o644)
	write("untracked.txt", "untracked\n", 0o644)

	s = New(&core.Common{Runner: runner.Exec{}, Log: log.New(&bytes.Buffer{}), Options: api.Options{Image: api.DefaultImage}}, nil)
	r, err := core.OpenRepo(context.Background(), s.Runner, dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, r, from, to
}

// checkout describes what the user sees: HEAD, the index entries and every
// file's mode and content (.git left out).
func checkout(t *testing.T, r *api.Repo) string {
	t.Helper()
	var lines []string
	for _, args := range [][]string{{"rev-parse", "HEAD"}, {"ls-files", "--stage", "-z"}} {
		out, err := exec.Command("git", append([]string{"-C", r.Root()}, args...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.ReplaceAll(string(out), "\x00", "\n"))
	}
	filepath.Walk(r.Root(), func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && info.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(r.Root(), p)
		if info.IsDir() {
			lines = append(lines, "dir "+rel)
			return nil
		}
		data, _ := os.ReadFile(p)
		lines = append(lines, rel+" "+info.Mode().String()+" "+string(data))
		return nil
	})
	sort.Strings(lines[2:])
	return strings.Join(lines, "\n")
}

func mergeTxn(t *testing.T, r *api.Repo, from, to string) *worktreeTxn {
	t.Helper()
	changes, err := r.Git.RawDiff(context.Background(), from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 8 {
		t.Fatalf("RawDiff: %d changes, want 8: %+v", len(changes), changes)
	}
	tx := &worktreeTxn{Op: "merge", Sandbox: "x", Ref: "refs/heads/main", From: from, To: to, Index: true,
		Started: time.Now().Add(-time.Second).UTC(), Paths: txnPaths(changes, true)}
	if err := writeTxn(r, tx); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestRecoverMergeKilledBeforeRef: the working tree and index were moved, the
// branch was not (kill -9 between read-tree and update-ref). RecoverWorktree
// puts back exactly what was there, the local change and untracked file
// included, and removes the journal; a second run changes nothing.
func TestRecoverMergeKilledBeforeRef(t *testing.T) {
	ctx := context.Background()
	s, r, from, to := txnRepo(t)
	before := checkout(t, r)
	mergeTxn(t, r, from, to)
	if err := r.Git.CheckoutTree(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if checkout(t, r) == before {
		t.Fatal("read-tree changed nothing: the test is broken")
	}
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != before {
		t.Errorf("after recovery:\n%s\nwant:\n%s", got, before)
	}
	if _, err := os.Stat(txnFile(r)); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != before {
		t.Errorf("a second recovery changed:\n%s", got)
	}
}

// TestRecoverMergeKilledInReadTree: read-tree was killed while writing files:
// index.lock is left, some files are new, one is cut short, the index is
// the old one. Then the user edits a file before anything runs. Recovery
// removes the stale lock, copies the edited and the cut-short file aside,
// and puts everything back.
func TestRecoverMergeKilledInReadTree(t *testing.T) {
	ctx := context.Background()
	s, r, from, to := txnRepo(t)
	before := checkout(t, r)
	mergeTxn(t, r, from, to)
	root := r.Root()
	if err := os.WriteFile(r.Git.IndexLock(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(root, "gone.txt"))
	os.MkdirAll(filepath.Join(root, "new/deep"), 0o755)
	os.WriteFile(filepath.Join(root, "new/deep/x.txt"), []byte("ne"), 0o644) // cut short
	os.WriteFile(filepath.Join(root, "caf\xe9.txt"), []byte("changed\n"), 0o644)
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("the user's edit\n"), 0o644)

	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != before {
		t.Errorf("after recovery:\n%s\nwant:\n%s", got, before)
	}
	if _, err := os.Stat(r.Git.IndexLock()); !os.IsNotExist(err) {
		t.Errorf("index.lock left: %v", err)
	}
	rescued, _ := filepath.Glob(filepath.Join(r.Git.GitDir, "litterbox-rescued", "*", "a.txt"))
	if len(rescued) != 1 {
		t.Fatalf("the user's edit was not copied aside: %v", rescued)
	}
	if data, _ := os.ReadFile(rescued[0]); string(data) != "the user's edit\n" {
		t.Errorf("rescued a.txt = %q", data)
	}
	if cut, _ := filepath.Glob(filepath.Join(r.Git.GitDir, "litterbox-rescued", "*", "new/deep/x.txt")); len(cut) != 1 {
		t.Errorf("the cut-short file was not copied aside: %v", cut)
	}
	if same, _ := filepath.Glob(filepath.Join(r.Git.GitDir, "litterbox-rescued", "*", "caf\xe9.txt")); len(same) != 0 {
		t.Errorf("a file holding the merge's own content was copied aside: %v", same)
	}
}

// TestRecoverMergeDone: the branch had moved; recovery only drops the
// journal. And a journal whose HEAD moved elsewhere is dropped, touching
// nothing.
func TestRecoverMergeDone(t *testing.T) {
	ctx := context.Background()
	s, r, from, to := txnRepo(t)
	mergeTxn(t, r, from, to)
	if err := r.Git.CheckoutTree(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if err := r.Git.UpdateRef(ctx, "HEAD", to, from, "test"); err != nil {
		t.Fatal(err)
	}
	after := checkout(t, r)
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != after {
		t.Errorf("a finished merge was changed:\n%s", got)
	}
	if _, err := os.Stat(txnFile(r)); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}

	// HEAD moved elsewhere (detached) since a merge began: left alone.
	mergeTxn(t, r, from, to)
	if out, err := exec.Command("git", "-C", r.Root(), "checkout", "-q", "--detach").CombinedOutput(); err != nil {
		t.Fatalf("detach HEAD: %v\n%s", err, out)
	}
	moved := checkout(t, r)
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != moved {
		t.Errorf("a checkout whose HEAD moved was changed:\n%s", got)
	}
	if _, err := os.Stat(txnFile(r)); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
}

// TestRecoverApply: apply (working tree only) killed after git apply wrote;
// the journal's after side comes from ApplyPreview.
func TestRecoverApply(t *testing.T) {
	ctx := context.Background()
	s, r, from, to := txnRepo(t)
	before := checkout(t, r)
	patch, err := r.Git.Patch(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := r.Git.ApplyPreview(ctx, patch)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 8 {
		t.Fatalf("ApplyPreview: %d changes, want 8: %+v", len(changes), changes)
	}
	if err := writeTxn(r, &worktreeTxn{Op: "apply", Sandbox: "x", Started: time.Now().UTC(), Paths: txnPaths(changes, true)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Git.Apply(ctx, patch); err != nil {
		t.Fatal(err)
	}
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got := checkout(t, r); got != before {
		t.Errorf("after recovery:\n%s\nwant:\n%s", got, before)
	}
	if dirs, _ := filepath.Glob(filepath.Join(r.Git.GitDir, "litterbox-rescued")); len(dirs) != 0 {
		t.Errorf("files holding the apply's own content were copied aside: %v", dirs)
	}
}

// TestRecoverWaitsForALiveWriter: while a merge holds the lock, list leaves
// its journal alone.
func TestRecoverWaitsForALiveWriter(t *testing.T) {
	ctx := context.Background()
	s, r, from, to := txnRepo(t)
	mergeTxn(t, r, from, to)
	unlock, ok, err := lockWorktree(ctx, r, false)
	if err != nil || !ok {
		t.Fatalf("lockWorktree = %v, %v", ok, err)
	}
	defer unlock()
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(txnFile(r)); err != nil {
		t.Errorf("the journal of a live merge was touched: %v", err)
	}
}

// TestRecoverMergeDirBecameLink: the sandbox's branch turns a directory
// into a symbolic link to a folder outside the repository that holds a
// file of the same name as the one the directory held. A merge killed
// after read-tree is rolled back at once, and the file outside is never
// touched (it is no path of the repository).
func TestRecoverMergeDirBecameLink(t *testing.T) {
	ctx := context.Background()
	s, r, _, _ := txnRepo(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("the user's file outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", r.Root()}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("stash", "-q", "-u")
	os.MkdirAll(filepath.Join(r.Root(), "dir"), 0o755)
	os.WriteFile(filepath.Join(r.Root(), "dir", "x"), []byte("in the repository\n"), 0o644)
	git("add", "-A")
	git("commit", "-qm", "dir")
	from := git("rev-parse", "HEAD")
	git("rm", "-rq", "dir")
	if err := os.Symlink(outside, filepath.Join(r.Root(), "dir")); err != nil {
		t.Fatal(err)
	}
	git("add", "dir")
	git("commit", "-qm", "dir is a link")
	to := git("rev-parse", "HEAD")
	git("reset", "-q", "--hard", from)
	before := checkout(t, r)

	changes, err := r.Git.RawDiff(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTxn(r, &worktreeTxn{Op: "merge", Sandbox: "x", Ref: "refs/heads/main", From: from, To: to, Index: true,
		Started: time.Now().Add(-time.Second).UTC(), Paths: txnPaths(changes, true)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Git.CheckoutTree(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if err := s.RecoverWorktree(ctx, r); err != nil {
		t.Fatalf("the first recovery: %v", err)
	}
	if got := checkout(t, r); got != before {
		t.Errorf("after recovery:\n%s\nwant:\n%s", got, before)
	}
	if data, err := os.ReadFile(filepath.Join(outside, "x")); err != nil || string(data) != "the user's file outside\n" {
		t.Errorf("the file outside the repository: %q, %v", data, err)
	}
	if dirs, _ := filepath.Glob(filepath.Join(r.Git.GitDir, "litterbox-rescued", "*")); len(dirs) != 0 {
		t.Errorf("a file outside the repository was copied aside as the repository's: %v", dirs)
	}
}
