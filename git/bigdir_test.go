package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// emptyBlob is the id of the empty blob, which every repository can name.
const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// bigCommit commits changes on top of parent (on refs/heads/t), the empty
// blob written first.
func bigCommit(t testing.TB, g *Repo, parent string, changes []Change) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", g.Root, "hash-object", "-w", "--stdin").CombinedOutput(); err != nil {
		t.Fatalf("hash-object: %v %s", err, out)
	}
	id, err := g.Commit(context.Background(), CommitSpec{Ref: "refs/heads/t", Parent: parent, Message: "m", Author: "T <t@t>", When: time.Unix(0, 0), Changes: changes})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func treeOf(t testing.TB, dir, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "rev-parse", rev+"^{tree}").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestCommitBigDirectories: a commit that changes thousands of entries of
// one directory (written with mktree, not entry by entry by fast-import,
// whose cost grows with the square of a tree's entries) makes the tree
// `git add -A` + `write-tree` makes of the same files: a big directory,
// one nested in it, a file that becomes a big directory, deletions in it,
// a change deeper inside, and inline content.
func TestCommitBigDirectories(t *testing.T) {
	g, empty := newTestRepo(t)
	n := 3 * bigDir
	var first []Change
	for i := range n {
		first = append(first, Change{Path: fmt.Sprintf("big/f%05d", i), Mode: "100644", ID: emptyBlob})
	}
	first = append(first, Change{Path: "was", Mode: "100644", ID: emptyBlob}, Change{Path: "big/sub/keep", Mode: "100644", ID: emptyBlob})
	c1 := bigCommit(t, g, empty, first)

	var second []Change
	second = append(second, Change{Path: "was", Delete: true})
	for i := range n {
		if i%3 == 0 {
			second = append(second, Change{Path: fmt.Sprintf("big/f%05d", i), Delete: true})
		}
		second = append(second, Change{Path: fmt.Sprintf("big/nested/g%05d", i), Mode: "100755", ID: emptyBlob})
		second = append(second, Change{Path: fmt.Sprintf("was/h%05d", i), Mode: "100644", ID: emptyBlob})
	}
	second = append(second, Change{Path: "big/sub/keep", Delete: true}, Change{Path: "big/sub/new", Mode: "100644", Content: []byte("inline\n")},
		Change{Path: "big/zz-inline", Mode: "100644", Content: []byte("x\n")})
	c2 := bigCommit(t, g, c1, second)

	// The same files, through git add -A.
	wt := t.TempDir()
	mk := func(p, content string, mode os.FileMode) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(wt, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, p), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if i%3 != 0 {
			mk(fmt.Sprintf("big/f%05d", i), "", 0o644)
		}
		mk(fmt.Sprintf("big/nested/g%05d", i), "", 0o755)
		mk(fmt.Sprintf("was/h%05d", i), "", 0o644)
	}
	mk("big/sub/new", "inline\n", 0o644)
	mk("big/zz-inline", "x\n", 0o644)
	sameTree(t, g, c2, wt)
}

// BenchmarkCommitOneBigDirectory commits b.N times 80,000 empty files into
// one directory: fast-import alone took 43 s for 80,000 (20,000: 1.6 s,
// 40,000: 5.9 s), the square of the entries.
func BenchmarkCommitOneBigDirectory(b *testing.B) {
	for _, n := range []int{20_000, 40_000, 80_000, 300_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			g, empty := newTestRepo(b)
			var changes []Change
			for i := range n {
				changes = append(changes, Change{Path: fmt.Sprintf("d/f%07d", i), Mode: "100644", ID: emptyBlob})
			}
			b.ResetTimer()
			for range b.N {
				bigCommit(b, g, empty, changes)
			}
		})
	}
}

// TestCommitBigTopDirectory: thousands of files changed at the top of the
// repository (the root's own tree written with mktree), beside a change
// deeper inside, make the tree `git add -A` + `write-tree` makes.
func TestCommitBigTopDirectory(t *testing.T) {
	g, empty := newTestRepo(t)
	first := []Change{{Path: "deep/a", Mode: "100644", ID: emptyBlob}, {Path: "deep/b", Mode: "100644", ID: emptyBlob}}
	c1 := bigCommit(t, g, empty, first)
	second := []Change{{Path: "deep/a", Delete: true}}
	for i := range bigDir {
		second = append(second, Change{Path: fmt.Sprintf("top%05d", i), Mode: "100644", ID: emptyBlob})
	}
	c2 := bigCommit(t, g, c1, second)

	wt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wt, "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"deep/b"}
	for i := range bigDir {
		names = append(names, fmt.Sprintf("top%05d", i))
	}
	for _, p := range names {
		if err := os.WriteFile(filepath.Join(wt, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sameTree(t, g, c2, wt)
}

// sameTree checks that commit's tree is the one `git add -A` + `write-tree`
// makes of the files in wt.
func sameTree(t *testing.T, g *Repo, commit, wt string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		if out, err := exec.Command("git", append([]string{"-C", wt}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out, err := exec.Command("git", "-C", wt, "write-tree").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(out))
	if got := treeOf(t, g.Root, commit); got != want {
		out, _ := exec.Command("git", "-C", g.Root, "diff", "--stat", want, got).CombinedOutput()
		t.Errorf("tree %s, want %s (git add -A):\n%.2000s", got, want, out)
	}
}
