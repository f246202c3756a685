package docker

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

func TestRunArgs(t *testing.T) {
	spec := provider.Spec{
		Name: "litterbox-my-repo-x", Image: "busybox:latest", Network: provider.NetworkIsolated,
		User: "1000:1000", Workdir: "/src", Hostname: "x",
		Labels: map[string]string{"dev.litterbox.slug": "x", "dev.litterbox.repo": "/home/me/my repo"},
		Env:    []string{"HOME=/tmp"},
		Tmpfs: []provider.Tmpfs{
			{Path: "/src", Exec: true, Owner: "1000:1000", Mode: 0o755, Size: 1 << 30},
			{Path: "/tmp", Mode: 0o1777},
			{Path: "/data", Mode: 0o755, ReadOnly: true, Size: 4096},
		},
		NoHealthcheck: true,
		Ports:         []provider.PortSpec{{Name: "web", Port: 8080}, {Name: "api", Port: 3000}},
		ReadOnlyRoot:  true, Init: true, DropCaps: true, NoNewPrivileges: true,
		Limits:  provider.Limits{Pids: 1024, Memory: 2 << 30, CPUs: 1.5, Log: 8 << 20},
		Cmd:     []string{"sleep", "infinity"},
		Runtime: "runsc",
	}
	got, err := RunArgs(spec, DockerDialect)
	want := []string{
		"run", "--detach", "--name", "litterbox-my-repo-x",
		"--label", "dev.litterbox.ports=api=3000,web=8080",
		"--label", "dev.litterbox.repo=/home/me/my repo", "--label", "dev.litterbox.slug=x",
		"--init", "--runtime", "runsc", "--network", "litterbox-shared", "--hostname", "x", "--user", "1000:1000",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--read-only",
		"--tmpfs", "/src:rw,exec,uid=1000,gid=1000,mode=0755,size=1073741824", "--tmpfs", "/tmp:rw,noexec,mode=1777", "--tmpfs", "/data:ro,noexec,mode=0755,size=4096",
		"--pids-limit", "1024", "--memory", "2147483648", "--cpus", "1.5",
		"--log-driver", "json-file", "--log-opt", "max-size=4194304", "--log-opt", "max-file=2",
		"--publish", "127.0.0.1::8080/tcp", "--publish", "127.0.0.1::3000/tcp", "--workdir", "/src", "--env", "HOME=/tmp",
		// The image's health check and entrypoint do not apply.
		"--no-healthcheck", "--entrypoint", "sleep", "busybox:latest", "infinity",
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("RunArgs: %v\n got %s\nwant %s", err, runner.Quote(got...), runner.Quote(want...))
	}
	// A network of its own is named after the sandbox.
	own := spec
	own.Network = provider.NetworkOwn
	if got, _ := RunArgs(own, DockerDialect); !slices.Contains(got, "litterbox-my-repo-x") || slices.Contains(got, "litterbox-shared") {
		t.Errorf("RunArgs(network own) = %q", got)
	}
	// Podman spells the owner of a tmpfs U, and can give it only to the
	// container's user; it shares no bridge.
	got, err = RunArgs(spec, PodmanDialect)
	if err != nil || !slices.Contains(got, "/src:rw,exec,U,mode=0755,size=1073741824") || !slices.Contains(got, "litterbox-my-repo-x") {
		t.Errorf("RunArgs(podman) = %q, %v", got, err)
	}
	spec.Tmpfs[0].Owner = "0:0"
	if _, err := RunArgs(spec, PodmanDialect); !errors.Is(err, provider.ErrUnsupported) {
		t.Errorf("RunArgs(podman, tmpfs for another user) = %v; want ErrUnsupported", err)
	}
	// A host port range: each port is bound somewhere in it.
	ranged := provider.Spec{Name: "n", Image: "i", Ports: []provider.PortSpec{{Name: "web", Port: 8080}}, HostPorts: provider.PortRange{First: 20000, Last: 20010}}
	if got, _ := RunArgs(ranged, DockerDialect); !slices.Contains(got, "127.0.0.1:20000-20010:8080/tcp") {
		t.Errorf("RunArgs(host port range) = %q", got)
	}
	// The zero spec adds no flags: only what was asked for.
	if got, _ := RunArgs(provider.Spec{Name: "n", Image: "i"}, DockerDialect); !slices.Equal(got, []string{"run", "--detach", "--name", "n", "i"}) {
		t.Errorf("RunArgs(minimal) = %q", got)
	}
	if got, _ := RunArgs(provider.Spec{Name: "n", Image: "i", Network: provider.NetworkNone, Platform: "linux/arm64"}, DockerDialect); !slices.Equal(got, []string{"run", "--detach", "--name", "n", "--platform", "linux/arm64", "--network", "none", "i"}) {
		t.Errorf("RunArgs(network none) = %q", got)
	}
}

func TestExecArgs(t *testing.T) {
	tests := []struct {
		spec ExecSpec
		want []string
	}{
		{ExecSpec{Container: "c", Cmd: []string{"true"}}, []string{"exec", "c", "true"}},
		{
			ExecSpec{Container: "c", Cmd: []string{"tar", "-x", "-f", "-", "-C", "/src"}, Stdin: strings.NewReader("")},
			[]string{"exec", "--interactive", "c", "tar", "-x", "-f", "-", "-C", "/src"},
		},
		{
			ExecSpec{Container: "c", Cmd: []string{"sh"}, Interactive: true, TTY: true, User: "1000:1000", Workdir: "/src", Env: []string{"A=1", "B=2"}},
			[]string{"exec", "--interactive", "--tty", "--user", "1000:1000", "--workdir", "/src", "--env", "A=1", "--env", "B=2", "c", "sh"},
		},
		{
			ExecSpec{Container: "c", Cmd: []string{"sh", "-c", "sleep 1 &"}, Detach: true},
			[]string{"exec", "--detach", "c", "sh", "-c", "sleep 1 &"},
		},
	}
	for _, tt := range tests {
		if got := ExecArgs(tt.spec); !slices.Equal(got, tt.want) {
			t.Errorf("ExecArgs:\n got %s\nwant %s", runner.Quote(got...), runner.Quote(tt.want...))
		}
	}
}

func TestPSArgs(t *testing.T) {
	got := PSArgs([]string{"dev.litterbox.slug", "dev.litterbox.gitdir=/r/.git"}, []string{"dev.litterbox.slug", "dev.litterbox.repo"})
	want := []string{
		"ps", "--all", "--no-trunc",
		"--filter", "label=dev.litterbox.slug", "--filter", "label=dev.litterbox.gitdir=/r/.git",
		"--format", `{"id":{{json .ID}},"name":{{json .Names}},"state":{{json .State}},"created":{{json .CreatedAt}},"ports":{{json .Ports}},"networks":{{json .Networks}},"labels":{"dev.litterbox.slug":{{json (.Label "dev.litterbox.slug")}},"dev.litterbox.repo":{{json (.Label "dev.litterbox.repo")}}}}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("PSArgs:\n got %s\nwant %s", runner.Quote(got...), runner.Quote(want...))
	}
}

// psOutput is real output of the format PSArgs builds (docker 20.10 engine,
// 28.x client): an exited container without the repo label, and a running one
// whose repo label holds a comma and a space and which publishes a port.
const psOutput = `{"id":"c372482aee9ce836646cf7b346f6a9cc3ee25afa14a4edf3f4bedb23a3831cef","name":"lbt-cap3","state":"exited","created":"2026-11-21 23:02:11 +0000 UTC","ports":"","labels":{"dev.litterbox.slug":"cap3","dev.litterbox.repo":""}}
{"id":"77d5bf6074cbb925caf372f6f064efd0ee017a39aa7eeccf4856d84c6f41a7ca","name":"lbt-cap2","state":"running","created":"2026-11-21 23:02:11 +0000 UTC","ports":"127.0.0.1:32768->8080/tcp","labels":{"dev.litterbox.slug":"cap","dev.litterbox.repo":"/tmp/a,b repo"}}

`

func TestParsePS(t *testing.T) {
	list, err := ParsePS([]byte(psOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("got %d containers, want 2: %+v", len(list), list)
	}
	created := time.Date(2026, 11, 21, 23, 2, 11, 0, time.UTC)
	a, b := list[0], list[1]
	if a.ID != "c372482aee9ce836646cf7b346f6a9cc3ee25afa14a4edf3f4bedb23a3831cef" || a.Name != "lbt-cap3" || a.State != "exited" || !a.Created.Equal(created) {
		t.Errorf("first row = %+v", a)
	}
	if _, ok := a.Labels["dev.litterbox.repo"]; ok || a.Labels["dev.litterbox.slug"] != "cap3" {
		t.Errorf("first row labels = %q; an empty label must be absent", a.Labels)
	}
	if b.State != "running" || b.Ports != "127.0.0.1:32768->8080/tcp" || b.Labels["dev.litterbox.repo"] != "/tmp/a,b repo" {
		t.Errorf("second row = %+v", b)
	}
	if list, err := ParsePS(nil); err != nil || len(list) != 0 {
		t.Errorf("ParsePS(empty) = %v, %v", list, err)
	}
	if _, err := ParsePS([]byte("Cannot connect\n")); err == nil {
		t.Error("ParsePS of garbage: no error")
	}
}

// TestPSRowsInPieces parses the output of PSArgs written in pieces cut
// anywhere, as a pipe gives it: the same containers as ParsePS of the
// whole, and the same error for a line that is not a container.
func TestPSRowsInPieces(t *testing.T) {
	out := strings.Repeat(psOutput, 3)
	want, err := ParsePS([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 7, 100, 311, len(out)} {
		var rows psRows
		buf := make([]byte, size)
		for r := strings.NewReader(out); ; {
			n, _ := r.Read(buf)
			if n == 0 {
				break
			}
			_, _ = rows.Write(buf[:n])
			clear(buf) // the writer's buffer, used again
		}
		if got, err := rows.end(); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("pieces of %d: %+v, %v; want %+v", size, got, err, want)
		}
	}
	var rows psRows
	_, _ = rows.Write([]byte(psOutput + "Cannot connect\n" + psOutput))
	if _, err := rows.end(); err == nil {
		t.Error("psRows of garbage: no error")
	}
	rows.restart()
	_, _ = rows.Write([]byte(psOutput))
	if got, err := rows.end(); err != nil || len(got) != 2 {
		t.Errorf("psRows after restart = %+v, %v", got, err)
	}
}

// BenchmarkParsePS parses the engine list of 40 containers (list's 20
// sandboxes and their gateways), which list waits for after `docker ps`.
func BenchmarkParsePS(b *testing.B) {
	out := []byte(strings.Repeat(psOutput, 20))
	b.ReportAllocs()
	for range b.N {
		if list, err := ParsePS(out); err != nil || len(list) != 40 {
			b.Fatal(len(list), err)
		}
	}
}

// Standard errors of the docker CLI, captured on the real thing.
const (
	stderrNoEngine     = "Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?\n"
	stderrNoContainer  = "Error response from daemon: No such container: nonexistent-lbt\n"
	stderrExecPaused   = "Error response from daemon: Container lbt-cap is paused, unpause the container before exec\n"
	stderrNotRunning   = "Error response from daemon: Container 99bf1341a223e44fa324e400181bb2f3dfecfc63bdf6a0d2e146b046bc048dae is not running\n"
	stderrAlreadyPause = "Error response from daemon: Container 233d5c254e6316717fafd9fcc0d6652c02fb772f7308c2213596fdb17c8d9e66 is already paused\n"
	stderrNoFreeze     = "Error response from daemon: cannot pause container 233d5c254e6316717fafd9fcc0d6652c02fb772f7308c2213596fdb17c8d9e66: OCI runtime pause failed: unable to freeze: unknown\n"
	stderrNotPaused    = "Error response from daemon: Container 233d5c254e6316717fafd9fcc0d6652c02fb772f7308c2213596fdb17c8d9e66 is not paused\n"
	stderrNoNetwork    = "Error response from daemon: network lbt-nonexist not found\n"
	podmanNoContainer  = "Error response from daemon: no container with name or ID \"lbexp-missing\" found: no such container\n"
	podmanExecPaused   = "Error response from daemon: cannot create exec session as container 618ec8120defcb9e7315aa865b61fb45fddaf7b00dc891de7238ad9ab88821ce is paused\n"
	podmanExecStopped  = "Error response from daemon: can only create exec sessions on running containers: container state improper\n"
	stderrNoRuntime    = "docker: Error response from daemon: Unknown runtime specified nope.\nSee 'docker run --help'.\n"
	stderrNoImage      = "Unable to find image 'nosuchimage-lbt:latest' locally\ndocker: Error response from daemon: Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host\n"
)

func exitErr(code int, stderr string) error {
	return &runner.ExitError{Command: "docker ...", ExitCode: code, Stderr: stderr}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want error // nil: returned unchanged
	}{
		{exitErr(1, stderrNoEngine), provider.ErrUnreachable},
		{exitErr(1, "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock\n"), provider.ErrUnreachable},
		{&runner.NotInstalledError{Program: "docker"}, provider.ErrUnreachable},
		{exitErr(1, stderrNoContainer), provider.ErrNotFound},
		{exitErr(1, podmanNoContainer), provider.ErrNotFound},
		{exitErr(1, stderrExecPaused), provider.ErrPaused},
		{exitErr(1, podmanExecPaused), provider.ErrPaused},
		{exitErr(1, stderrNotRunning), provider.ErrStopped},
		{exitErr(1, podmanExecStopped), provider.ErrStopped},
		// A command's own words, not the engine's: the exit is the command's.
		{exitErr(1, "wget: server returned error: HTTP/1.1 502 Bad Gateway: the sandbox's gateway is not running\n"), nil},
		{exitErr(125, stderrNoImage), nil},
		{exitErr(125, stderrNoRuntime), provider.ErrNoRuntime},
	}
	c := &Client{}
	for _, tt := range tests {
		got := c.classify(tt.err)
		if tt.want == nil {
			if got != tt.err {
				t.Errorf("classify(%v) = %v; want it unchanged", tt.err, got)
			}
			continue
		}
		if !errors.Is(got, tt.want) {
			t.Errorf("classify(%v) = %v; want %v", tt.err, got, tt.want)
		}
	}
	if c.classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
	// The engine message says what to do, with the engine's own words
	// (which name the endpoint); the exit code and stderr stay reachable
	// for the other kinds, whose message is the engine's own.
	if msg := c.classify(exitErr(1, stderrNoEngine)).Error(); !strings.HasPrefix(msg, "Docker is not running (Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?): start it") {
		t.Errorf("engine down message = %q", msg)
	}
	podman := &Client{Host: "unix:///run/podman/podman.sock", Dialect: PodmanDialect}
	if msg := podman.classify(exitErr(1, "Cannot connect to the Docker daemon at unix:///run/podman/podman.sock. Is the docker daemon running?\n")).Error(); !strings.HasPrefix(msg, "Podman is not running (Cannot connect to the Docker daemon at unix:///run/podman/podman.sock. Is the docker daemon running?): start its API service") {
		t.Errorf("podman down message = %q", msg)
	}
	err := c.classify(exitErr(1, stderrNoContainer))
	if runner.ExitCode(err) != 1 || err.Error() != "No such container: nonexistent-lbt" {
		t.Errorf("classify = %q (exit code %d); want the engine's words and the *runner.ExitError", err, runner.ExitCode(err))
	}
}

// Every docker call has a time limit: control calls the short one, run and
// exec (unless the caller bounds it) the work one.
func TestKinds(t *testing.T) {
	var kinds kindRecorder
	c := &Client{R: &kinds}
	ctx := context.Background()
	_, _ = c.Pause(ctx, "x")
	_, _ = c.RunDetached(ctx, provider.Spec{Name: "x", Image: "busybox"})
	_, _ = c.Exec(ctx, ExecSpec{Container: "x", Cmd: []string{"true"}})
	_, _ = c.Exec(ctx, ExecSpec{Container: "x", Cmd: []string{"sh"}, Kind: runner.Stream})
	want := kindRecorder{runner.Control, runner.Work, runner.Work, runner.Stream}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds = %v, want %v", kinds, want)
	}
}

// kindRecorder is a runner that succeeds at everything and keeps each
// command's Kind.
type kindRecorder []runner.Kind

func (k *kindRecorder) Run(_ context.Context, c *runner.Cmd) (runner.Result, error) {
	*k = append(*k, c.Kind)
	return runner.Result{}, nil
}

func TestClientToggleAndRemove(t *testing.T) {
	ctx := context.Background()
	f := &runnertest.Fake{}
	c := &Client{R: f}
	f.Expect([]string{"docker", "pause", "id1"}, "id1\n", nil)
	f.Expect([]string{"docker", "pause", "id1"}, "", exitErr(1, stderrAlreadyPause))
	f.Expect([]string{"docker", "unpause", "id1"}, "id1\n", nil)
	f.Expect([]string{"docker", "unpause", "id1"}, "", exitErr(1, stderrNotPaused))
	f.Expect([]string{"docker", "unpause", "gone"}, "", exitErr(1, stderrNoContainer))
	f.Expect([]string{"docker", "rm", "--force", "--volumes", "id1"}, "id1\n", nil)
	f.ExpectStderr([]string{"docker", "rm", "--force", "--volumes", "gone"}, "", stderrNoContainer, nil)
	f.Expect([]string{"docker", "network", "rm", "net"}, "", exitErr(1, stderrNoNetwork))
	f.Expect([]string{"docker", "network", "create", "--driver", "bridge", "--label", "a=1", "--label", "b=2", "net"}, "", nil)

	if already, err := c.Pause(ctx, "id1"); already || err != nil {
		t.Errorf("Pause = %v, %v", already, err)
	}
	if already, err := c.Pause(ctx, "id1"); !already || err != nil {
		t.Errorf("Pause of a paused container = %v, %v; want already", already, err)
	}
	if already, err := c.Unpause(ctx, "id1"); already || err != nil {
		t.Errorf("Unpause = %v, %v", already, err)
	}
	if already, err := c.Unpause(ctx, "id1"); !already || err != nil {
		t.Errorf("Unpause of a running container = %v, %v; want already", already, err)
	}
	if _, err := c.Unpause(ctx, "gone"); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Unpause of a missing container = %v", err)
	}
	if err := c.Remove(ctx, "id1"); err != nil {
		t.Errorf("Remove = %v", err)
	}
	// docker rm --force of a missing container exits 0: stderr tells.
	if err := c.Remove(ctx, "gone"); !errors.Is(err, provider.ErrNotFound) {
		t.Errorf("Remove of a missing container = %v; want ErrNotFound", err)
	}
	if err := c.NetworkRemove(ctx, "net"); err != nil {
		t.Errorf("NetworkRemove of a missing network = %v; want nil", err)
	}
	if _, err := c.NetworkCreate(ctx, "net", map[string]string{"b": "2", "a": "1"}); err != nil {
		t.Errorf("NetworkCreate = %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// TestClientPauseFreezeRetried: runc gives up freezing a container whose
// processes keep changing under load ("unable to freeze", and thaws it
// again); its maintainers leave the retry to the caller. A pause that
// fails so is tried again, and a pause that keeps failing says so.
func TestClientPauseFreezeRetried(t *testing.T) {
	ctx := context.Background()
	f := &runnertest.Fake{}
	c := &Client{R: f}
	f.Expect([]string{"docker", "pause", "id1"}, "", exitErr(1, stderrNoFreeze))
	f.Expect([]string{"docker", "pause", "id1"}, "id1\n", nil)
	for range pauseTries {
		f.Expect([]string{"docker", "pause", "id2"}, "", exitErr(1, stderrNoFreeze))
	}
	if already, err := c.Pause(ctx, "id1"); already || err != nil {
		t.Errorf("Pause that froze the second time = %v, %v", already, err)
	}
	if _, err := c.Pause(ctx, "id2"); err == nil || !strings.Contains(runner.Stderr(err), "unable to freeze") {
		t.Errorf("Pause that never froze = %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestClientPS(t *testing.T) {
	f := &runnertest.Fake{}
	keys := []string{"dev.litterbox.slug", "dev.litterbox.repo"}
	f.Expect(psArgv([]string{"dev.litterbox.slug"}, keys), psOutput, nil)
	f.Expect(psArgv([]string{"dev.litterbox.slug"}, keys), "", exitErr(1, stderrNoEngine))
	c := &Client{R: f}
	list, err := c.PS(context.Background(), []string{"dev.litterbox.slug"}, keys)
	if err != nil || len(list) != 2 {
		t.Errorf("PS = %v, %v", list, err)
	}
	if _, err := c.PS(context.Background(), []string{"dev.litterbox.slug"}, keys); !errors.Is(err, provider.ErrUnreachable) {
		t.Errorf("PS with the engine down = %v; want ErrUnreachable", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// psArgv is the whole argv of PS, program name included.
func psArgv(filters, keys []string) []string {
	return append([]string{"docker"}, PSArgs(filters, keys)...)
}

// TestRemoveAll: a sandbox and its gateway go in one docker rm; the one of
// them that was gone already is named (by Docker's words and Podman's),
// and a name that merely ends like another's is not taken for it.
func TestRemoveAll(t *testing.T) {
	ctx := context.Background()
	f := &runnertest.Fake{}
	c := &Client{R: f}
	f.ExpectStderr([]string{"docker", "rm", "--force", "--volumes", "sb", "sb-gw"}, "sb\n", "Error response from daemon: No such container: sb-gw\n", nil)
	f.ExpectStderr([]string{"docker", "rm", "--force", "--volumes", "sb", "sb-gw"}, "sb-gw\n", `Error: no container with name or ID "sb" found: no such container`+"\n", nil)
	f.Expect([]string{"docker", "rm", "--force", "--volumes", "sb", "sb-gw"}, "sb\nsb-gw\n", nil)
	for _, want := range [][]string{{"sb-gw"}, {"sb"}, nil} {
		if missing, err := c.RemoveAll(ctx, "sb", "sb-gw"); err != nil || !slices.Equal(missing, want) {
			t.Errorf("RemoveAll = %q, %v; want %q", missing, err, want)
		}
	}
	// Of one name, the words alone say it, and it is named once however
	// many lines say so.
	f.ExpectStderr([]string{"docker", "rm", "--force", "--volumes", "sb"}, "", "Error response from daemon: No such container: sb\nError response from daemon: No such container: sb\n", nil)
	if missing, err := c.RemoveAll(ctx, "sb"); err != nil || !slices.Equal(missing, []string{"sb"}) {
		t.Errorf("RemoveAll of one = %q, %v; want [sb]", missing, err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

// TestRemoveNetlessTakesNoTurn: while another process removes a container
// (it holds the removal turn), RemoveAll waits for it, and RemoveNetless,
// of a container with no network, does not.
func TestRemoveNetlessTakesNoTurn(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	ctx := context.Background()
	f := &runnertest.Fake{}
	c := &Client{R: f}
	f.Expect([]string{"docker", "rm", "--force", "--volumes", "sb"}, "sb\n", nil)
	f.Expect([]string{"docker", "rm", "--force", "--volumes", "gw"}, "gw\n", nil)
	path, err := c.removalLock()
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := flock.Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.RemoveNetless(ctx, "sb"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RemoveNetless waited for the removal turn")
	}
	go func() { _, err := c.RemoveAll(ctx, "gw"); done <- err }()
	select {
	case <-done:
		t.Fatal("RemoveAll did not wait for the removal turn")
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}
