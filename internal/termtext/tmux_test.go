package termtext

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// TestPlainAsTmuxDraws: every Plain character takes in tmux (which asks
// the C library's wcwidth) no more cells than lipgloss measures: a line of
// 78 cells of it, then "|", is one row of an 80-column pane. About a minute
// of work, so it runs only when LITTERBOX_WIDTH_PROBE=1 and tmux is here:
// run it after a change of Plain, or of the Go or C library's tables.
func TestPlainAsTmuxDraws(t *testing.T) {
	if os.Getenv("LITTERBOX_WIDTH_PROBE") != "1" {
		t.Skip("set LITTERBOX_WIDTH_PROBE=1 to run (about a minute, needs tmux)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("needs tmux")
	}
	dir := t.TempDir()
	var lines strings.Builder
	var runes []rune
	for r := rune(0xa0); r <= utf8.MaxRune; r++ {
		if (r >= 0xd800 && r <= 0xdfff) || !Plain(r) {
			continue
		}
		lines.WriteString(strings.Repeat(string(r), 78/ansi.StringWidth(string(r))) + "|\n")
		runes = append(runes, r)
	}
	file := filepath.Join(dir, "lines.txt")
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", "termtext-probe", "-f", "/dev/null"}, args...)...).Output()
		if err != nil {
			t.Fatalf("tmux %v: %v", args, err)
		}
		return string(out)
	}
	tmux("start-server", ";", "set", "-g", "history-limit", "400000", ";",
		"new-session", "-d", "-x", "80", "-y", "50", "env LANG=C.UTF-8 sh -c 'cat "+file+"; echo PROBE-DONE; sleep 600'")
	defer exec.Command("tmux", "-L", "termtext-probe", "kill-server").Run()
	for start := time.Now(); !strings.Contains(tmux("capture-pane", "-p"), "PROBE-DONE"); {
		if time.Since(start) > 5*time.Minute {
			t.Fatal("tmux did not finish drawing")
		}
		time.Sleep(time.Second)
	}
	rows := strings.Split(tmux("capture-pane", "-p", "-S", "-", "-E", "-"), "\n")
	i := 0
	for _, r := range runes {
		if i >= len(rows) {
			t.Fatalf("the pane holds %d rows, fewer than the %d lines", len(rows), len(runes))
		}
		if strings.HasSuffix(rows[i], "|") {
			i++
			continue
		}
		t.Errorf("U+%04X: lipgloss measures %d cells, tmux draws it wider (the line wrapped)", r, ansi.StringWidth(string(r)))
		for i < len(rows) && !strings.HasSuffix(rows[i], "|") {
			i++
		}
		i++
	}
}
