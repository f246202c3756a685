package git

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/runner"
)

// Fuzz targets for the parsers of git's output. Where git itself can answer
// (log, status), the target runs real git on the fuzzed input and compares;
// elsewhere it renders output in git's documented format and checks the
// parser gives the values back.

// hexID is a 40-hex object id made from any fuzzed string.
func hexID(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// scratchRepo makes an empty repository with its own config, for targets
// that ask git itself. It is made once per fuzzing process.
func scratchRepo(f *testing.F) (*Repo, func(t *testing.T, stdin string, env []string, args ...string) string) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("needs git")
	}
	dir := f.TempDir()
	home := f.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fuzz", "GIT_AUTHOR_EMAIL=fuzz@litterbox.dev", "GIT_COMMITTER_NAME=Fuzz", "GIT_COMMITTER_EMAIL=fuzz@litterbox.dev"}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		f.Setenv(k, v)
	}
	run := func(t *testing.T, stdin string, env []string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		f.Fatalf("git init: %v %s", err, out)
	}
	return &Repo{R: runner.Exec{}, Root: dir, CommonDir: filepath.Join(dir, ".git")}, run
}

// FuzzParseLog commits a fuzzed message at a fuzzed time and zone with real
// git, and checks Log reads back the id, the date and the subject exactly as
// git prints them on their own (%H, %cI, %s).
func FuzzParseLog(f *testing.F) {
	g, git := scratchRepo(f)
	const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	base := strings.TrimSpace(git(&testing.T{}, "base", nil, "commit-tree", emptyTree, "-F", "-"))
	// Subjects Litterbox writes, and what an agent may put in one.
	f.Add("bash: echo a; echo b", int64(1795474973), int16(0))
	f.Add("write: dir/a.txt\n\nbody", int64(1795474970), int16(60))
	f.Add("milestone: \x1b]0;pwned\x07\x1b[2J", int64(0), int16(-300))
	f.Add("  indented\nand continued  \t\n\nbody", int64(1), int16(345))
	f.Add("unit\x1fseparator", int64(4102444799), int16(-720))
	f.Add("no-break space at the end\u00a0", int64(86400), int16(0))
	f.Add("\xff\xfe not UTF-8", int64(86400), int16(0))
	f.Add("", int64(86400), int16(0))
	f.Fuzz(func(t *testing.T, msg string, unix int64, zoneMinutes int16) {
		if strings.ContainsRune(msg, 0) {
			t.Skip("git refuses a NUL in a commit message")
		}
		// git refuses a local time before 1970.
		unix = min(max(unix, 86400), 4102444799)
		zm := int(zoneMinutes) % (14 * 60)
		sign := "+"
		if zm < 0 {
			sign, zm = "-", -zm
		}
		date := fmt.Sprintf("@%d %s%02d%02d", unix, sign, zm/60, zm%60)
		id := strings.TrimSpace(git(t, msg, []string{"GIT_COMMITTER_DATE=" + date, "GIT_AUTHOR_DATE=" + date}, "commit-tree", emptyTree, "-p", base, "-F", "-"))
		fields := strings.SplitN(git(t, "", nil, "log", "-1", "--format=%H%n%cI%n%s", id), "\n", 3)
		wantID, wantDate, wantSubject := fields[0], fields[1], strings.TrimSuffix(fields[2], "\n")

		got, err := g.Log(context.Background(), base, id)
		if err != nil || len(got) != 1 {
			t.Fatalf("Log = %+v, %v; want one commit", got, err)
		}
		c := got[0]
		if c.ID != wantID || c.Date.Format("2006-01-02T15:04:05-07:00") != wantDate || c.Subject != wantSubject {
			t.Errorf("Log = %q %s %q\nwant  %q %s %q", c.ID, c.Date.Format("2006-01-02T15:04:05-07:00"), c.Subject, wantID, wantDate, wantSubject)
		}
	})
}

// validPath reports whether p can be a file's path in a working tree: no
// NUL, no empty, "." or ".." component, no .git, each component a legal
// file name length.
func validPath(p string) bool {
	if p == "" || len(p) > 1024 || strings.ContainsRune(p, 0) {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") || len(c) > 255 {
			return false
		}
	}
	return true
}

// FuzzParseStatusPaths makes an untracked file with a fuzzed name (names are
// bytes: newlines, quotes, backslashes, non-UTF-8) and checks that Dirty,
// which apply and merge use to refuse to overwrite local work, names it.
func FuzzParseStatusPaths(f *testing.F) {
	g, git := scratchRepo(f)
	git(&testing.T{}, "", nil, "commit", "-q", "--allow-empty", "-m", "init")
	for _, name := range []string{"a b.txt", "dir/sub/new", "tab\there", "new\nline", `quote"and\backslash`, "-leading-dash", "日本/語", "\xff\xfe", " lead and trail ", "git~1", ".git ", "x\r"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validPath(name) {
			t.Skip("not a path")
		}
		top := filepath.Join(g.Root, strings.Split(name, "/")[0])
		defer os.RemoveAll(top)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(g.Root, name)), 0o755); err != nil {
			t.Skip(err)
		}
		if err := os.WriteFile(filepath.Join(g.Root, name), []byte("x"), 0o644); err != nil {
			t.Skip(err)
		}
		got, err := g.Dirty(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{name}) {
			t.Errorf("Dirty = %q, want [%q]", got, name)
		}
	})
}

// FuzzParseRefs renders for-each-ref lines for two refs and checks ParseRefs
// maps each name to its id. Ref names hold no space or control character
// (git check-ref-format).
func FuzzParseRefs(f *testing.F) {
	f.Add("refs/heads/litterbox/x", "refs/heads/litterbox/my-feature", "a", "b")
	f.Add("refs/heads/litterbox/日本", "refs/heads/litterbox/a.b_c-d", "c", "d")
	// check-ref-format allows a no-break space, even at the end.
	f.Add("refs/heads/litterbox/x\u00a0", "refs/heads/\u00a0y", "e", "f")
	f.Fuzz(func(t *testing.T, name1, name2, seed1, seed2 string) {
		for _, n := range []string{name1, name2} {
			if n == "" || strings.IndexFunc(n, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
				t.Skip("not a ref name")
			}
		}
		if name1 == name2 {
			t.Skip("for-each-ref lists a ref once")
		}
		want := map[string]string{name1: hexID(seed1), name2: hexID(seed2)}
		out := want[name1] + " " + name1 + "\n" + want[name2] + " " + name2 + "\n"
		got := ParseRefs(out)
		if len(got) != 2 || got[name1] != want[name1] || got[name2] != want[name2] {
			t.Errorf("ParseRefs(%q) = %q, want %q", out, got, want)
		}
	})
}

// FuzzParseMergeTree renders merge-tree's -z answer (the tree, then each
// conflicted path, a path once per conflicted stage) and checks the tree and
// the conflicts, each once and in order, come back.
func FuzzParseMergeTree(f *testing.F) {
	f.Add("tree", "dir/a b.txt", "tab\there", "dir/a b.txt")
	f.Add("t", "new\nline", "", "")
	f.Fuzz(func(t *testing.T, seed, p1, p2, p3 string) {
		tree := hexID(seed)
		out := tree + "\x00"
		var want []string
		for _, p := range []string{p1, p2, p3} {
			if strings.ContainsRune(p, 0) {
				t.Skip("a path has no NUL")
			}
			if p == "" {
				continue
			}
			out += p + "\x00"
			if !slices.Contains(want, p) {
				want = append(want, p)
			}
		}
		gotTree, got, err := ParseMergeTree(out)
		if err != nil || gotTree != tree || !slices.Equal(got, want) {
			t.Errorf("ParseMergeTree(%q) = %q %q %v, want %q %q", out, gotTree, got, err, tree, want)
		}
	})
}

// FuzzParseApplyErrors renders git apply's error lines for a fuzzed path, in
// each of the forms git prints, and checks the path comes back once. git
// prints the path raw, so one holding a newline cannot be told apart and is
// left out.
func FuzzParseApplyErrors(f *testing.F) {
	f.Add("dir/g h.txt", 12)
	f.Add("a: b:3", 1)
	f.Add(" lead", 7)
	f.Fuzz(func(t *testing.T, path string, line int) {
		if path == "" || strings.ContainsAny(path, "\n\x00") {
			t.Skip("not a path git apply can name on one line")
		}
		for _, stderr := range []string{
			fmt.Sprintf("error: patch failed: %s:%d\nerror: %s: patch does not apply\n", path, line, path),
			fmt.Sprintf("error: %s: already exists in working directory\n", path),
			fmt.Sprintf("error: %s: No such file or directory\n", path),
			fmt.Sprintf("error: %s: does not exist in index\n", path),
			fmt.Sprintf("Checking patch %s...\nerror: while searching for:\nx\nerror: patch failed: %s:%d\nerror: %s: patch does not apply\n", path, path, line, path),
		} {
			if got := ParseApplyErrors(stderr); !slices.Equal(got, []string{path}) {
				t.Errorf("ParseApplyErrors(%q) = %q, want [%q]", stderr, got, path)
			}
		}
	})
}

// FuzzParseLsTree renders ls-tree -z entries with fuzzed paths and checks
// every field comes back.
func FuzzParseLsTree(f *testing.F) {
	f.Add("a b.txt", "dir/tab\there", "x", "y")
	f.Add("new\nline", "-dash", "", "")
	f.Fuzz(func(t *testing.T, path1, path2, seed1, seed2 string) {
		want := []LsEntry{{"100644", "blob", hexID(seed1), path1}, {"040000", "tree", hexID(seed2), path2}}
		var out strings.Builder
		for _, e := range want {
			if e.Path == "" || strings.ContainsRune(e.Path, 0) {
				t.Skip("not a path")
			}
			fmt.Fprintf(&out, "%s %s %s\t%s\x00", e.Mode, e.Type, e.ID, e.Path)
		}
		got, err := ParseLsTree([]byte(out.String()))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseLsTree(%q) = %q, %v; want %q", out.String(), got, err, want)
		}
	})
}

// FuzzParseCatFileBlob renders cat-file --batch's answers for a fuzzed path
// and content (found, missing, not a blob) and checks what ParseCatFileBlob
// makes of each.
func FuzzParseCatFileBlob(f *testing.F) {
	f.Add(".litterbox.toml", []byte("setup = [\"true\"]\n"))
	f.Add("dir/a b.txt", []byte("x missing\n"))
	f.Add("blob 3", []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, path string, content []byte) {
		if strings.ContainsAny(path, "\n\x00") {
			t.Skip("cat-file --batch reads one name a line")
		}
		found := fmt.Sprintf("%s blob %d\n%s\n", hexID(path), len(content), content)
		if got, ok, err := ParseCatFileBlob([]byte(found), path); err != nil || !ok || string(got) != string(content) {
			t.Errorf("found: ParseCatFileBlob(%q) = %q %v %v, want the content", found, got, ok, err)
		}
		missing := hexID("commit") + ":" + path + " missing\n"
		if got, ok, err := ParseCatFileBlob([]byte(missing), path); err != nil || ok || got != nil {
			t.Errorf("missing: ParseCatFileBlob(%q) = %q %v %v, want not found", missing, got, ok, err)
		}
		tree := fmt.Sprintf("%s tree 0\n\n", hexID(path))
		if _, ok, err := ParseCatFileBlob([]byte(tree), path); ok || err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("tree: ParseCatFileBlob(%q) = %v %v, want an error naming %q", tree, ok, err, path)
		}
	})
}
