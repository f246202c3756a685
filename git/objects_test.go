package git

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/runner"
)

// TestTreesWithNewlineAndCRInNames reads, with real git, trees whose names
// hold a newline or a CR (legal file names in a sandbox): cat-file --batch
// reads one name a line and drops a CR before the LF, so asked for by path
// they came back as missing, or as another directory, and every tree asked
// after them landed on the wrong dir.
func TestTreesWithNewlineAndCRInNames(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	g := &Repo{R: runner.Exec{}, Root: dir, CommonDir: dir + "/.git"}
	// The parent: an empty commit.
	cmd := exec.Command("git", "-C", dir, "commit-tree", "-m", "empty", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
	parent, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// Beside the odd names, "cr" and "nl" are plain dirs a mangled name
	// would be taken for.
	root, err := g.Commit(ctx, CommitSpec{
		Ref: "refs/heads/t", Parent: strings.TrimSpace(string(parent)), Message: "m", Author: "T <t@t>", When: time.Unix(0, 0),
		Changes: []Change{
			{Path: "nl\ndir/f", Mode: "100644", Content: []byte("f")},
			{Path: "nl\ndir/sub/g", Mode: "100644", Content: []byte("g")},
			{Path: "cr\r/h", Mode: "100644", Content: []byte("h")},
			{Path: "cr/decoy", Mode: "100644", Content: []byte("d")},
			{Path: "nl/decoy", Mode: "100644", Content: []byte("d")},
			{Path: "plain/p", Mode: "100644", Content: []byte("p")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	trees, err := g.Trees(ctx, root, []string{"", "cr\r", "nl\ndir", "nl\ndir/sub", "plain", "nl\nmissing", "nl\ndir/f"})
	if err != nil {
		t.Fatal(err)
	}
	has := func(d, name string) bool { _, ok := trees[d][name]; return ok }
	for _, c := range []struct{ dir, name string }{
		{"", "plain"}, {"cr\r", "h"}, {"nl\ndir", "f"}, {"nl\ndir", "sub"}, {"nl\ndir/sub", "g"}, {"plain", "p"},
	} {
		if !has(c.dir, c.name) {
			t.Errorf("tree %q = %v, want an entry %q", c.dir, trees[c.dir], c.name)
		}
	}
	if has("cr\r", "decoy") {
		t.Errorf("tree %q is the tree of \"cr\": %v", "cr\r", trees["cr\r"])
	}
	for _, d := range []string{"nl\nmissing", "nl\ndir/f"} {
		if v, ok := trees[d]; !ok || v != nil {
			t.Errorf("tree %q = %v, %v; want nil (missing, or not a tree)", d, v, ok)
		}
	}
}

// TestTreesWithAnyByteInNames: cat-file answers a missing "<commit>:a b" with
// "<commit>:a b missing", which a header split on blanks took for a bad
// size, failing every snapshot after a directory with a space was made.
// Every byte but NUL and '/' must work in a directory's name.
func TestTreesWithAnyByteInNames(t *testing.T) {
	g, parent := newTestRepo(t)
	var changes []Change
	var dirs []string
	for _, n := range oddNames {
		changes = append(changes, Change{Path: n + "/in " + n, Mode: "100644", Content: []byte(n)})
		dirs = append(dirs, n, n+"/gone", "gone "+n)
	}
	commit, err := g.Commit(context.Background(), CommitSpec{Ref: "refs/heads/t", Parent: parent, Message: "m", Author: "T <t@t>", When: time.Unix(0, 0), Changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	trees, err := g.Trees(context.Background(), commit, dirs)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range oddNames {
		if _, ok := trees[n]["in "+n]; !ok {
			t.Errorf("tree %q = %v, want its entry %q", n, trees[n], "in "+n)
		}
		for _, d := range []string{n + "/gone", "gone " + n} {
			if v, ok := trees[d]; !ok || v != nil {
				t.Errorf("tree %q = %v, %v; want nil (missing)", d, v, ok)
			}
		}
	}
}

// oddNames are names made of the bytes that broke or could break a parser.
var oddNames = []string{"a b", "a  b", "tab\there", "cr\rx", "nl\nx", " lead", "trail ", `q"uote`, `back\slash`, "-dash", "--end-of-options",
	"ünï", "bad\xff\xfe", "\x80", "x missing", "y ambiguous", "z 1 2", "@{-1}", "HEAD", "a^{tree}", "b~1", "c:d", ":e", "*", "[x]", "#h", "!b"}

// newTestRepo makes a repository with one empty commit, and returns it.
func newTestRepo(t testing.TB) (*Repo, string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	cmd := exec.Command("git", "-C", dir, "commit-tree", "-m", "empty", "4b825dc642cb6eb9a060e54bf8d69288fbee4904")
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
	parent, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{R: runner.Exec{}, Root: dir, CommonDir: dir + "/.git"}, strings.TrimSpace(string(parent))
}

// FuzzParseTree: any tree object is parsed or refused without panicking.
func FuzzParseTree(f *testing.F) {
	f.Add([]byte("100644 a b\x00aaaaaaaaaaaaaaaaaaaa40000 d\x00bbbbbbbbbbbbbbbbbbbb"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ParseTree(raw)
	})
}

// FuzzReadBatchObject: any cat-file answer is read or refused without
// panicking, and a missing object is told from a found one by the answer's
// whole first line.
func FuzzReadBatchObject(f *testing.F) {
	f.Add("a b missing\n", "a b")
	f.Add("0123456789012345678901234567890123456789 tree 0\n\n", "x")
	f.Fuzz(func(t *testing.T, out, name string) {
		typ, body, err := ReadBatchObject(bufio.NewReader(strings.NewReader(out)), name)
		if err == nil && typ == "" && body != nil {
			t.Errorf("missing object with a body %q", body)
		}
	})
}

// TestObjectsCommitAndTrees: one reader answers a ref's commit, as
// ResolveRef does (none for a missing ref or one that is not a commit),
// then the trees of that commit.
func TestObjectsCommitAndTrees(t *testing.T) {
	g, parent := newTestRepo(t)
	if out, err := exec.Command("git", "-C", g.Root, "update-ref", "refs/heads/litterbox/x", parent).CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v %s", err, out)
	}
	blob, err := exec.Command("git", "-C", g.Root, "hash-object", "-w", "--stdin").Output()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", g.Root, "update-ref", "refs/tags/blob", strings.TrimSpace(string(blob))).CombinedOutput(); err != nil {
		t.Fatalf("update-ref: %v %s", err, out)
	}
	o := g.Objects(context.Background())
	defer o.Close()
	for ref, want := range map[string]string{"refs/heads/litterbox/x": parent, "refs/heads/nothing": "", "refs/tags/blob": ""} {
		id, ok, err := o.Commit(ref)
		if err != nil || ok != (want != "") || id != want {
			t.Errorf("Commit(%s) = %q, %v, %v; want %q", ref, id, ok, err, want)
		}
		rid, rok, rerr := g.ResolveRef(context.Background(), ref)
		if rerr != nil || rid != id || rok != ok {
			t.Errorf("ResolveRef(%s) = %q, %v, %v; Commit said %q, %v", ref, rid, rok, rerr, id, ok)
		}
	}
	if _, _, err := o.Commit("refs/heads/a\nrefs/heads/b"); err == nil {
		t.Error("a ref name with a newline was sent to git")
	}
	o = g.Objects(context.Background())
	defer o.Close()
	tip, ok, err := o.Commit("refs/heads/litterbox/x")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	trees, err := o.Trees(tip, []string{"", "missing"})
	if err != nil || trees[""] == nil || len(trees[""]) != 0 || trees["missing"] != nil {
		t.Errorf("Trees after Commit = %v, %v; want an empty root and no missing", trees, err)
	}
	if err := o.Close(); err != nil {
		t.Error(err)
	}
}
