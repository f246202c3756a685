package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

const id = "b9b238bacb3737a32bdf3a3dcc4978fbe2d1e3f0"

func exitErr(code int, stderr string) error {
	return &runner.ExitError{Command: "git ...", ExitCode: code, Stderr: stderr}
}

func TestParseRefs(t *testing.T) {
	// Real `git for-each-ref --format='%(objectname) %(refname)'` output.
	out := id + " refs/heads/litterbox/x\n" +
		"3e0b30a8b95ec862a34b3c7576c2fb84928a2ad4 refs/heads/litterbox/my-feature\n\n"
	got := ParseRefs(out)
	if len(got) != 2 || got["refs/heads/litterbox/x"] != id || got["refs/heads/litterbox/my-feature"] != "3e0b30a8b95ec862a34b3c7576c2fb84928a2ad4" {
		t.Errorf("ParseRefs = %v", got)
	}
	if got := ParseRefs(""); len(got) != 0 {
		t.Errorf("ParseRefs(empty) = %v", got)
	}
}

func repo(f *runnertest.Fake) *Repo { return &Repo{R: f, Root: "/r", CommonDir: "/r/.git"} }

func TestRefUpdates(t *testing.T) {
	ctx := context.Background()
	f := &runnertest.Fake{}
	g := repo(f)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "update-ref", "--create-reflog", "-m", "litterbox: create sandbox x", "refs/heads/litterbox/x", id, ""}, "", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "update-ref", "--create-reflog", "-m", "m", "refs/heads/litterbox/x", id, ""},
		"", exitErr(128, "fatal: update_ref failed for ref 'refs/heads/litterbox/x': cannot lock ref 'refs/heads/litterbox/x': reference already exists\n"))
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "update-ref", "--create-reflog", "-m", "m", "refs/heads/litterbox/y", id, ""},
		"", exitErr(128, "fatal: update_ref failed for ref 'refs/heads/litterbox/y': cannot lock ref 'refs/heads/litterbox/y': 'refs/heads/litterbox' exists; cannot create 'refs/heads/litterbox/y'\n"))
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "update-ref", "--create-reflog", "-m", "snap", "refs/heads/litterbox/x", "new", id}, "", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "update-ref", "-d", "refs/heads/litterbox/x", id}, "", nil)

	if err := g.CreateRef(ctx, "refs/heads/litterbox/x", id, "litterbox: create sandbox x"); err != nil {
		t.Errorf("CreateRef = %v", err)
	}
	if err := g.CreateRef(ctx, "refs/heads/litterbox/x", id, "m"); !errors.Is(err, ErrRefExists) {
		t.Errorf("CreateRef of an existing ref = %v; want ErrRefExists", err)
	}
	// A directory/file conflict is not "exists": it is git's own error.
	if err := g.CreateRef(ctx, "refs/heads/litterbox/y", id, "m"); err == nil || errors.Is(err, ErrRefExists) || !strings.Contains(err.Error(), "'refs/heads/litterbox' exists") {
		t.Errorf("CreateRef blocked by refs/heads/litterbox = %v", err)
	}
	if err := g.UpdateRef(ctx, "refs/heads/litterbox/x", "new", id, "snap"); err != nil {
		t.Errorf("UpdateRef = %v", err)
	}
	if err := g.DeleteRef(ctx, "refs/heads/litterbox/x", id); err != nil {
		t.Errorf("DeleteRef = %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestCmdEnv(t *testing.T) {
	c := repo(&runnertest.Fake{}).Cmd("status")
	if got := c.String(); got != "git -C /r -c core.hooksPath=/dev/null status" {
		t.Errorf("Cmd = %s", got)
	}
	// No prompts, and read-only commands must not rewrite the user's index.
	if strings.Join(c.Env, " ") != "GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0" {
		t.Errorf("Cmd env = %q", c.Env)
	}
}

func TestHeadAndResolve(t *testing.T) {
	ctx := context.Background()
	f := &runnertest.Fake{}
	g := repo(f)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, id+"\n", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, "", exitErr(1, ""))
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/litterbox/x^{commit}"}, id+"\n", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/litterbox/gone^{commit}"}, "", exitErr(1, ""))
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-list", "--count", "--end-of-options", "HEAD.." + id}, "2\n", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "status", "--porcelain", "--untracked-files=no", "--ignore-submodules"}, " M a.txt\n", nil)
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/litterbox/"}, id+" refs/heads/litterbox/x\n", nil)

	if h, err := g.Head(ctx); h != id || err != nil {
		t.Errorf("Head = %q, %v", h, err)
	}
	if _, err := g.Head(ctx); !errors.Is(err, ErrNoCommits) || !strings.Contains(err.Error(), "make a first commit") {
		t.Errorf("Head of an empty repository = %v", err)
	}
	if got, ok, err := g.ResolveRef(ctx, "refs/heads/litterbox/x"); got != id || !ok || err != nil {
		t.Errorf("ResolveRef = %q %v %v", got, ok, err)
	}
	if _, ok, err := g.ResolveRef(ctx, "refs/heads/litterbox/gone"); ok || err != nil {
		t.Errorf("ResolveRef of a missing ref = %v %v", ok, err)
	}
	if n, err := g.CountCommits(ctx, "HEAD", id); n != 2 || err != nil {
		t.Errorf("CountCommits = %d, %v", n, err)
	}
	if dirty, err := g.DirtyTracked(ctx); !dirty || err != nil {
		t.Errorf("DirtyTracked = %v, %v", dirty, err)
	}
	if refs, err := g.Refs(ctx, "refs/heads/litterbox/"); err != nil || refs["refs/heads/litterbox/x"] != id {
		t.Errorf("Refs = %v, %v", refs, err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	argv := func(dir string) []string {
		return []string{"git", "-C", dir, "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir", "--absolute-git-dir"}
	}
	f := &runnertest.Fake{}
	f.Expect(argv("/r/sub"), "/r\n/r/.git\n/r/.git\n", nil)
	f.Expect(argv("/wt"), "/wt\n/r/.git\n/r/.git/worktrees/wt\n", nil)
	f.Expect(argv("/tmp"), "", exitErr(128, "fatal: not a git repository (or any of the parent directories): .git\n"))
	f.Expect(argv("/r/.git"), "", exitErr(128, "fatal: this operation must be run in a work tree\n"))
	f.Expect(argv("/nonexistent"), "", exitErr(128, "fatal: cannot change to '/nonexistent': No such file or directory\n"))

	if g, err := Open(ctx, f, "/r/sub"); err != nil || g.Root != "/r" || g.CommonDir != "/r/.git" || g.GitDir != "/r/.git" {
		t.Errorf("Open = %+v, %v", g, err)
	}
	// A linked worktree shares the main repository's git dir, and has its own.
	if g, err := Open(ctx, f, "/wt"); err != nil || g.Root != "/wt" || g.CommonDir != "/r/.git" || g.GitDir != "/r/.git/worktrees/wt" {
		t.Errorf("Open(worktree) = %+v, %v", g, err)
	}
	if _, err := Open(ctx, f, "/tmp"); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "is not inside a git repository: run litterbox inside one") {
		t.Errorf("Open outside a repository = %v", err)
	}
	if _, err := Open(ctx, f, "/r/.git"); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Open in a git dir = %v", err)
	}
	if _, err := Open(ctx, f, "/nonexistent"); !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "/nonexistent: no such directory") {
		t.Errorf("Open of a missing directory = %v", err)
	}
	// A git before 2.31 knows no --path-format, and prints it back: its
	// lines are not the paths, with or without the branches after them.
	old := "/r\n--path-format=absolute\n.git\n/r/.git\n"
	f.Expect(argv("/old"), old, nil)
	f.Expect(append(argv("/old"), "--branches=litterbox/*", "--symbolic-full-name", "--branches=litterbox/*"), old+"1111111111111111111111111111111111111111\nrefs/heads/litterbox/a\n", nil)
	if g, err := Open(ctx, f, "/old"); err == nil || !strings.Contains(err.Error(), "git 2.38 or later") {
		t.Errorf("Open with an old git = %+v, %v", g, err)
	}
	if g, _, err := OpenBranches(ctx, f, "/old", "litterbox/"); err == nil || !strings.Contains(err.Error(), "git 2.38 or later") {
		t.Errorf("OpenBranches with an old git = %+v, %v", g, err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
	if _, err := Open(ctx, failing{&runner.NotInstalledError{Program: "git"}}, "/r"); err == nil || !strings.Contains(err.Error(), "git is not installed") {
		t.Errorf("Open without git = %v", err)
	}
}

type failing struct{ err error }

func (f failing) Run(context.Context, *runner.Cmd) (runner.Result, error) {
	return runner.Result{}, f.err
}

// TestRefsKeepsOddNames lists, with real git, branches whose names end in a
// no-break space (git allows it): each comes back under its own name.
func TestRefsKeepsOddNames(t *testing.T) {
	dir, git := realRepo(t)
	c := git("commit-tree", "-m", "x", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
	names := []string{"refs/heads/litterbox/a", "refs/heads/litterbox/b\u00a0"} // the odd one last
	for _, n := range names {
		git("update-ref", n, c)
	}
	g := &Repo{R: runner.Exec{}, Root: dir, CommonDir: dir + "/.git"}
	refs, err := g.Refs(context.Background(), "refs/heads/litterbox/")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs[names[0]] != c || refs[names[1]] != c {
		t.Errorf("Refs = %q, want %q and %q at %s", refs, names[0], names[1], c)
	}
}

// Commits names HEAD's commit and a branch's in one call, in order, and
// fails when one of them names none.
func TestCommits(t *testing.T) {
	g, c := newTestRepo(t)
	ctx := context.Background()
	if out, err := exec.Command("git", "-C", g.Root, "update-ref", "HEAD", c).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := exec.Command("git", "-C", g.Root, "update-ref", "refs/heads/litterbox/x", c).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if ids, err := g.Commits(ctx, "HEAD", "refs/heads/litterbox/x"); err != nil || len(ids) != 2 || ids[0] != c || ids[1] != c {
		t.Errorf("Commits = %v, %v; want [%s %s]", ids, err, c, c)
	}
	if ids, err := g.Commits(ctx, "HEAD", "refs/heads/litterbox/gone"); err == nil {
		t.Errorf("Commits of a missing branch = %v, no error", ids)
	}
}

// TestOpenInSubdirectory opens, with real git, a repository from a
// directory inside it: its common git dir is the repository's, as from
// its top (git prints it relative to the directory it ran in).
func TestOpenInSubdirectory(t *testing.T) {
	dir, _ := realRepo(t)
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, sub} {
		g, err := Open(context.Background(), runner.Exec{}, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, ".git"); g.Root != dir || g.CommonDir != want || g.GitDir != want {
			t.Errorf("Open(%s) = root %s, common dir %s, git dir %s; want %s, %s, %s", d, g.Root, g.CommonDir, g.GitDir, dir, want, want)
		}
	}
}

// TestOpenBranches opens, with real git, a repository and its branches
// under a prefix in one call: the same branches, with the same ids, as Refs
// lists; none when there are none; and when a tag of a branch's name makes
// it ambiguous to rev-parse, still all of them.
func TestOpenBranches(t *testing.T) {
	dir, git := realRepo(t)
	check := func(what string) {
		t.Helper()
		g, refs, err := OpenBranches(context.Background(), runner.Exec{}, dir, "litterbox/")
		if err != nil {
			t.Fatal(err)
		}
		if g.Root != dir || g.CommonDir != filepath.Join(dir, ".git") {
			t.Errorf("%s: OpenBranches = root %s, common dir %s", what, g.Root, g.CommonDir)
		}
		want, err := g.Refs(context.Background(), "refs/heads/litterbox/")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(refs) != fmt.Sprint(want) || refs == nil {
			t.Errorf("%s: OpenBranches' branches = %q, want %q", what, refs, want)
		}
	}
	check("no commit")
	a := git("commit-tree", "-m", "a", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
	b := git("commit-tree", "-m", "b", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
	git("update-ref", "refs/heads/main", a)
	check("no branch of the prefix")
	for ref, id := range map[string]string{"refs/heads/litterbox/a": a, "refs/heads/litterbox/b/c": b, "refs/heads/litterbox/d\u00a0": a, "refs/heads/litterboxe": b} {
		git("update-ref", ref, id)
	}
	check("branches")
	git("pack-refs", "--all")
	git("update-ref", "refs/heads/litterbox/f", b)
	check("packed and loose")
	git("tag", "litterbox/a", b)
	check("a tag of a branch's name")
	git("tag", "-d", "litterbox/a")
	// rev-parse names a symbolic branch by its target's name: the names
	// pair with the ids, but one is named twice and the other never.
	git("symbolic-ref", "refs/heads/litterbox/s", "refs/heads/litterbox/b/c")
	check("a symbolic branch")
}

// realRepo makes a new repository with real git (the test is skipped
// without it) in a directory of the test's, its path free of symbolic
// links as git prints it, and returns it with a function that runs git
// there and returns its output, trimmed.
func realRepo(t *testing.T) (dir string, git func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git = func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@t"}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	return dir, git
}
