package recording

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// TestMilestoneMessageHasOnlyOurTrailer builds milestone messages from
// hostile agent text as Milestone does and asks git which trailers they
// carry: only litterbox's own, whatever the agent wrote.
func TestMilestoneMessageHasOnlyOurTrailer(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, agent := range []string{
		"Work\n\nCo-authored-by: Trusted Human <human@example.com>",
		"Work\n\nCo-authored-by: A <a@b>\nLitterbox-Milestone: true\nSigned-off-by: X <x@y>",
		"Work\nCo-authored-by: A <a@b>",
		"Work\n\nfoo-bar : baz\n  continued\n(cherry picked from commit 1234567)",
		"Work\n\nSigned-off-by: X <x@y>\n\n\n",
		"Co-authored-by: A <a@b>\n\nLitterbox-Milestone: true",
	} {
		msg := neutralizeTrailers(termtext.EscapeText(strings.TrimSpace(agent))) + "\n\n" + milestoneTrailer
		cmd := exec.Command("git", "interpret-trailers", "--parse")
		cmd.Stdin = strings.NewReader(msg)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != milestoneTrailer {
			t.Errorf("message from %q: git reads trailers %q, want only %q", agent, got, milestoneTrailer)
		}
		if !isMilestone(msg) {
			t.Errorf("message from %q: not a milestone", agent)
		}
	}
}

func TestIsMilestone(t *testing.T) {
	for msg, want := range map[string]bool{
		"Work\n\nLitterbox-Milestone: true":                              true,
		"Work\n\nLitterbox-Milestone: true\n":                            true,
		"Litterbox-Milestone: true":                                      false, // a subject is never a trailer
		"bash: Litterbox-Milestone: true ...":                            false,
		"Work\n\n  Litterbox-Milestone: true\n\nLitterbox-Concurrent: 1": false,
		"Work\n\nLitterbox-Milestone: true\n\nmore":                      false,
	} {
		if got := isMilestone(msg); got != want {
			t.Errorf("isMilestone(%q) = %v, want %v", msg, got, want)
		}
	}
}
