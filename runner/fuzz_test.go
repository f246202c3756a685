package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// FuzzQuote checks that Quote's line, given to a real POSIX shell, yields
// exactly the words again: what a user pastes from a log line or an error
// runs what Litterbox ran.
func FuzzQuote(f *testing.F) {
	// Words from real argv: labels, docker templates, odd file names.
	f.Add("docker", "--label", "dev.litterbox.repo=/tmp/a,b \"q\" repo")
	f.Add("--format", `{"id":{{json .ID}}}`, "{{index .Config.Labels \"dev.litterbox.ports\"}}{{\"\\t\"}}")
	f.Add("sh", "-c", `tar -x -f - -C "$1" || { echo "copy failed" >&2; exit 3; }`)
	f.Add("it's", "", "a\nb\tc")
	f.Add("~", "*.go", "$HOME")
	f.Add("-n", "日本", "\xff\xfe")
	f.Add("a=b", "!", "#x")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		words := []string{a, b, c}
		for _, w := range words {
			if strings.ContainsRune(w, 0) {
				t.Skip("argv cannot hold NUL")
			}
		}
		line := Quote(words...)
		// The words follow printf, as the arguments of a pasted command do.
		out, err := exec.Command("sh", "-c", `printf '%s\0' `+line).Output()
		if err != nil {
			t.Fatalf("sh -c %q: %v", line, err)
		}
		if want := strings.Join(words, "\x00") + "\x00"; string(out) != want {
			t.Fatalf("Quote(%q) = %s; the shell read it as %q", words, line, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))
		}
	})
}
