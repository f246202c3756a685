package provision

import (
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/runner/runnertest"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// TestCreateReadsHeadOnce: a create from HEAD reads HEAD, that its branch
// is not there yet and the committed settings in one git process, where
// it took three (a process is a few milliseconds of CPU, which ten creates
// at once queue for on a small machine), and is made from that HEAD with
// those settings; a second create of the name is refused by its branch.
func TestCreateReadsHeadOnce(t *testing.T) {
	f := newFixture(t, map[string]string{".litterbox.toml": "setup = [\"echo\", \"from-the-commit\"]\n"})
	r := &runnertest.Recorder{Runner: f.r.Git.R}
	f.r.Git.R = r
	c := f.mustCreate("one")
	var reads []string
	for _, call := range r.Calls() {
		if strings.Contains(call, " rev-parse --verify") || strings.Contains(call, " cat-file --batch") {
			reads = append(reads, call)
		}
	}
	if len(reads) != 2 { // HeadFiles's, then the copy's archive
		t.Errorf("a create read HEAD, its branch and its settings in %d git processes, want 1 (and the copy's): %q", len(reads)-1, reads)
	}
	head, _ := f.git("rev-parse", "HEAD")
	if tip, _ := f.git("rev-parse", "litterbox/one"); tip != head {
		t.Errorf("the branch is at %s, want HEAD %s", tip, head)
	}
	if !strings.Contains(c.SetupOutput, "from-the-commit") {
		t.Errorf("the setup of the committed settings did not run: %q", c.SetupOutput)
	}
	if _, err := f.s.Create(f.ctx, f.r, "one", api.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second create of the name: %v", err)
	}
}
