package provision

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// agentCommits commits content as .litterbox.toml on the branch of sandbox
// slug, as a snapshot of what an agent wrote there would, and returns the
// new tip.
func (f *fixture) agentCommits(slug, content string) string {
	f.t.Helper()
	blob := f.mustGit("hash-object-stdin", content)
	tree := f.mustGit("mktree", "100644 blob "+blob+"\t.litterbox.toml\n")
	tip := f.mustGit("commit-tree", tree, "-p", api.BranchRef(slug), "-m", "bash: agent")
	f.mustGit("update-ref", api.BranchRef(slug), tip)
	return tip
}

// mustGit runs git in the repository; "hash-object-stdin" and "mktree"
// take their last argument as stdin.
func (f *fixture) mustGit(args ...string) string {
	f.t.Helper()
	var stdin string
	switch args[0] {
	case "hash-object-stdin":
		args, stdin = []string{"hash-object", "-w", "--stdin"}, args[1]
	case "mktree":
		args, stdin = []string{"mktree"}, args[1]
	}
	cmd := exec.Command("git", append([]string{"-C", f.r.Root()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// The settings a create uses are the user's: a fork takes its source's
// record; a sandbox made from a commit no branch of the user's holds, or a
// fork of a sandbox made before records existed, takes HEAD's file, never
// the agent's; a commit the user merged is theirs.
func TestSettingsComeFromTheUser(t *testing.T) {
	f := newFixture(t, map[string]string{".litterbox.toml": "[limits]\npids = 64\n"})
	f.mustCreate("a")
	tip := f.agentCommits("a", "[limits]\npids = 4000000\n")
	pids := func(opts api.CreateOptions, start string) (int, string) {
		t.Helper()
		cfg, rec, _, err := f.s.createSettings(f.ctx, f.r, "new", opts, start, start, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Pids, rec.From
	}
	if n, from := pids(api.CreateOptions{ForkOf: "a", From: tip}, tip); n != 64 || from != "sandbox a" {
		t.Errorf("a fork of a: pids %d from %q, want 64 from a's record", n, from)
	}
	if n, from := pids(api.CreateOptions{From: "litterbox/a"}, tip); n != 64 || from != "sandbox a" {
		t.Errorf("--from litterbox/a: pids %d from %q, want 64 from a's record", n, from)
	}
	head, _ := f.git("rev-parse", "HEAD")
	if n, from := pids(api.CreateOptions{From: tip}, tip); n != 64 || from != head {
		t.Errorf("--from the agent's commit: pids %d from %q, want 64 from HEAD", n, from)
	}
	// A sandbox made before settings were recorded.
	if err := os.Remove(state.File(f.r.Git.CommonDir, "a", state.SettingsFile)); err != nil {
		t.Fatal(err)
	}
	if n, from := pids(api.CreateOptions{ForkOf: "a", From: tip}, tip); n != 64 || from != head {
		t.Errorf("a fork of a without a record: pids %d from %q, want 64 from HEAD", n, from)
	}
	// Once the user merges the branch, its file is theirs.
	f.mustGit("merge", "-q", "--ff-only", api.BranchPrefix+"a")
	if n, _ := pids(api.CreateOptions{From: tip}, tip); n != 4000000 {
		t.Errorf("--from a commit the user merged: pids %d, want its own 4000000", n)
	}
}

// An image an agent picked from agent_images goes with the sandbox's
// settings to its forks, for as long as the user lists it.
func TestForkKeepsTheImage(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.p.Images = map[string]provider.Image{
		api.DefaultImage: {ID: "sha256:a", OS: "linux", Arch: "amd64"},
		"team/tool:2":    {ID: "sha256:b", OS: "linux", Arch: "amd64"},
	}
	local := filepath.Join(f.r.Root(), ".litterbox.local.toml")
	if err := os.WriteFile(local, []byte("agent_images = [\"team/tool:2\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Create(f.ctx, f.r, "p", api.CreateOptions{Image: "team/tool:2", ByAgent: true}); err != nil {
		t.Fatal(err)
	}
	// Stopped, so the fork takes no snapshot (the fake engine runs no scanner).
	for _, sb := range f.p.Objects() {
		f.p.SetState(sb.Ref, provider.StateStopped)
	}
	c, err := f.s.Fork(f.ctx, f.r, "p", "q", api.CreateOptions{ByAgent: true})
	if err != nil || c.Image != "team/tool:2" {
		t.Fatalf("fork of p = %+v, %v; want p's image", c, err)
	}
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Fork(f.ctx, f.r, "p", "r", api.CreateOptions{})
	if !errors.Is(err, api.ErrImage) {
		t.Errorf("fork once agent_images no longer lists p's image = %v, want ErrImage", err)
	}
	if _, err := f.git("rev-parse", "--verify", "--quiet", api.BranchRef("r")); err == nil {
		t.Errorf("the refused fork left its branch")
	}
}

func TestMatchRef(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		ref      string
		want     bool
	}{
		{[]string{"refs/heads/litterbox/"}, "refs/heads/litterbox/a", true},
		{[]string{"refs/heads/litterbox/*"}, "refs/heads/litterbox/a", true},
		{[]string{"refs/heads/litterbox/*"}, "refs/heads/litterbox-a", false},
		{[]string{"refs/heads/litterbox"}, "refs/heads/litterbox/a", false},
		{[]string{"refs/stash"}, "refs/stash", true},
		{[]string{"refs/stash"}, "refs/stashed", false},
		{nil, "refs/heads/main", false},
	} {
		if got := matchRef(c.patterns, c.ref); got != c.want {
			t.Errorf("matchRef(%q, %q) = %v, want %v", c.patterns, c.ref, got, c.want)
		}
	}
	for ref, want := range map[string]bool{
		"refs/heads/main": true, "refs/tags/v1": true, "refs/remotes/origin/main": true,
		"refs/heads/litterbox/a": false, "refs/stash": false, "refs/notes/commits": false, "refs/pull/1/head": false,
	} {
		if usersRef(ref) != want {
			t.Errorf("usersRef(%q) = %v", ref, !want)
		}
	}
}
