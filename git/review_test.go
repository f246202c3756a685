package git

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// Outputs captured from git 2.39.

func TestParseMergeTree(t *testing.T) {
	tests := []struct {
		name      string
		out       string
		tree      string
		conflicts []string
	}{
		{"clean", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84\x00", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84", nil},
		{"conflicts", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84\x00f\x00g\x00", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84", []string{"f", "g"}},
		{"odd names", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84\x00dir/a b.txt\x00tab\there\x00dir/a b.txt\x00", "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84", []string{"dir/a b.txt", "tab\there"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, conflicts, err := ParseMergeTree(tt.out)
			if err != nil {
				t.Fatal(err)
			}
			if tree != tt.tree || !slices.Equal(conflicts, tt.conflicts) {
				t.Errorf("got %q %q, want %q %q", tree, conflicts, tt.tree, tt.conflicts)
			}
		})
	}
	if _, _, err := ParseMergeTree("fatal: bad revision\n"); err == nil {
		t.Error("garbage parsed without error")
	}
}

func TestMergeTreeConflictExit(t *testing.T) {
	f := &runnertest.Fake{}
	args := []string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", "--end-of-options", "HEAD", "litterbox/x"}
	f.Expect(args, "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84\x00a.txt\x00", &runner.ExitError{ExitCode: 1})
	f.Expect(args, "4e214b81bdf03b2294cea4e1062c9eb5d3dbbe84\x00", &runner.ExitError{ExitCode: 1})
	f.Expect(args, "", &runner.ExitError{ExitCode: 128, Stderr: "fatal: not something we can merge"})
	g := &Repo{R: f, Root: "/r"}
	ctx := context.Background()

	if _, c, err := g.MergeTree(ctx, "HEAD", "litterbox/x"); err != nil || !slices.Equal(c, []string{"a.txt"}) {
		t.Errorf("conflict: got %q, %v", c, err)
	}
	// Exit 1 without names is still a conflict, never a clean merge.
	if _, c, err := g.MergeTree(ctx, "HEAD", "litterbox/x"); err != nil || len(c) != 1 {
		t.Errorf("unnamed conflict: got %q, %v", c, err)
	}
	if _, _, err := g.MergeTree(ctx, "HEAD", "litterbox/x"); runner.ExitCode(err) != 128 {
		t.Errorf("failure: got %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestParseApplyErrors(t *testing.T) {
	stderr := "error: patch failed: f:1\nerror: f: patch does not apply\n" +
		"error: patch failed: dir/g h.txt:12\nerror: dir/g h.txt: patch does not apply\n" +
		"error: new.txt: already exists in working directory\n" +
		"error: gone.txt: No such file or directory\n" +
		"warning: something else\n"
	want := []string{"f", "dir/g h.txt", "new.txt", "gone.txt"}
	if got := ParseApplyErrors(stderr); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestParseStatusPaths(t *testing.T) {
	out := "M  f\x00 M g\x00?? sp ace.txt\x00D  gone\x00?? dir/new\x00"
	want := []string{"f", "g", "sp ace.txt", "gone", "dir/new"}
	if got := ParseStatusPaths(out); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := ParseStatusPaths(""); got != nil {
		t.Errorf("clean tree: got %q", got)
	}
}

func TestParseLog(t *testing.T) {
	out := "c127de1814379f58ddec9a497df1548c20d8fde7\x1f2026-11-21T23:02:53+00:00\x1fbash: echo a; echo b\x00" +
		"\n4342351276a00b76d208f6d34d5ae749f3b3ec4\x1f2026-11-21T23:02:50+01:00\x1fwrite: dir/a.txt\x00"
	got, err := ParseLog(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Subject != "bash: echo a; echo b" || got[1].Short() != "4342351276a0" {
		t.Fatalf("got %+v", got)
	}
	if want := time.Date(2026, 11, 21, 22, 2, 50, 0, time.UTC); !got[1].Date.Equal(want) {
		t.Errorf("date %v, want %v", got[1].Date, want)
	}
	if got, err := ParseLog(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	if _, err := ParseLog("garbage\x00"); err == nil {
		t.Error("garbage parsed without error")
	}
}

func TestCommitMergeSigning(t *testing.T) {
	f := &runnertest.Fake{}
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "commit-tree", "-S", "-p", "h", "-p", "t", "-m", "msg", "--end-of-options", "tree"}, "", &runner.ExitError{ExitCode: 128, Stderr: "error: gpg failed to sign the data"})
	f.Expect([]string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "commit-tree", "--no-gpg-sign", "-p", "h", "-p", "t", "-m", "msg", "--end-of-options", "tree"}, "abc\n", nil)
	g := &Repo{R: f, Root: "/r"}
	ctx := context.Background()
	if _, err := g.CommitMerge(ctx, "tree", "msg", true, "h", "t"); runner.ExitCode(err) != 128 {
		t.Errorf("signed: %v", err)
	}
	if id, err := g.CommitMerge(ctx, "tree", "msg", false, "h", "t"); err != nil || id != "abc" {
		t.Errorf("unsigned: %q %v", id, err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// TestTracked: only a path in the index is tracked; an ignored or untracked
// file, a directory holding the path's name as a prefix, or a name with
// pathspec magic in it is not. A name that is the same file on a
// case-insensitive file system is tracked, and named.
func TestTracked(t *testing.T) {
	g, _ := newTestRepo(t)
	for _, n := range []string{".litterbox.local.toml", "ignored.toml", "*.toml", "dir/x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(g.Root, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g.Root, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	check := func(path string, want bool) {
		t.Helper()
		name, got, err := g.Tracked(ctx, path)
		if err != nil || got != want || (got && name != path) {
			t.Errorf("Tracked(%q) = %q, %v, %v; want %v", path, name, got, err, want)
		}
	}
	check(".litterbox.local.toml", false)
	if out, err := exec.Command("git", "-C", g.Root, "add", "*.toml", ".litterbox.local.toml", "ignored.toml", "dir/x").CombinedOutput(); err != nil {
		t.Fatalf("git add: %v %s", err, out)
	}
	check("*.toml", true)
	check(".litterbox.local.toml", true)
	if out, err := exec.Command("git", "-C", g.Root, "rm", "-q", "--cached", ".litterbox.local.toml", "ignored.toml").CombinedOutput(); err != nil {
		t.Fatalf("git rm: %v %s", err, out)
	}
	check(".litterbox.local.toml", false)
	check("ignored.toml", false)
	check("*.toml", true)
	check("dir", false)
	check("dir/x", true)

	// by case, and with a code point HFS+ ignores
	for _, variant := range []string{".LITTERBOX.LOCAL.TOML", ".litterbox\u200c.local.toml", "dir/X"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(g.Root, variant)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g.Root, variant), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", g.Root, "add", "--", variant).CombinedOutput(); err != nil {
			t.Fatalf("git add: %v %s", err, out)
		}
		want := strings.ToLower(strings.ReplaceAll(variant, "\u200c", ""))
		if variant == "dir/X" {
			want = "dir/x"
			if out, err := exec.Command("git", "-C", g.Root, "rm", "-q", "--cached", "dir/x").CombinedOutput(); err != nil {
				t.Fatalf("git rm: %v %s", err, out)
			}
		}
		name, ok, err := g.Tracked(ctx, want)
		if err != nil || !ok || name != variant {
			t.Errorf("Tracked(%q) with %q in the index = %q, %v, %v; want %q", want, variant, name, ok, err, variant)
		}
		if out, err := exec.Command("git", "-C", g.Root, "rm", "-q", "--cached", "--", variant).CombinedOutput(); err != nil {
			t.Fatalf("git rm: %v %s", err, out)
		}
	}
}

func TestParseDiffFiles(t *testing.T) {
	// git diff-tree -r -z --no-renames --no-abbrev --raw --numstat (git
	// 2.39): a text file, a binary one, a mode change, a new file whose
	// name holds a tab, one named like a raw record.
	z, id := strings.Repeat("0", 40), strings.Repeat("1", 40)
	out := ":100644 100644 " + id + " " + id + " M\x00a.txt\x00" +
		":100644 100644 " + id + " " + id + " M\x00bin\x00" +
		":100644 100755 " + id + " " + id + " M\x00run.sh\x00" +
		":000000 100644 " + z + " " + id + " A\x00sp ace\t.txt\x00" +
		":000000 100644 " + z + " " + id + " A\x00:100644 x\x00" +
		"2\t1\ta.txt\x00-\t-\tbin\x000\t0\trun.sh\x001\t0\tsp ace\t.txt\x003\t0\t:100644 x\x00"
	files, err := ParseDiffFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, fmt.Sprintf("%s|+%d -%d|%s", f.Path, f.Added, f.Deleted, f.What()))
	}
	want := []string{"a.txt|+2 -1|", "bin|+0 -0|binary", "run.sh|+0 -0|mode 100644 -> 100755", "sp ace\t.txt|+1 -0|new", ":100644 x|+3 -0|new"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for _, bad := range []string{":100644 100644 x\x00", "1\t0\ta\x00", ":100644 100644 " + id + " " + id + " M\x00a\x001\t0\tb\x00"} {
		if _, err := ParseDiffFiles(bad); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
	if files, err := ParseDiffFiles(""); err != nil || len(files) != 0 {
		t.Errorf("nothing: %v, %v", files, err)
	}
}
