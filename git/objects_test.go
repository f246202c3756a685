package git

import (
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
