package recording

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// gitIn runs git in dir, failing t when it fails, and returns what it
// printed.
func gitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// TestLooseRef: the branch's tip is taken from its loose ref file only
// when git would read it there; a packed ref, a symbolic one or a missing
// one says nothing, and the snapshot asks git.
func TestLooseRef(t *testing.T) {
	dir := t.TempDir()
	run := gitIn(t, dir)
	run("init", "-q")
	run("commit", "-q", "--allow-empty", "-m", "one")
	run("branch", "litterbox/x")
	id := run("rev-parse", "litterbox/x")
	common := dir + "/.git"
	const ref = "refs/heads/litterbox/x"
	if got := looseRef(common, ref); got != id {
		t.Fatalf("loose ref: got %q, want %q", got, id)
	}
	run("symbolic-ref", "refs/heads/litterbox/y", ref)
	if got := looseRef(common, "refs/heads/litterbox/y"); got != "" {
		t.Errorf("symbolic ref: got %q, want none", got)
	}
	run("pack-refs", "--all")
	if got := looseRef(common, ref); got != "" {
		t.Errorf("packed ref: got %q, want none", got)
	}
	if err := os.WriteFile(common+"/"+ref, []byte(id+"junk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := looseRef(common, ref); got != "" {
		t.Errorf("bad file: got %q, want none", got)
	}
}

// TestForgetDropsOnlyThatSandbox: a delete drops what snapshots of that
// sandbox kept (a long-lived MCP server would otherwise hold the trees of
// every sandbox it ever deleted); another sandbox's stay.
func TestForgetDropsOnlyThatSandbox(t *testing.T) {
	rec := &Recorder{}
	r := &api.Repo{Git: &git.Repo{CommonDir: "/repo/.git"}}
	trees := map[string]map[string]git.TreeEntry{"": {"a": {Mode: "100644"}}}
	rec.keep(&api.Handle{Repo: r, Slug: "one"}, "tip1", trees)
	rec.keep(&api.Handle{Repo: r, Slug: "two"}, "tip2", trees)
	rec.Forget(r, "one")
	if _, ok := rec.kept.Load(keptKey(r.Git.CommonDir, "one")); ok {
		t.Error("the deleted sandbox's trees are still kept")
	}
	if k, ok := rec.kept.Load(keptKey(r.Git.CommonDir, "two")); !ok || k.(*keptTrees).tip != "tip2" {
		t.Error("another sandbox's trees were dropped")
	}
}

// TestForgetWinsOverPrefetch: a delete that lands while the background
// read of a new tip's trees is still under way leaves nothing of that
// sandbox in the server's memory once the read ends (each sandbox made and
// deleted would otherwise leave its trees behind).
func TestForgetWinsOverPrefetch(t *testing.T) {
	dir := t.TempDir()
	run := gitIn(t, dir)
	run("init", "-q")
	if err := os.WriteFile(dir+"/a", []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", "a")
	run("commit", "-q", "-m", "one")
	run("branch", "litterbox/x")
	run("branch", "litterbox/y")
	tip := run("rev-parse", "litterbox/x")
	r := &api.Repo{Git: &git.Repo{R: runner.Exec{}, Root: dir, CommonDir: dir + "/.git", GitDir: dir + "/.git"}}
	rec := &Recorder{Common: &core.Common{Options: api.Options{LongLived: true}}}
	read := map[string]map[string]git.TreeEntry{"": nil}
	rec.prefetch(&api.Handle{Repo: r, Slug: "x"}, tip, read)
	rec.prefetch(&api.Handle{Repo: r, Slug: "y"}, tip, read)
	rec.Forget(r, "x")
	rec.prefetches.Wait()
	if _, ok := rec.kept.Load(keptKey(r.Git.CommonDir, "x")); ok {
		t.Error("the deleted sandbox's trees are kept after the background read")
	}
	if k, ok := rec.kept.Load(keptKey(r.Git.CommonDir, "y")); !ok || len(k.(*keptTrees).trees[""]) != 1 {
		t.Error("the trees of a sandbox still there were not kept")
	}
}

// TestKeepDropsVanishedSandboxes: a sandbox deleted by another process
// (`litterbox delete`, prune, the UI) is never Forgotten by the MCP
// server that recorded it; what its snapshots kept goes at the server's
// next keep, once its branch no longer names the tip kept.
func TestKeepDropsVanishedSandboxes(t *testing.T) {
	common := t.TempDir()
	const one, two = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	ref := func(slug, id string) {
		t.Helper()
		p := filepath.Join(common, filepath.FromSlash(api.BranchRef(slug)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ref("one", one)
	ref("two", two)
	rec := &Recorder{}
	r := &api.Repo{Git: &git.Repo{CommonDir: common}}
	trees := map[string]map[string]git.TreeEntry{"": {"a": {Mode: "100644"}}}
	rec.keep(&api.Handle{Repo: r, Slug: "one"}, one, trees)
	rec.keep(&api.Handle{Repo: r, Slug: "two"}, two, trees)
	if err := os.Remove(filepath.Join(common, filepath.FromSlash(api.BranchRef("one")))); err != nil {
		t.Fatal(err)
	}
	rec.keep(&api.Handle{Repo: r, Slug: "two"}, two, trees)
	if _, ok := rec.kept.Load(keptKey(common, "one")); ok {
		t.Error("the trees of a sandbox deleted elsewhere are still kept")
	}
	if _, ok := rec.kept.Load(keptKey(common, "two")); !ok {
		t.Error("the trees of a sandbox still there were dropped")
	}
}
