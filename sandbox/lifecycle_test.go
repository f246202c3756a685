package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

const cid = "77d5bf6074cbb925caf372f6f064efd0ee017a39aa7eeccf4856d84c6f41a7ca"

func fakeService(f *runner.Fake) (*Service, *Repo) {
	s := &Service{Docker: &docker.Client{R: f}, Runner: f, Log: log.New(nil), Image: DefaultImage}
	r := &Repo{Git: &git.Repo{R: f, Root: "/r", CommonDir: "/r/.git"}, Slug: "r"}
	return s, r
}

// psOf is the argv of the docker ps that finds sandbox slug of /r.
func psOf(slug string) []string {
	return append([]string{"docker"}, docker.PSArgs([]string{LabelSlug + "=" + slug, LabelGitDir + "=/r/.git"}, labelKeys)...)
}

func psLine(state string) string {
	return fmt.Sprintf(`{"id":%q,"name":"litterbox-r-x","state":%q,"created":"2026-11-21 23:02:11 +0000 UTC","ports":"","labels":{%q:"x",%q:"/r",%q:"/r/.git",%q:"litterbox/x",%q:""}}`+"\n",
		cid, state, LabelSlug, LabelRepo, LabelGitDir, LabelBranch, LabelBase)
}

func TestToggle(t *testing.T) {
	ctx := context.Background()
	f := &runner.Fake{}
	s, r := fakeService(f)
	f.Expect(psOf("x"), psLine("running"), nil)
	f.Expect([]string{"docker", "pause", cid}, cid+"\n", nil)
	f.Expect(psOf("x"), psLine("paused"), nil)
	f.Expect([]string{"docker", "unpause", cid}, cid+"\n", nil)
	// docker unpause of a stopped container says "is not paused"; resume must
	// not take that for "already active", so it never asks.
	f.Expect(psOf("x"), psLine("exited"), nil)
	f.Expect(psOf("x"), psLine("exited"), nil)

	if out, err := s.Pause(ctx, r, "X"); err != nil || out.Already || out.Name != "x" || out.Repo != "/r" {
		t.Errorf("Pause = %+v, %v", out, err)
	}
	if out, err := s.Resume(ctx, r, "x"); err != nil || out.Already {
		t.Errorf("Resume = %+v, %v", out, err)
	}
	if _, err := s.Resume(ctx, r, "x"); !errors.Is(err, ErrStopped) {
		t.Errorf("Resume of a stopped sandbox = %v; want ErrStopped", err)
	}
	if _, err := s.Pause(ctx, r, "x"); !errors.Is(err, ErrStopped) {
		t.Errorf("Pause of a stopped sandbox = %v; want ErrStopped", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestToggleMissing(t *testing.T) {
	ctx := context.Background()
	f := &runner.Fake{}
	s, r := fakeService(f)
	resolve := []string{"git", "-C", "/r", "-c", "core.hooksPath=/dev/null", "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/litterbox/ghost^{commit}"}
	f.Expect(psOf("ghost"), "", nil)
	f.Expect(resolve, "", &runner.ExitError{ExitCode: 1})
	f.Expect(psOf("ghost"), "", nil)
	f.Expect(resolve, "b9b238bacb3737a32bdf3a3dcc4978fbe2d1e3f0\n", nil)

	_, err := s.Pause(ctx, r, "ghost")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "Sandbox 'ghost' not found") {
		t.Errorf("Pause of a missing sandbox = %v", err)
	}
	// A branch without a container cannot be paused either; it says why.
	_, err = s.Pause(ctx, r, "ghost")
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "has no container, only its branch litterbox/ghost") {
		t.Errorf("Pause of an orphan branch = %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// Invalid names are refused before any git or docker call: the fake expects
// none and fails on any.
func TestInvalidNameRunsNothing(t *testing.T) {
	ctx := context.Background()
	f := &runner.Fake{}
	s, r := fakeService(f)
	long := strings.Repeat("a", 64)
	for _, name := range []string{"", "!!!", long} {
		if _, err := s.Create(ctx, r, name, CreateOptions{}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Create(%q) = %v", name, err)
		}
		if _, err := s.Pause(ctx, r, name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Pause(%q) = %v", name, err)
		}
		if _, err := s.Delete(ctx, r, name, true); !errors.Is(err, ErrInvalidName) {
			t.Errorf("Delete(%q) = %v", name, err)
		}
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}
