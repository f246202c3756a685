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
		"\u202egnp.exe":                   `\342\200\256gnp.exe`,
		"\u2066admin\u2069 \u200f\u061c":  `\342\201\246admin\342\201\251 \342\200\217\330\234`,
		"\u202a\u202b\u202c\u202d \u200e": `\342\200\252\342\200\253\342\200\254\342\200\255 \342\200\216`,
		"arabic عربي, hebrew עברית, zwj 👩‍💻": `arabic عربي, hebrew עברית, zwj 👩\u{200d}\u{1f4bb}`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeText("line\n\ttab\x1b[2J"); got != "line\n\ttab\\033[2J" {
		t.Errorf("EscapeText = %q", got)
	}
	if got := Quote("\u202egnp.exe"); got != `"\342\200\256gnp.exe"` {
		t.Errorf("Quote = %s", got)
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
