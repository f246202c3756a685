package git

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

func TestParseCatFileBlob(t *testing.T) {
	body, ok, err := ParseCatFileBlob([]byte("abc123 blob 12\n[ports]\nx=1\n\n"), "f")
	if err != nil || !ok || string(body) != "[ports]\nx=1\n" {
		t.Errorf("blob: %q %v %v", body, ok, err)
	}
	if _, ok, err := ParseCatFileBlob([]byte("HEAD:.litterbox.toml missing\n"), "f"); ok || err != nil {
		t.Errorf("missing: %v %v", ok, err)
	}
	if _, _, err := ParseCatFileBlob([]byte("abc123 tree 30\n..."), "f"); err == nil {
		t.Error("a tree was accepted")
	}
}

// TestFilesAt: several files of a commit in one git call, each answered in
// its place: found (empty too), missing, and a directory, which fails only
// its own path; a path holding a line break is refused.
func TestFilesAt(t *testing.T) {
	g, _ := newTestRepo(t)
	cmd := exec.Command("sh", "-c", "mkdir d && printf 'x=1\\n' > a && : > empty && echo f > d/f && git add . && git -c user.name=T -c user.email=t@t commit -qm files")
	cmd.Dir = g.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	fs, err := g.FilesAt(context.Background(), "HEAD", "a", "nope", "d", "empty", "d/f")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		content string
		ok, err bool
	}{{"x=1\n", true, false}, {"", false, false}, {"", false, true}, {"", true, false}, {"f\n", true, false}}
	for i, w := range want {
		if f := fs[i]; string(f.Content) != w.content || f.OK != w.ok || (f.Err != nil) != w.err {
			t.Errorf("file %d: %q %v %v, want %q %v error %v", i, f.Content, f.OK, f.Err, w.content, w.ok, w.err)
		}
	}
	// A path holding a line break would be two lines of git's input, and
	// the answers would fall a place off (a's read as "a\nb"'s): refused.
	if fs, err := g.FilesAt(context.Background(), "HEAD", "a\nb", "a"); err == nil || !strings.Contains(err.Error(), `"a\nb"`) {
		t.Errorf("a path with a line break: %+v, %v", fs, err)
	}
}

// TestHeadFiles: HEAD, whether refs name a commit, and the files of HEAD's
// commit, from one git process; an unborn HEAD is ErrNoCommits, as Head's.
func TestHeadFiles(t *testing.T) {
	ctx := context.Background()
	g, _ := newTestRepo(t)
	if _, _, _, err := g.HeadFiles(ctx, nil, "a"); !errors.Is(err, ErrNoCommits) || !strings.Contains(err.Error(), "make a first commit") {
		t.Errorf("HeadFiles of an empty repository = %v", err)
	}
	cmd := exec.Command("sh", "-c", "mkdir d && echo f > d/f && printf 'x=1\\n' > a && : > empty && git add . && git -c user.name=T -c user.email=t@t commit -qm files && git branch side")
	cmd.Dir = g.Root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	r := &runnertest.Recorder{Runner: g.R}
	g.R = r
	head, ids, fs, err := g.HeadFiles(ctx, []string{"refs/heads/side", "refs/heads/litterbox/gone"}, "a", "nope", "d", "empty")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := g.Head(ctx)
	if head != want || len(ids) != 2 || ids[0] != want || ids[1] != "" {
		t.Errorf("HeadFiles = %q %q, want HEAD %q, side at it, gone \"\"", head, ids, want)
	}
	wantFiles := []struct {
		content string
		ok, err bool
	}{{"x=1\n", true, false}, {"", false, false}, {"", false, true}, {"", true, false}}
	for i, w := range wantFiles {
		if f := fs[i]; string(f.Content) != w.content || f.OK != w.ok || (f.Err != nil) != w.err {
			t.Errorf("file %d: %q %v %v, want %q %v error %v", i, f.Content, f.OK, f.Err, w.content, w.ok, w.err)
		}
	}
	if calls := r.Calls(); len(calls) != 2 { // HeadFiles, then Head
		t.Errorf("HeadFiles ran %d git processes, want 1: %q", len(calls)-1, calls)
	}
	if _, _, _, err := g.HeadFiles(ctx, []string{"refs/heads/a\nb"}); err == nil {
		t.Error("a ref with a line break was asked")
	}
}
