package scanner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// gitRefuses asks git whether it refuses name as an entry of the given mode
// (100644, 120000 or 040000): verify_path, with core.protectNTFS and
// core.protectHFS on, through update-index, and fsck --strict on a tree
// holding it. It returns git's verdict per name.
func gitRefuses(t testing.TB, names []string, mode string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	git := func(stdin string, args ...string) (string, string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_INDEX_FILE="+filepath.Join(dir, "scratch-index"))
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return strings.TrimSpace(out.String()), errb.String(), err
	}
	if _, e, err := git("", "init", "-q", "."); err != nil {
		t.Fatalf("git init: %v %s", err, e)
	}
	blob, _, err := git("", "hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := git("100644 blob "+blob+"\tf\x00", "mktree", "-z")
	if err != nil {
		t.Fatal(err)
	}
	verdict := map[string]string{}
	var batch strings.Builder
	for i, n := range names {
		os.Remove(filepath.Join(dir, "scratch-index"))
		entry, typ, id := n, "blob", blob
		if mode == "040000" {
			entry, typ, id = n+"/f", "tree", sub
		}
		emode := mode
		if mode == "040000" {
			emode = "100644"
		}
		// fsck --strict checks all of verify_path's name rules; ask
		// update-index too, on a third of the names (a process each).
		if i%3 == 0 || len(names) == 1 {
			if _, e, err := git("", "-c", "core.protectNTFS=true", "-c", "core.protectHFS=true", "update-index", "--add", "--cacheinfo", emode+","+blob+","+entry); err != nil {
				verdict[n] = "update-index: " + strings.TrimSpace(e)
			}
		}
		batch.WriteString(mode + " " + typ + " " + id + "\t" + n + "\x00\x00")
	}
	// One tree per name, made by one mktree.
	out, e, err := git(batch.String(), "mktree", "-z", "--batch")
	if err != nil {
		t.Fatalf("mktree: %v %s", err, e)
	}
	ids := strings.Fields(out)
	if len(ids) != len(names) {
		t.Fatalf("mktree made %d trees for %d names", len(ids), len(names))
	}
	trees := map[string]string{} // tree id -> name
	for i, id := range ids {
		trees[id] = names[i]
	}
	_, fsck, _ := git("", "fsck", "--strict", "--no-dangling", "--no-progress")
	for _, line := range strings.Split(fsck, "\n") {
		for tree, n := range trees {
			if strings.Contains(line, tree) {
				verdict[n] += " fsck: " + line
			}
		}
	}
	return verdict
}

// hostileNames are names git treats specially, their look-alikes and
// ordinary names beside them.
func hostileNames() []string {
	bases := []string{".git", ".GIT", ".Git", "git~1", "GIT~1", "git~2", ".gitmodules", ".GitModules", "gitmod~1", "gitmod~4", "gitmod~5", "gi7eba~1", "gi7eba~9", "GI7EBA~12",
		".gitattributes", "gitatt~1", "gi7d29~1", ".gitignore", "gitign~1", "gi250a~1", ".mailmap", "mailma~1", "maba30~1", ".gitx", "git", ".gi", "gitmodules", ".gitmodulesx"}
	suffixes := []string{"", " ", ". .", "::$INDEX_ALLOCATION", "\\x", "x", "\xff", "\xef\xbf\xbe", "\u200c"}
	var out []string
	for i, b := range bases {
		for j, s := range suffixes {
			out = append(out, b+s)
			if (i+j)%4 == 0 {
				out = append(out, "x\\"+b+s)
			}
		}
	}
	out = append(out, ".g\u200cit", "\u200c.git", ".\u200dgit\u200e", ".gi\ufefft", ".g\u200cit\u200c", ".git\u202e", ".gitmo\u200cdules",
		".g\xc3\xafit", ".\xc5\x87it", ".git\xc0\xae", "...", ". ", " .git", "README", "readme", "\u00e9", "e\u0301", "-x", "a b", "t\tab", "n\nl")
	return out
}

// TestRefusedNamesMatchGit: every name git refuses, as a file, a link or a
// directory, is refused, and every name it takes is stored. `.git ` (a
// trailing space), `.git.`, `git~1`, `.GIT`, a .gitmodules that is a
// symlink (also as `gitmod~1`, `gi7eba~1`, `.gitmodules .`), and .git with
// code points HFS+ ignores reached the branch before, where fsck --strict
// reported hasDotgit or gitmodulesSymlink.
func TestRefusedNamesMatchGit(t *testing.T) {
	needGit(t)
	names := hostileNames()
	for _, mode := range []string{"100644", "120000", "040000"} {
		git := gitRefuses(t, names, mode)
		for _, n := range names {
			ours := wire.RefusedName(n, mode == "120000")
			if (ours != "") != (git[n] != "") {
				t.Errorf("mode %s, name %q: we say %q, git says %q", mode, n, ours, git[n])
			}
		}
	}
}

// FuzzRefusedNamesMatchGit holds RefusedName to git on fuzzed names:
// `go test -fuzz FuzzRefusedNamesMatchGit ./sandbox/`.
func FuzzRefusedNamesMatchGit(f *testing.F) {
	for _, n := range []string{".git ", "git~1", ".gitmodules", "gi7eba~1.", ".g\u200cit", "x\\.git"} {
		f.Add(n, true)
	}
	f.Fuzz(func(t *testing.T, name string, link bool) {
		needGit(t)
		if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
			return
		}
		mode := "100644"
		if link {
			mode = "120000"
		}
		git := gitRefuses(t, []string{name}, mode)
		if ours := wire.RefusedName(name, link); (ours != "") != (git[name] != "") {
			t.Errorf("mode %s, name %q: we say %q, git says %q", mode, name, ours, git[name])
		}
	})
}
