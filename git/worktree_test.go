package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rawOutput is what `git diff-tree -r -z --raw --no-abbrev --no-renames`
// printed for a modification, a deletion, an addition, a mode change and a
// name holding a newline.
const rawOutput = ":100644 100644 814f4a422927b82f5f8a43f8fab6d3839e3983f2 879de50b9a967adae6ab5fe536d4ef6e0af21bb1 M\x00a.txt\x00" +
	":100644 000000 b023018cabc396e7692c70bbf5784a93d3f738ab 0000000000000000000000000000000000000000 D\x00gone.txt\x00" +
	":000000 100644 0000000000000000000000000000000000000000 1a7f284fd3e433234c61296f0f0f9cab68897ccc A\x00nl\nname.txt\x00" +
	":100644 100755 fa11a6a9c54797a8f68963af8ffc4d92bbffc660 fa11a6a9c54797a8f68963af8ffc4d92bbffc660 M\x00run.sh\x00"

func TestParseRaw(t *testing.T) {
	got, err := ParseRaw([]byte(rawOutput))
	if err != nil {
		t.Fatal(err)
	}
	want := []RawChange{
		{"a.txt", Entry{"100644", "814f4a422927b82f5f8a43f8fab6d3839e3983f2"}, Entry{"100644", "879de50b9a967adae6ab5fe536d4ef6e0af21bb1"}},
		{"gone.txt", Entry{"100644", "b023018cabc396e7692c70bbf5784a93d3f738ab"}, Entry{}},
		{"nl\nname.txt", Entry{}, Entry{"100644", "1a7f284fd3e433234c61296f0f0f9cab68897ccc"}},
		{"run.sh", Entry{"100644", "fa11a6a9c54797a8f68963af8ffc4d92bbffc660"}, Entry{"100755", "fa11a6a9c54797a8f68963af8ffc4d92bbffc660"}},
	}
	if len(got) != len(want) {
		t.Fatalf("ParseRaw = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, err := ParseRaw(nil); err != nil || len(got) != 0 {
		t.Errorf("ParseRaw(empty) = %v, %v", got, err)
	}
	for _, bad := range []string{"garbage\x00x\x00", ":100644 100644 a b M\x00", ":100644 M\x00p\x00"} {
		if _, err := ParseRaw([]byte(bad)); err == nil {
			t.Errorf("ParseRaw(%q): no error", bad)
		}
	}
}

// FuzzParseRaw renders records in diff-tree's raw -z format from fuzzed
// paths and entries and checks ParseRaw gives them back; any input at all
// must parse or fail, never panic.
func FuzzParseRaw(f *testing.F) {
	f.Add("a.txt", "nl\nname", "100644", "100755", "x", []byte(rawOutput))
	f.Add("caf\xe9", "d/e", "000000", "120000", "y", []byte(":1 2 3 4 M\x00\x00"))
	f.Fuzz(func(t *testing.T, p1, p2, m1, m2, seed string, raw []byte) {
		_, _ = ParseRaw(raw)
		if p1 == "" || p2 == "" || strings.ContainsRune(p1+p2, 0) {
			return
		}
		mode := func(m string) string {
			for _, ok := range []string{"000000", "100644", "100755", "120000", "160000"} {
				if m == ok {
					return m
				}
			}
			return "100644"
		}
		a, b := mode(m1), mode(m2)
		ida, idb := hexID(seed+"a"), hexID(seed+"b")
		if a == "000000" {
			ida = ZeroID
		}
		if b == "000000" {
			idb = ZeroID
		}
		out := fmt.Sprintf(":%s %s %s %s M\x00%s\x00:%s %s %s %s M\x00%s\x00", a, b, ida, idb, p1, b, a, idb, ida, p2)
		got, err := ParseRaw([]byte(out))
		if err != nil || len(got) != 2 {
			t.Fatalf("ParseRaw(%q) = %+v, %v", out, got, err)
		}
		entry := func(m, id string) Entry {
			if m == "000000" {
				return Entry{}
			}
			return Entry{m, id}
		}
		want := []RawChange{{p1, entry(a, ida), entry(b, idb)}, {p2, entry(b, idb), entry(a, ida)}}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("change %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}

// TestIgnoredMatching: the files listed are those the patterns match and
// git's own rules ignore, odd names included; a listed file git does not
// ignore (tracked, or untracked and not ignored) is not.
func TestIgnoredMatching(t *testing.T) {
	g, _ := newTestRepo(t)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(g.Root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g.Root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", ".env\n*.secret\nbuild/\n")
	write(".worktreeinclude", ".env\nbuild/\nnotes.txt\n")
	for _, p := range []string{".env", "sub/.env", "build/x/o", "tab\there.secret", "notes.txt", "other.secret"} {
		write(p, "x")
	}
	got, err := g.IgnoredMatching(context.Background(), ".worktreeinclude", []string{"tab*"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".env", "build/x/o", "sub/.env", "tab\there.secret"}
	if !slices.Equal(got, want) {
		t.Errorf("IgnoredMatching = %q, want %q", got, want)
	}
	if got, err := g.IgnoredMatching(context.Background(), "", []string{"notes.txt"}); err != nil || len(got) != 0 {
		t.Errorf("a file git does not ignore: %q, %v", got, err)
	}
}
