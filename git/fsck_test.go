package git

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCheckGitmodules: git's own fsck rules decide, and the check leaves
// nothing in the repository that fsck would trip over.
func TestCheckGitmodules(t *testing.T) {
	g, _ := newTestRepo(t)
	ctx := context.Background()
	store := func(s string) string {
		bw := g.NewBlobWriter(ctx)
		id, err := bw.Write(int64(len(s)), strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := bw.Close(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	if err := g.CheckGitmodules(ctx, store("[submodule \"lib\"]\n\tpath = lib\n\turl = https://example.com/lib.git\n")); err != nil {
		t.Errorf("a plain .gitmodules was refused: %v", err)
	}
	for _, bad := range []string{
		"[submodule \"x\"]\n\tpath = x\n\turl = --upload-pack=touch pwned\n",
		"[submodule \"../../escape\"]\n\tpath = x\n\turl = https://example.com/x\n",
		"[submodule \"x\"]\n\tpath = -x\n\turl = https://example.com/x\n",
	} {
		var fe *FsckError
		if err := g.CheckGitmodules(ctx, store(bad)); !errors.As(err, &fe) {
			t.Errorf("%q: err = %v, want git's refusal", bad, err)
		}
	}
	if out, err := exec.Command("git", "-C", g.Root, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Errorf("the checks left objects fsck refuses: %v\n%s", err, out)
	}
}
