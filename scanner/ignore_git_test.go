package scanner

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The ignore rules are tested against git itself: a scratch work tree holds
// the .gitignore files and the paths, and `git check-ignore --no-index` says
// which paths git ignores. git 2.39's check-ignore applies a directory's
// exclusion to everything under it, as `git add -A` does.

// ignoreCase is one differential case: .gitignore files by directory ("" is
// the root), global exclude lines, and the files to ask about (their
// directories are asked about too).
type ignoreCase struct {
	ignores  map[string]string
	excludes string
	files    []string
}

// gitIgnored asks git which of c's paths (files and their directories) it
// ignores. ok is false when the case cannot be built on this file system.
func gitIgnored(t testing.TB, c ignoreCase) (paths []string, isDir map[string]bool, ignored map[string]bool, ok bool) {
	t.Helper()
	root := t.TempDir()
	isDir = map[string]bool{}
	for _, f := range c.files {
		if f == "" || strings.HasPrefix(f, "/") || strings.HasSuffix(f, "/") || strings.Contains(f, "//") || strings.ContainsRune(f, 0) {
			return nil, nil, nil, false
		}
		for _, comp := range strings.Split(f, "/") {
			if comp == "." || comp == ".." || comp == ".git" || comp == ".gitignore" {
				return nil, nil, nil, false
			}
		}
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			isDir[d] = true
		}
	}
	for _, f := range c.files {
		if isDir[f] {
			continue // a file and a directory of one name: keep the directory
		}
		if _, dup := isDir[f]; dup {
			continue
		}
		isDir[f] = false
	}
	for d := range c.ignores {
		if d != "" {
			if v, ok := isDir[d]; ok && !v {
				return nil, nil, nil, false
			}
			for x := d; x != "."; x = path.Dir(x) {
				isDir[x] = true
			}
		}
	}
	for p, dir := range isDir {
		abs := filepath.Join(root, p)
		var err error
		if dir {
			err = os.MkdirAll(abs, 0o755)
		} else {
			if err = os.MkdirAll(filepath.Dir(abs), 0o755); err == nil {
				err = os.WriteFile(abs, nil, 0o644)
			}
		}
		if err != nil {
			return nil, nil, nil, false
		}
	}
	for d, text := range c.ignores {
		if err := os.WriteFile(filepath.Join(root, d, ".gitignore"), []byte(text), 0o644); err != nil {
			return nil, nil, nil, false
		}
	}
	excl := filepath.Join(root, ".git-excludes")
	os.WriteFile(excl, []byte(c.excludes), 0o644)
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for p := range isDir {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	cmd := exec.Command("git", "-c", "core.excludesFile="+excl, "-c", "core.ignoreCase=false", "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+root, "XDG_CONFIG_HOME="+root)
	// "./" keeps a leading ':' from being read as pathspec magic
	// (check-ignore takes no --literal-pathspecs); git echoes it back.
	cmd.Stdin = strings.NewReader("./" + strings.Join(paths, "\x00./") + "\x00")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Fatalf("git check-ignore: %v %s", err, stderr.String())
	}
	fields := strings.Split(string(out), "\x00")
	ignored = map[string]bool{}
	for i := 0; i+3 < len(fields); i += 4 {
		source, pattern, p := fields[i], fields[i+2], strings.TrimPrefix(fields[i+3], "./")
		ignored[p] = source != "" && !strings.HasPrefix(pattern, "!")
	}
	if len(ignored) != len(paths) {
		t.Fatalf("git check-ignore answered %d paths of %d: %q", len(ignored), len(paths), out)
	}
	return paths, isDir, ignored, true
}

// ourIgnored decides p as the scanner does: walking from the root, a
// directory that is ignored ends the walk (everything under it is ignored),
// and each directory's .gitignore joins the rules for what lies below it.
func ourIgnored(c ignoreCase, p string, dir bool) bool {
	ig := (&ignorer{}).with(parseIgnore("", []byte(c.excludes)))
	if text, ok := c.ignores[""]; ok {
		ig = ig.with(parseIgnore("", []byte(text)))
	}
	comps := strings.Split(p, "/")
	for i := 1; i < len(comps); i++ {
		d := strings.Join(comps[:i], "/")
		if ig.ignored(d, true) {
			return true
		}
		if text, ok := c.ignores[d]; ok {
			ig = ig.with(parseIgnore(d, []byte(text)))
		}
	}
	return ig.ignored(p, dir)
}

// checkAgainstGit fails t for every path where ours and git's verdicts
// differ.
func checkAgainstGit(t testing.TB, c ignoreCase) {
	t.Helper()
	paths, isDir, want, ok := gitIgnored(t, c)
	if !ok {
		return
	}
	for _, p := range paths {
		if got := ourIgnored(c, p, isDir[p]); got != want[p] {
			t.Errorf("ignores %q, excludes %q: %q (dir=%v) ignored=%v, git says %v", c.ignores, c.excludes, p, isDir[p], got, want[p])
		}
	}
}

func needGit(t testing.TB) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
}

// TestIgnoreMatchesGit: patterns and names chosen to hit every rule of
// gitignore(5) and of git's wildmatch, the bracket classes that once
// differed (`[!a]`, `[^a]`, `[]a]`, ranges, `[[:digit:]]`), `**`, escapes,
// trailing spaces, negation, directory-only rules, and names with spaces,
// newlines, CRs and bytes that are not UTF-8 (under a directory whose name
// held a newline the rules once did not apply at all).
func TestIgnoreMatchesGit(t *testing.T) {
	needGit(t)
	names := []string{"a", "b", "ab", "abc", "a1", "1", "x9", "]", "]a", "-", "a-b", "!", "!a", "^a", "#a", "[a]", "a b", "a ", "a\\", "\\a",
		"*", "?", "é", "\xff", "a\xff", "n\nl", "c\rr", "t\tb", "A", "Z", "aZ", ":", "a.o", "a.c", "foo", "foo.bak", "x.txt", ".hidden", "a/b", "b/a"}
	patterns := []string{
		"[!a]", "[^a]", "[]a]", "[]-a]", "[a-c]", "[c-a]", "[a-]", "[-a]", "[!]a]", "[[:digit:]]", "[[:alpha:]]", "[[:alnum:]]*",
		"[[:space:]]*", "*[[:upper:]]*", "[[:punct:]]", "[[:xdigit:]][[:xdigit:]]", "[[:lower:][:digit:]]*", "[[:bogus:]]", "[[:digit:]", "[a",
		"[\\]]", "[a\\-c]", "\\[a]", "a\\*", "\\*", "\\?", "\\!a", "\\#a", "#a", "!a", "a\\ ", "a  ", "a\\\\", "\\a", "a?", "?", "*",
		"**", "a/**", "**/a", "a/**/b", "**/b/", "a/", "/a", "a/b", "/a/b", "*/a", "a/*", "*.o", "!*.o", "*.[oc]", "*.[!o]", "foo*", "*oo",
		"[é]", "\xff", "*\xff", "n\nl", "n*", "c\r", "c?r", "t?b", "[[:cntrl:]]*", "[[:print:]]", "[[:graph:]]*", "[[:blank:]]*",
		"a/**/", "**/", "/", "//", "a//", "***", "a**b", "**a", "a/b/", ".*", "*.bak", "x.*", "[a-z]*", "[A-Z]", "[!a-z]",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Each pattern alone, against every name at the root and nested.
	for _, p := range patterns {
		var files []string
		for _, n := range names {
			files = append(files, n, "d/"+n, n+"/f", "n\nl/"+n)
		}
		checkAgainstGit(t, ignoreCase{ignores: map[string]string{"": p + "\n"}, files: dedupe(files)})
	}
	// Patterns combined, nested .gitignore files, negations and global
	// excludes, seeded and reproducible.
	for i := 0; i < 40; i++ {
		c := randomIgnoreCase(rng, patterns, names)
		checkAgainstGit(t, c)
	}
}

func dedupe(list []string) []string {
	sort.Strings(list)
	out := list[:0]
	for i, s := range list {
		if i == 0 || s != list[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func randomIgnoreCase(rng *rand.Rand, patterns, names []string) ignoreCase {
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	lines := func() string {
		var b strings.Builder
		for j := rng.IntN(6); j >= 0; j-- {
			p := pick(patterns)
			switch rng.IntN(5) {
			case 0:
				p = "!" + p
			case 1:
				p += " "
			case 2:
				p += "\r"
			}
			b.WriteString(p + "\n")
		}
		return b.String()
	}
	c := ignoreCase{ignores: map[string]string{"": lines()}, excludes: lines()}
	dirs := []string{"d", "d/e", "n\nl", pick(names)}
	for _, d := range dirs {
		if rng.IntN(2) == 0 {
			c.ignores[d] = lines()
		}
	}
	for j := 0; j < 30; j++ {
		f := pick(names)
		for k := rng.IntN(3); k > 0; k-- {
			f = pick(dirs) + "/" + f
		}
		c.files = append(c.files, f)
	}
	c.files = dedupe(c.files)
	return c
}

// FuzzIgnoreMatchesGit runs git as the oracle on fuzzed .gitignore text and
// names: `go test -fuzz FuzzIgnoreMatchesGit ./sandbox/`. Without -fuzz it
// checks the seeds.
func FuzzIgnoreMatchesGit(f *testing.F) {
	for _, s := range [][2]string{
		{"[!a]\n", "a\nb\n]"}, {"[]a]\n!b\n", "]\na\nb"}, {"a/**/b\n", "a/b\na/x/b\na/x/y/b"}, {"*.o \n\\ a\n", "x.o\n a"},
		{"[[:digit:]]*\n", "1a\na1"}, {"d/\n!d/keep\n", "d/keep\nd/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, ignore, names string) {
		needGit(t)
		if len(ignore) > 400 || len(names) > 400 {
			return
		}
		files := strings.Split(names, "\n")
		c := ignoreCase{ignores: map[string]string{"": ignore}, files: dedupe(files)}
		checkAgainstGit(t, c)
	})
}
