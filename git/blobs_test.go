package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// objectFiles lists every file under the repository's objects directory
// but info/.
func objectFiles(t *testing.T, g *Repo) []string {
	t.Helper()
	var out []string
	root := filepath.Join(g.CommonDir, "objects")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, filepath.Join(root, "info")) {
			out = append(out, strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	return out
}

// TestDiscardedBlobsLeaveNothing: the blobs of a scan that failed (the
// agent killed its scanner mid-stream, again and again) are not kept: they
// were charged to no record limit, and each failed scan used to leave its
// pack in .git for git gc to remove two weeks later (.git 4 -> 46 MiB in
// six calls against a 30 MiB limit).
func TestDiscardedBlobsLeaveNothing(t *testing.T) {
	for _, keep := range []bool{false, true} {
		g, _ := newTestRepo(t)
		before := objectFiles(t, g)
		w := g.NewBlobWriter(context.Background())
		if keep {
			w.KeepPack()
		}
		for i := range 3 {
			if _, err := w.Write(5, strings.NewReader("blob"+string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		w.Discard()
		if files := objectFiles(t, g); !slices.Equal(files, before) {
			t.Errorf("keepPack=%v: a discarded import left %v (before: %v)", keep, files, before)
		}
	}
}

// TestClosedBlobsAreKept: Close makes every blob readable in the
// repository, packed or loose.
func TestClosedBlobsAreKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		g, _ := newTestRepo(t)
		w := g.NewBlobWriter(context.Background())
		if keep {
			w.KeepPack()
		}
		var ids []string
		for _, s := range []string{"one\n", "two\n"} {
			id, err := w.Write(int64(len(s)), strings.NewReader(s))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if out, err := exec.Command("git", "-C", g.Root, "cat-file", "-e", id).CombinedOutput(); err != nil {
				t.Errorf("keepPack=%v: blob %s missing after Close: %v %s", keep, id, err, out)
			}
		}
		for _, f := range objectFiles(t, g) {
			if strings.HasPrefix(f, "tmp_") {
				t.Errorf("keepPack=%v: %s left behind", keep, f)
			}
		}
	}
}
