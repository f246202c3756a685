package docker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// List asks for containers and networks side by side and joins each network
// to the container on it; a network without one is a leftover.
func TestListJoinsNetworks(t *testing.T) {
	f := runnertest.New(t)
	p, err := New(Options{Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"dev.litterbox.slug"}
	filters := []string{"dev.litterbox.gitdir=/r/.git", "dev.litterbox.slug"}
	f.Expect(append([]string{"docker"}, PSArgs(filters, keys)...),
		`{"id":"c1","name":"lb-a","state":"running","created":"2026-11-21 23:02:11 +0000 UTC","ports":"","networks":"lb-a","labels":{"dev.litterbox.slug":"a"}}
{"id":"c2","name":"lb-b","state":"exited","created":"2026-11-21 23:02:11 +0000 UTC","ports":"","networks":"none","labels":{"dev.litterbox.slug":"b"}}
`, nil)
	f.Expect(append([]string{"docker"}, NetworkLSArgs(filters, keys)...),
		`{"id":"n1","name":"lb-a","labels":{"dev.litterbox.slug":"a"}}
{"id":"n3","name":"lb-c","labels":{"dev.litterbox.slug":"c"}}
`, nil)
	got, err := p.List(context.Background(), provider.Selector{
		Labels: map[string]string{"dev.litterbox.slug": "", "dev.litterbox.gitdir": "/r/.git"}, Report: keys,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ref     provider.Ref
		name    string
		network string
		state   provider.State
	}{
		{provider.Ref{ID: "c1", NetworkID: "n1"}, "lb-a", "lb-a", provider.StateRunning},
		{provider.Ref{ID: "c2"}, "lb-b", "", provider.StateStopped},
		{provider.Ref{NetworkID: "n3"}, "lb-c", "lb-c", provider.StateNone},
	}
	if len(got) != len(want) {
		t.Fatalf("List = %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.Ref != w.ref || g.Name != w.name || g.Network != w.network || g.State != w.state {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}

// A command's own exit code is data; the engine refusing the exec is an
// error.
func TestExecExitCodeIsData(t *testing.T) {
	f := runnertest.New(t)
	p, _ := New(Options{Runner: f})
	ctx := context.Background()
	f.Expect([]string{"docker", "exec", "c1", "false"}, "", &runner.ExitError{ExitCode: 1, Stderr: "oops\n"})
	f.Expect([]string{"docker", "exec", "c1", "true"}, "", exitErr(1, stderrExecPaused))
	res, err := p.Exec(ctx, provider.ExecRequest{Ref: provider.Ref{ID: "c1"}, Cmd: []string{"false"}})
	if err != nil || res.ExitCode != 1 || string(res.Stderr) != "oops\n" {
		t.Errorf("Exec(false) = %+v, %v; want exit code 1 as data", res, err)
	}
	if _, err := p.Exec(ctx, provider.ExecRequest{Ref: provider.Ref{ID: "c1"}, Cmd: []string{"true"}}); !errors.Is(err, provider.ErrPaused) {
		t.Errorf("Exec in a paused container = %v; want ErrPaused", err)
	}
}

// Podman is reached through --host, in the argv, so a logged command pastes
// whole; Resume of a stopped container is ErrStopped, though both engines
// answer "is not paused".
func TestPodmanHostAndResumeStopped(t *testing.T) {
	f := runnertest.New(t)
	p, _ := New(Options{Runner: f, Engine: EnginePodman, Host: "unix:///run/x/podman.sock"})
	host := []string{"docker", "--host", "unix:///run/x/podman.sock"}
	f.Expect(append(host, "unpause", "c1"), "", exitErr(1, `Error response from daemon: "c1" is not paused, can't unpause: container state improper`+"\n"))
	f.Expect(append(host, "inspect", "--type", "container", "--format", "{{.State.Status}}", "c1"), "exited\n", nil)
	if _, err := p.Resume(context.Background(), provider.Ref{ID: "c1"}); !errors.Is(err, provider.ErrStopped) {
		t.Errorf("Resume of a stopped container = %v; want ErrStopped", err)
	}
}

// Ports names each port from the label written at create, with the URL of
// its binding; a named port not published has no URL, and a malformed
// label item is skipped.
func TestPorts(t *testing.T) {
	f := runnertest.New(t)
	p, _ := New(Options{Runner: f})
	f.Expect(append([]string{"docker"}, InspectPortsArgs("cid", LabelPorts)...),
		"web=8080,api=3000,bad,x=y\t{\"8080/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"41000\"}]}\n", nil)
	got, err := p.Ports(context.Background(), provider.Ref{ID: "cid"})
	want := []provider.Port{
		{Name: "api", ContainerPort: 3000},
		{Name: "web", ContainerPort: 8080, HostIP: "127.0.0.1", HostPort: 41000, URL: "http://127.0.0.1:41000"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Ports = %+v, %v", got, err)
	}
}

// runtimesArgs is the argv that asks an engine for its runtimes.
var runtimesArgs = []string{"docker", "info", "--format", "{{json .Runtimes}} {{json .DefaultRuntime}}"}

// Info reports the runtimes the engine offers and its default; on Podman,
// whose Docker-compatible API ignores --runtime (4.3 runs runc for any
// name), only the default, since no other can be chosen.
func TestInfoRuntimes(t *testing.T) {
	for _, tt := range []struct {
		engine, answer string
		want           []string
		def            string
	}{
		{EngineDocker, `{"runc":{"path":"runc"},"io.containerd.runc.v2":{"path":"runc"},"runsc":{"path":"/var/cache/litterbox/gvisor/v/runsc"}} "runc"`,
			[]string{"io.containerd.runc.v2", "runc", "runsc"}, "runc"},
		{EnginePodman, `{"crun":{"path":"/usr/bin/crun"},"runc":{"path":"/usr/bin/runc"},"runsc":{"path":"/usr/bin/runsc"}} "runc"`,
			[]string{"runc"}, "runc"},
	} {
		f := runnertest.New(t)
		p, err := New(Options{Engine: tt.engine, Host: "unix:///e.sock", Runner: f})
		if err != nil {
			t.Fatal(err)
		}
		host := []string{"docker", "--host", "unix:///e.sock"}
		f.Expect(append(host, "version", "--format", "{{json .Server}}"), `{"Version":"20.10.24","Os":"linux","Arch":"amd64"}`, nil)
		f.Expect(append(host, "network", "ls", "--no-trunc", "--filter", "name=bridge", "--filter", "name=podman", "--format", "{{.ID}} {{.Name}}"), "n1 bridge\n", nil)
		f.Expect(append(host, runtimesArgs[1:]...), tt.answer+"\n", nil)
		info, err := p.Info(context.Background())
		if err != nil || !reflect.DeepEqual(info.Runtimes, tt.want) || info.DefaultRuntime != tt.def {
			t.Errorf("%s: Info = %+v, %v; want runtimes %q, default %q", tt.engine, info, err, tt.want, tt.def)
		}
	}
}

// A runtime the engine does not offer is refused before anything is made
// (here: before the sandbox's own network), saying which it offers and how
// to get it; one it offers is asked about once per provider.
func TestCreateUnknownRuntime(t *testing.T) {
	f := runnertest.New(t)
	p, err := New(Options{Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	f.Expect(runtimesArgs, `{"runc":{"path":"runc"}} "runc"`+"\n", nil)
	spec := provider.Spec{Name: "lb-x", Image: "busybox", Network: provider.NetworkOwn, Runtime: "runsc"}
	_, err = p.Create(context.Background(), spec)
	if !errors.Is(err, provider.ErrNoRuntime) || !strings.Contains(err.Error(), `no runtime "runsc"`) ||
		!strings.Contains(err.Error(), "runc") || !strings.Contains(err.Error(), "ensure-gvisor.sh") {
		t.Errorf("create with an unknown runtime = %v; want ErrNoRuntime naming it, the runtimes offered and how to install gVisor", err)
	}

	// Podman's API would run it under its default, silently: refused too.
	f = runnertest.New(t)
	pp, err := New(Options{Engine: EnginePodman, Host: "unix:///p.sock", Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	f.Expect([]string{"docker", "--host", "unix:///p.sock", "info", "--format", "{{json .Runtimes}} {{json .DefaultRuntime}}"},
		`{"runc":{"path":"/usr/bin/runc"},"runsc":{"path":"/usr/bin/runsc"}} "runc"`+"\n", nil)
	if _, err := pp.Create(context.Background(), spec); !errors.Is(err, provider.ErrNoRuntime) || !strings.Contains(err.Error(), "containers.conf") {
		t.Errorf("create with runsc on podman = %v; want ErrNoRuntime saying to set it in containers.conf", err)
	}
}

// "gvisor", the portable name, is runsc on an engine that offers no
// runtime of that name, and the engine is asked once per provider; an
// engine that names a runtime "gvisor" runs that one.
func TestCheckRuntimeGVisor(t *testing.T) {
	for _, tt := range []struct{ answer, want string }{
		{`{"runc":{"path":"runc"},"runsc":{"path":"/x/runsc"}} "runc"`, "runsc"},
		{`{"runc":{"path":"runc"},"gvisor":{"path":"/x/runsc"},"runsc":{"path":"/x/runsc"}} "runc"`, "gvisor"},
	} {
		f := runnertest.New(t)
		p, err := New(Options{Runner: f})
		if err != nil {
			t.Fatal(err)
		}
		f.Expect(runtimesArgs, tt.answer+"\n", nil)
		for range 2 {
			if got, err := p.CheckRuntime(context.Background(), provider.RuntimeGVisor); got != tt.want || err != nil {
				t.Errorf("CheckRuntime(gvisor) on %s = %q, %v; want %q", tt.answer, got, err, tt.want)
			}
		}
	}
	f := runnertest.New(t)
	p, _ := New(Options{Runner: f})
	f.Expect(runtimesArgs, `{"runc":{"path":"runc"}} "runc"`+"\n", nil)
	if _, err := p.CheckRuntime(context.Background(), provider.RuntimeGVisor); !errors.Is(err, provider.ErrNoRuntime) || !strings.Contains(err.Error(), "ensure-gvisor.sh") {
		t.Errorf("CheckRuntime(gvisor) without runsc = %v; want ErrNoRuntime saying how to install gVisor", err)
	}
}

// Whether a runtime lets a container use the host's unix sockets comes
// from the answer CheckRuntime got: runsc (by name or program) only with
// --host-uds=all, any other runtime always; the engine is asked once.
func TestHostSockets(t *testing.T) {
	f := runnertest.New(t)
	p, err := New(Options{Runner: f})
	if err != nil {
		t.Fatal(err)
	}
	f.Expect(runtimesArgs, `{"runc":{"path":"runc"},"runsc":{"path":"/x/runsc","runtimeArgs":["--host-uds=all"]},"plain":{"path":"/x/runsc"}} "runc"`+"\n", nil)
	if got, err := p.CheckRuntime(context.Background(), provider.RuntimeGVisor); got != "runsc" || err != nil {
		t.Fatalf("CheckRuntime(gvisor) = %q, %v", got, err)
	}
	for name, want := range map[string]bool{"runsc": true, "plain": false, "runc": true} {
		if got, err := p.HostSockets(context.Background(), name); got != want || err != nil {
			t.Errorf("HostSockets(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
}
