package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/fake"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/sandboxtest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// These tests run the service's create, list, pause, resume and delete
// against provider/fake and a real git repository: fast, and able to fail
// any step of the engine on purpose.

// fixture is a repository named "repo" with one commit, and a service over
// a fake engine whose commands behave as a busybox sandbox's would for what
// create runs.
type fixture struct {
	t   *testing.T
	ctx context.Context
	p   *sandboxtest.Engine
	s   *Sandboxes
	r   *api.Repo
	// cleanup, when set, undoes what a test did to the repository.
	cleanup func()
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	dir := sandboxtest.Repo(t, files)
	f := &fixture{t: t, ctx: context.Background(), p: sandboxtest.NewEngine()}
	f.s = New(f.p, runner.Exec{}, log.New(io.Discard), api.Options{})
	f.s.c.ExtraLabels = map[string]string{}
	r, err := f.s.OpenRepo(f.ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	return f
}

// git runs git in the repository and returns its trimmed output.
func (f *fixture) git(args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", f.r.Root()}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// nothingLeft fails unless sandbox slug left nothing: no object on the
// engine, no branch, no state.
func (f *fixture) nothingLeft(slug string) {
	f.t.Helper()
	if objs := f.p.Objects(); len(objs) > 0 {
		f.t.Errorf("the engine still holds %+v", objs)
	}
	if _, err := f.git("rev-parse", "--verify", "--quiet", api.BranchRef(slug)); err == nil {
		f.t.Errorf("branch %s%s is left", api.BranchPrefix, slug)
	}
	if _, err := os.Stat(f.r.StateDir(slug)); !errors.Is(err, os.ErrNotExist) {
		f.t.Errorf("state %s is left (%v)", f.r.StateDir(slug), err)
	}
}

// status is what list says of slug, "" when it does not list it.
func (f *fixture) status(slug string) api.Status {
	f.t.Helper()
	list, err := f.s.List(f.ctx, f.r)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, sb := range list {
		if sb.Name == slug {
			return sb.Status
		}
	}
	return ""
}

func (f *fixture) mustCreate(name string) *api.Created {
	f.t.Helper()
	c, err := f.s.Create(f.ctx, f.r, name, api.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create %s: %v", name, err)
	}
	return c
}

// The whole life of a sandbox: create, list, pause, resume, delete.
func TestLifecycleOnFake(t *testing.T) {
	f := newFixture(t, map[string]string{})
	c := f.mustCreate("X")
	if c.Name != "x" || c.Container != "litterbox-repo-x" || c.Status != api.StatusActive || !strings.Contains(c.SetupOutput, "hello world") {
		t.Errorf("created %+v", c)
	}
	objs := f.p.Objects()
	if len(objs) != 1 || objs[0].Network != "litterbox-repo-x" || objs[0].Labels[api.LabelBranch] != "litterbox/x" || objs[0].Labels[api.LabelGitDir] != f.r.Git.CommonDir {
		t.Errorf("engine holds %+v", objs)
	}
	if st := f.status("x"); st != api.StatusActive {
		t.Errorf("status = %s", st)
	}
	if out, err := f.s.Pause(f.ctx, f.r, "x", false); err != nil || out.Already {
		t.Errorf("pause = %+v, %v", out, err)
	}
	if out, err := f.s.Pause(f.ctx, f.r, "x", false); err != nil || !out.Already {
		t.Errorf("pause again = %+v, %v; want already", out, err)
	}
	if st := f.status("x"); st != api.StatusPaused {
		t.Errorf("status = %s", st)
	}
	if _, err := f.s.Exec(f.ctx, f.r, "x", api.ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, api.ErrPaused) {
		t.Errorf("exec in a paused sandbox = %v", err)
	}
	if out, err := f.s.Resume(f.ctx, f.r, "x"); err != nil || out.Already {
		t.Errorf("resume = %+v, %v", out, err)
	}
	rep, err := f.s.Delete(f.ctx, f.r, "x", false)
	if err != nil || !slices.Equal(rep.Removed, []string{"container litterbox-repo-x", "branch litterbox/x", "network litterbox-repo-x"}) {
		t.Errorf("delete = %+v, %v", rep, err)
	}
	f.nothingLeft("x")
}

// A failure at any step of create leaves nothing behind: not on the engine,
// not in git, not in the state directory.
func TestCreateFailsAtEachStep(t *testing.T) {
	ports := map[string]string{api.ConfigFile: "[ports]\nweb = 8080\n"}
	service := map[string]string{api.ConfigFile: "[services.web]\ncommand = [\"httpd\", \"-f\"]\nautostart = true\n"}
	for _, tc := range []struct {
		name   string
		files  map[string]string
		inject func(f *fixture, cancel context.CancelFunc)
		want   string // in the error
	}{
		{"engine down", nil, func(f *fixture, _ context.CancelFunc) {
			f.p.Fail(fake.StepNetwork, &provider.UnreachableError{Reason: "Docker is not running"})
		}, "Docker is not running"},
		{"container", nil, func(f *fixture, _ context.CancelFunc) {
			f.p.Fail(fake.StepContainer, errors.New("no such image"))
		}, "no such image"},
		{"container, and the engine's cleanup", nil, func(f *fixture, _ context.CancelFunc) {
			f.p.Fail(fake.StepContainer, fmt.Errorf("killed: %w", provider.ErrLeftBehind))
		}, "killed"},
		{"interrupted while the engine makes it", nil, func(f *fixture, cancel context.CancelFunc) {
			f.p.OnStep = func(s fake.Step) {
				if s == fake.StepContainer {
					cancel()
				}
			}
		}, "context canceled"},
		{"the engine refuses the copy", nil, func(f *fixture, _ context.CancelFunc) {
			f.p.Fail(fake.StepExec, provider.Errorf(provider.ErrPaused, "Container abc is paused"))
		}, "the engine refused: Container abc is paused"},
		{"tar fails", nil, func(f *fixture, _ context.CancelFunc) { f.p.CopyFails = true }, "copying the repository into /src failed"},
		{"no completion stamp", nil, func(f *fixture, _ context.CancelFunc) { f.p.NoStamp = true }, "did not report completion"},
		{"ports", ports, func(f *fixture, _ context.CancelFunc) {
			f.p.Fail(fake.StepPorts, errors.New("inspect failed"))
		}, "inspect failed"},
		{"services install", service, func(f *fixture, _ context.CancelFunc) { f.p.InstallExit = 2 }, "install services"},
		{"branch", nil, func(f *fixture, _ context.CancelFunc) {
			// git cannot take the ref's lock.
			lock := filepath.Join(f.r.Git.CommonDir, "refs", "heads", "litterbox", "x.lock")
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				f.t.Fatal(err)
			}
			if err := os.WriteFile(lock, nil, 0o644); err != nil {
				f.t.Fatal(err)
			}
			f.cleanup = func() { os.Remove(lock) }
		}, "create branch litterbox/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tc.files {
				files[k] = v
			}
			f := newFixture(t, files)
			ctx, cancel := context.WithCancel(f.ctx)
			defer cancel()
			tc.inject(f, cancel)
			_, err := f.s.Create(ctx, f.r, "x", api.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create = %v; want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "rollback could not remove") {
				t.Errorf("rollback failed: %v", err)
			}
			f.nothingLeft("x")
			// And the name is free again.
			f.p.OnStep, f.p.CopyFails, f.p.NoStamp, f.p.InstallExit = nil, false, false, 0
			if f.cleanup != nil {
				f.cleanup()
			}
			f.mustCreate("x")
		})
	}
}

// A rollback that cannot remove the container says so, keeps the create's
// journal (list shows the sandbox as incomplete), and delete finishes it.
func TestCreateRollbackFails(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.p.CopyFails = true
	f.p.Fail(fake.StepRemove, errors.New("engine hiccup"))
	_, err := f.s.Create(f.ctx, f.r, "x", api.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "rollback could not remove: container litterbox-repo-x") {
		t.Fatalf("create = %v", err)
	}
	if st := f.status("x"); st != api.StatusIncomplete {
		t.Errorf("status = %s, want incomplete", st)
	}
	if _, err := f.s.Exec(f.ctx, f.r, "x", api.ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, api.ErrIncomplete) {
		t.Errorf("exec in an incomplete sandbox = %v", err)
	}
	if _, err := f.s.Delete(f.ctx, f.r, "x", false); err != nil {
		t.Fatal(err)
	}
	f.nothingLeft("x")
}

// A setup command that fails keeps the sandbox, marked failed-setup.
func TestCreateSetupFails(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.p.SetupExit = 3
	c, err := f.s.Create(f.ctx, f.r, "x", api.CreateOptions{})
	var se *api.SetupError
	if !errors.As(err, &se) || se.ExitCode != 3 || c == nil || c.Status != api.StatusFailedSetup {
		t.Fatalf("create = %+v, %v", c, err)
	}
	if st := f.status("x"); st != api.StatusFailedSetup {
		t.Errorf("status = %s", st)
	}
	if _, err := f.s.Delete(f.ctx, f.r, "x", false); err != nil {
		t.Fatal(err)
	}
	f.nothingLeft("x")
}

// A network this very sandbox left behind is removed and made again; one
// of another repository that holds the name is never touched.
func TestCreateWhereTheNameIsTaken(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.p.AddNetwork("litterbox-repo-x", map[string]string{api.LabelSlug: "x", api.LabelGitDir: f.r.Git.CommonDir, api.LabelRepo: f.r.Root()})
	// What names it on the host (list looks for networks only then): its
	// state directory, which a sandbox's delete removes last.
	if err := os.MkdirAll(f.r.StateDir("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if st := f.status("x"); st != api.StatusNoSandbox {
		t.Errorf("status of a network alone = %s", st)
	}
	f.mustCreate("x")
	if objs := f.p.Objects(); len(objs) != 1 || objs[0].State != provider.StateRunning || objs[0].Network == "" {
		t.Errorf("engine holds %+v", objs)
	}

	// Another repository's network holds the plain name: the sandbox gets
	// the name with this repository's id as a suffix.
	other := f.p.AddNetwork("litterbox-repo-y", map[string]string{api.LabelSlug: "y", api.LabelGitDir: "/elsewhere/.git", api.LabelRepo: "/elsewhere", api.LabelRepoID: strings.Repeat("e", 32)})
	c, err := f.s.Create(f.ctx, f.r, "y", api.CreateOptions{})
	if err != nil || c.Container != "litterbox-repo-y-"+f.r.ID[:8] {
		t.Errorf("create over another repository's network = %+v, %v", c, err)
	}
	if !slices.ContainsFunc(f.p.Objects(), func(sb provider.Sandbox) bool { return sb.Ref == other }) {
		t.Error("the other repository's network was removed")
	}
	if st := f.status("y"); st != api.StatusActive {
		t.Errorf("status of y = %s", st)
	}

	// Both names taken: refused, and nothing is left.
	f.p.AddNetwork("litterbox-repo-z", map[string]string{api.LabelSlug: "z", api.LabelRepo: "/elsewhere", api.LabelRepoID: strings.Repeat("e", 32)})
	f.p.AddNetwork("litterbox-repo-z-"+f.r.ID[:8], map[string]string{api.LabelSlug: "z", api.LabelRepo: "/third", api.LabelRepoID: strings.Repeat("d", 32)})
	_, err = f.s.Create(f.ctx, f.r, "z", api.CreateOptions{})
	if !errors.Is(err, api.ErrExists) || !strings.Contains(err.Error(), "the container name litterbox-repo-z-"+f.r.ID[:8]+" is taken by the sandbox 'z' of /third") {
		t.Errorf("create where both names are taken = %v", err)
	}
	if _, err := f.git("rev-parse", "--verify", "--quiet", api.BranchRef("z")); err == nil {
		t.Error("branch litterbox/z is left")
	}
}

// What list says of every kind of leftover, and delete removes each.
func TestListLeftovers(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("ok")
	f.mustCreate("nobranch")
	if _, err := f.git("branch", "-D", api.BranchPrefix+"nobranch"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.git("branch", api.BranchPrefix+"branchonly"); err != nil {
		t.Fatal(err)
	}
	f.p.AddNetwork("litterbox-repo-net", map[string]string{api.LabelSlug: "net", api.LabelGitDir: f.r.Git.CommonDir, api.LabelRepo: f.r.Root()})
	stopped := f.mustCreate("stopped")
	for _, sb := range f.p.Objects() {
		if sb.Name == stopped.Container {
			f.p.SetState(sb.Ref, provider.StateStopped)
		}
	}
	want := map[string]api.Status{"ok": api.StatusActive, "nobranch": api.StatusNoBranch, "branchonly": api.StatusNoContainer, "net": api.StatusNoSandbox, "stopped": api.StatusStopped}
	for slug, st := range want {
		if got := f.status(slug); got != st {
			t.Errorf("%s: status %s, want %s", slug, got, st)
		}
	}
	if _, err := f.s.Pause(f.ctx, f.r, "stopped", false); !errors.Is(err, api.ErrStopped) {
		t.Errorf("pause of a stopped sandbox = %v", err)
	}
	if _, err := f.s.Pause(f.ctx, f.r, "branchonly", false); !errors.Is(err, api.ErrStopped) || !strings.Contains(err.Error(), "has no container") {
		t.Errorf("pause of a branch alone = %v", err)
	}
	if _, err := f.s.Pause(f.ctx, f.r, "ghost", false); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("pause of nothing = %v", err)
	}
	for slug := range want {
		if _, err := f.s.Delete(f.ctx, f.r, slug, true); err != nil {
			t.Errorf("delete %s: %v", slug, err)
		}
	}
	f.nothingLeft("ok")
	if list, err := f.s.List(f.ctx, f.r); err != nil || len(list) != 0 {
		t.Errorf("list after deleting all = %+v, %v", list, err)
	}
}

// List of a repository with a warm pool is one engine list, containers
// alone, while every network of the pool has its container; a fill cut
// short that left a network alone (here: its container's start failed and
// so did its cleanup) makes list look at the networks too, so the pool
// line counts it, until a fill or a delete --pool that ends cleanly has
// removed it.
func TestListPoolNetworks(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("ok")
	listPool := func(wantLists, wantMembers int) {
		t.Helper()
		before := len(f.p.Calls())
		list, pool, err := f.s.ListRepoPool(f.ctx, func(context.Context) (*api.Repo, map[string]string, error) { return f.r, nil, nil })
		if err != nil || len(list) != 1 || list[0].Status != api.StatusActive {
			t.Fatalf("list = %+v, %v", list, err)
		}
		if lists := len(slices.DeleteFunc(f.p.Calls()[before:], func(s fake.Step) bool { return s != fake.StepList })); lists != wantLists {
			t.Errorf("list made %d engine lists, want %d", lists, wantLists)
		}
		if len(pool) != wantMembers {
			t.Errorf("pool = %+v, want %d members", pool, wantMembers)
		}
	}
	// cutShort is a fill whose container's start and cleanup fail,
	// leaving a network alone.
	cutShort := func() {
		t.Helper()
		f.p.Fail(fake.StepContainer, fmt.Errorf("boom: %w", provider.ErrLeftBehind))
		if _, err := f.s.FillPool(f.ctx, f.r, 2); err == nil {
			t.Fatal("the fill whose container failed succeeded")
		}
		listPool(2, 2)
	}
	if _, err := f.s.FillPool(f.ctx, f.r, 1); err != nil {
		t.Fatal(err)
	}
	listPool(1, 1)
	cutShort()
	if _, err := f.s.FillPool(f.ctx, f.r, 1); err != nil {
		t.Fatal(err)
	}
	listPool(1, 1)
	// So does delete --pool, which removes the network a fill left.
	cutShort()
	if _, err := f.s.DeletePool(f.ctx, f.r); err != nil {
		t.Fatal(err)
	}
	listPool(1, 0)
}

// A detached delete returns once the container and the branch are gone;
// while the process it handed the rest to holds the lock, list leaves the
// sandbox out, and that process finishes it. Killed instead (its lock let
// go with nothing finished), it leaves a row list shows as leftover, which
// delete finishes.
func TestDeleteDetached(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("x")
	var held *os.File
	rep, err := f.s.DeleteDetached(f.ctx, f.r, "x", false, func(slug string, lock *os.File) error {
		fd, err := syscall.Dup(int(lock.Fd())) // the other process's copy
		held = os.NewFile(uintptr(fd), lock.Name())
		return err
	})
	if err != nil || !slices.Equal(rep.Removed, []string{"container litterbox-repo-x", "branch litterbox/x"}) {
		t.Fatalf("delete = %+v, %v", rep, err)
	}
	if _, err := f.git("rev-parse", "--verify", "--quiet", api.BranchRef("x")); err == nil {
		t.Error("the branch is still there")
	}
	if len(f.p.Objects()) == 0 {
		t.Fatal("nothing left for the other process to finish")
	}
	if st := f.status("x"); st != "" {
		t.Errorf("list shows x as %s while its delete is being finished", st)
	}
	if err := f.s.FinishDelete(f.ctx, f.r, "x", held); err != nil {
		t.Fatal(err)
	}
	f.nothingLeft("x")

	// Killed: the other process's lock goes with it.
	f.mustCreate("y")
	if _, err := f.s.DeleteDetached(f.ctx, f.r, "y", false, func(string, *os.File) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if st := f.status("y"); st != api.StatusLeftover {
		t.Errorf("status after the finishing process died = %q, want leftover", st)
	}
	rep, err = f.s.Delete(f.ctx, f.r, "y", false)
	if err != nil || len(rep.Removed) == 0 || slices.Contains(rep.Removed, "branch litterbox/y") {
		t.Errorf("delete of the leftover = %+v, %v", rep, err)
	}
	f.nothingLeft("y")
}

// A network the engine will not remove: delete says what is left and keeps
// the state, and a second delete finishes.
func TestDeletePartial(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("x")
	f.p.Fail(fake.StepRemoveNet, errors.New("network has active endpoints"))
	_, err := f.s.Delete(f.ctx, f.r, "x", false)
	if !errors.Is(err, api.ErrPartialDelete) || !strings.Contains(err.Error(), "network litterbox-repo-x (") || !strings.Contains(err.Error(), "network has active endpoints") {
		t.Fatalf("delete = %v", err)
	}
	// Its container and branch went first: what is left is a delete's.
	if st := f.status("x"); st != api.StatusLeftover {
		t.Errorf("status = %s, want leftover", st)
	}
	rep, err := f.s.Delete(f.ctx, f.r, "x", false)
	if err != nil || !slices.Equal(rep.Removed, []string{"network litterbox-repo-x"}) {
		t.Errorf("second delete = %+v, %v", rep, err)
	}
	f.nothingLeft("x")

	// A container the engine will not remove: nothing is removed at all.
	f.mustCreate("y")
	f.p.Fail(fake.StepRemove, errors.New("device busy"))
	if _, err := f.s.Delete(f.ctx, f.r, "y", false); !errors.Is(err, api.ErrPartialDelete) || !strings.Contains(err.Error(), "Nothing was removed") {
		t.Errorf("delete = %v", err)
	}
	if st := f.status("y"); st != api.StatusActive {
		t.Errorf("status = %s, want active", st)
	}
}

// Pausing every sandbox runs the calls side by side; one that fails is
// reported and the others are done.
func TestPauseAllParallel(t *testing.T) {
	f := newFixture(t, map[string]string{})
	for _, n := range []string{"a", "b", "c", "d"} {
		f.mustCreate(n)
	}
	f.p.Fail(fake.StepPause, errors.New("freezer busy"))
	outs, err := f.s.PauseAll(f.ctx, f.r, false)
	if err == nil || !strings.Contains(err.Error(), "freezer busy") {
		t.Errorf("pause all = %v", err)
	}
	paused := 0
	for _, n := range []string{"a", "b", "c", "d"} {
		if f.status(n) == api.StatusPaused {
			paused++
		}
	}
	done := slices.DeleteFunc(outs, func(o api.Outcome) bool { return o.Name == "" })
	if paused != 3 || len(done) != 3 {
		t.Errorf("%d paused, %d outcomes (%+v); want 3", paused, len(done), outs)
	}
	outs, err = f.s.ResumeAll(f.ctx, nil)
	if err != nil || len(outs) != 4 {
		t.Errorf("resume all = %+v, %v", outs, err)
	}
}

// Invalid names are refused before any git or engine call.
func TestInvalidNameRunsNothing(t *testing.T) {
	p := &fake.Provider{}
	s := New(p, runner.Exec{}, log.New(io.Discard), api.Options{})
	r := &api.Repo{Slug: "r"} // no git: a git call would crash
	ctx := context.Background()
	long := strings.Repeat("a", 64)
	for _, name := range []string{"", "!!!", long} {
		if _, err := s.Create(ctx, r, name, api.CreateOptions{}); !errors.Is(err, api.ErrInvalidName) {
			t.Errorf("Create(%q) = %v", name, err)
		}
		if _, err := s.Pause(ctx, r, name, false); !errors.Is(err, api.ErrInvalidName) {
			t.Errorf("Pause(%q) = %v", name, err)
		}
		if _, err := s.Delete(ctx, r, name, true); !errors.Is(err, api.ErrInvalidName) {
			t.Errorf("Delete(%q) = %v", name, err)
		}
	}
	if calls := p.Calls(); len(calls) > 0 {
		t.Errorf("engine calls: %v", calls)
	}
}

// The image: --image wins over the configuration's, which wins over the
// service's default; an image the engine lacks is never pulled but refused
// before anything is made, naming how to get it; an agent may name only an
// image agent_images lists.
func TestCreateImageChoice(t *testing.T) {
	f := newFixture(t, map[string]string{".litterbox.toml": "image = \"team/app:1\"\n"})
	f.p.Images = map[string]provider.Image{
		"team/app:1":  {ID: "sha256:a", OS: "linux", Arch: "amd64"},
		"team/tool:2": {ID: "sha256:b", OS: "linux", Arch: "amd64"},
	}
	c := f.mustCreate("cfg")
	if objs := f.p.Objects(); c.Image != "team/app:1" || len(objs) != 1 || objs[0].Labels[api.LabelImage] != "team/app:1" {
		t.Errorf("created %+v on %+v; want the configuration's image", c, objs)
	}
	c, err := f.s.Create(f.ctx, f.r, "flag", api.CreateOptions{Image: "team/tool:2"})
	if err != nil || c.Image != "team/tool:2" {
		t.Errorf("create --image = %+v, %v; want the flag's image", c, err)
	}
	for _, name := range []string{"cfg", "flag"} {
		if _, err := f.s.Delete(f.ctx, f.r, name, true); err != nil {
			t.Fatal(err)
		}
	}

	_, err = f.s.Create(f.ctx, f.r, "missing", api.CreateOptions{Image: "team/nope:3"})
	if !errors.Is(err, api.ErrImage) || !strings.Contains(err.Error(), "The image team/nope:3 is not on the engine") || !strings.Contains(err.Error(), "docker pull team/nope:3") {
		t.Errorf("create with a missing image = %v", err)
	}
	f.nothingLeft("missing")

	_, err = f.s.Create(f.ctx, f.r, "agent", api.CreateOptions{Image: "team/tool:2", ByAgent: true})
	var e *api.Error
	if !errors.As(err, &e) || !errors.Is(err, api.ErrImage) || !strings.Contains(e.Agent, "not one you may pick") {
		t.Errorf("agent's image not in agent_images = %v", err)
	}
	f.nothingLeft("agent")
	if err := os.WriteFile(filepath.Join(f.r.Root(), ".litterbox.local.toml"), []byte("agent_images = [\"team/tool:2\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := f.s.Create(f.ctx, f.r, "agent", api.CreateOptions{Image: "team/tool:2", ByAgent: true}); err != nil || c.Image != "team/tool:2" {
		t.Errorf("agent's image listed in agent_images = %+v, %v", c, err)
	}

	if _, err := f.s.Delete(f.ctx, f.r, "agent", true); err != nil {
		t.Fatal(err)
	}
	// An image carrying litterbox's own labels would hand them to its
	// sandboxes: refused. Its VOLUMEs are covered read-only.
	f.p.Images["team/forged:1"] = provider.Image{ID: "sha256:c", OS: "linux", Arch: "amd64", Labels: map[string]string{api.LabelRepoID: "someone-else", "org.example": "x"}}
	if _, err := f.s.Create(f.ctx, f.r, "forged", api.CreateOptions{Image: "team/forged:1"}); !errors.Is(err, api.ErrImage) || !strings.Contains(err.Error(), "carries litterbox's own labels ("+api.LabelRepoID+")") {
		t.Errorf("image with litterbox's labels = %v", err)
	}
	f.nothingLeft("forged")
}

// A sandbox an idle sweep paused says so in list, with what resumes it.
func TestListIdlePausedNote(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("quiet")
	if _, err := f.s.Pause(f.ctx, f.r, "quiet", false); err != nil {
		t.Fatal(err)
	}
	if err := state.MarkIdlePaused(f.r.Git.CommonDir, "quiet", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	list, err := f.s.List(f.ctx, f.r)
	if err != nil {
		t.Fatal(err)
	}
	want := "paused after 3s without activity, with its gateway: the next command or MCP call on it resumes it"
	if len(list) != 1 || list[0].Status != api.StatusPaused || list[0].Note != want {
		t.Errorf("list = %+v, want quiet paused with the note %q", list, want)
	}
}
