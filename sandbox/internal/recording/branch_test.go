package recording

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLooseRef: the branch's tip is taken from its loose ref file only
// when git would read it there; a packed ref, a symbolic one or a missing
// one says nothing, and the snapshot asks git.
func TestLooseRef(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
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
