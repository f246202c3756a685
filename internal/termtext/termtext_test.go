package termtext

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain café ☕":                    "plain café ☕",
		"\x1b]0;pwned\x07\x1b[2J":         `\033]0;pwned\a\033[2J`,
		"a\nb\tc\r":                       `a\nb\tc\r`,
		"csi \u009b31m del \x7f bad \xff": `csi \302\23331m del \177 bad \377`,
		`back\slash "q"`:                  `back\slash "q"`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeText("line\n\ttab\x1b[2J"); got != "line\n\ttab\\033[2J" {
		t.Errorf("EscapeText = %q", got)
	}
}

// TestQuoteAsGit: a name is quoted as git quotes it in its own output
// (with core.quotePath off, so UTF-8 stays readable).
func TestQuoteAsGit(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "core.quotePath=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	names := []string{"plain.txt", "e\x1b[2Jvil", "tab\there", `quote"d`, `back\slash`, "café", "nl\nname", "bel\a", "\x7fdel"}
	for _, n := range names {
		if err := writeFile(filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	listed := strings.Split(strings.TrimSuffix(git("ls-files", "--others"), "\n"), "\n")
	got := map[string]bool{}
	for _, l := range listed {
		got[l] = true
	}
	for _, n := range names {
		if q := Quote(n); !got[q] {
			t.Errorf("Quote(%q) = %s, git lists %q", n, q, listed)
		}
	}
}

func writeFile(p string) error {
	return os.WriteFile(p, nil, 0o644)
}
