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

// TestHeldBlobsStartNoImport: a writer told to Hold keeps small blobs in
// memory, with their ids, and stores nothing (no quarantine, no git
// process) unless asked: a snapshot of files touched but not changed
// starts no fast-import. Store writes those asked for; a blob too big to
// hold starts the import, which takes the held ones first.
func TestHeldBlobsStartNoImport(t *testing.T) {
	g, _ := newTestRepo(t)
	before := objectFiles(t, g)
	w := g.NewBlobWriter(context.Background())
	w.Hold()
	a, err := w.Write(4, strings.NewReader("one\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Write(4, strings.NewReader("two\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if files := objectFiles(t, g); !slices.Equal(files, before) {
		t.Fatalf("held blobs were written: %v (before: %v)", files, before)
	}
	for id, s := range map[string]string{a: "one\n", b: "two\n"} {
		cmd := exec.Command("git", "hash-object", "--stdin")
		cmd.Stdin = strings.NewReader(s)
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != id {
			t.Errorf("id %s of %q, git says %s (%v)", id, s, out, err)
		}
		if data, ok := w.Held(id); !ok || string(data) != s {
			t.Errorf("Held(%s) = %q, %v; want %q", id, data, ok, s)
		}
	}
	if err := w.Store(a); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", g.Root, "cat-file", "-e", a).CombinedOutput(); err != nil {
		t.Errorf("blob %s missing after Store: %v %s", a, err, out)
	}
	if _, ok := w.Held(a); ok {
		t.Errorf("blob %s still held after Store", a)
	}
	if err := exec.Command("git", "-C", g.Root, "cat-file", "-e", b).Run(); err == nil {
		t.Errorf("blob %s stored without Store", b)
	}

	// Past what is held, the import starts and stores the held blobs too.
	w = g.NewBlobWriter(context.Background())
	w.Hold()
	small, err := w.Write(6, strings.NewReader("small\n"))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", holdBlob+1)
	bigID, err := w.Write(int64(len(big)), strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{small, bigID} {
		if _, ok := w.Held(id); ok {
			t.Errorf("blob %s held once the import started", id)
		}
		if out, err := exec.Command("git", "-C", g.Root, "cat-file", "-e", id).CombinedOutput(); err != nil {
			t.Errorf("blob %s missing after Close: %v %s", id, err, out)
		}
	}
}
