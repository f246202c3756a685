package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

func TestServiceSpecQuotes(t *testing.T) {
	sc := ServiceConfig{
		Name: "web", Command: []string{"sh", "-c", "echo 'hi' $HOME; rm -rf /"}, StopSignal: "TERM", RestartSignal: "HUP",
		StopTimeout: 7, Workdir: "/src/my dir", Env: map[string]string{"B": "two words", "A": "it's"}, Restart: RestartAlways,
	}
	got := serviceSpec(sc)
	for _, want := range []string{
		"STOP=TERM\n", "RESTART_SIG=HUP\n", "TIMEOUT=7\n", "POLICY=always\n", "WORKDIR='/src/my dir'\n",
		"\texport 'A=it'\\''s'\n\texport 'B=two words'\n",
		"\texec sh -c 'echo '\\''hi'\\'' $HOME; rm -rf /'\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("spec lacks %q:\n%s", want, got)
		}
	}
}

func TestServicesArchive(t *testing.T) {
	cfg := &Config{Services: []ServiceConfig{{Name: "web", Command: []string{"httpd"}, StopSignal: "TERM", Restart: RestartNo, Workdir: "/src"}}}
	b, err := servicesArchive(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	modes := map[string]int64{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		modes[h.Name] = h.Mode
		if h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
	}
	want := map[string]int64{"svc": 0o755, "services/": 0o755, "state/": 0o1777, "services/web.spec": 0o644}
	if !reflect.DeepEqual(modes, want) {
		t.Errorf("archive = %v, want %v", modes, want)
	}
}

func TestParseServiceStatus(t *testing.T) {
	out := "message=started\nname=web\nstate=running\npid=42\nrestarts=3\nexit=143\nstarted=1763766000\n"
	kv := parseKV(out)
	st := parseServiceStatus(kv)
	code := 143
	want := ServiceStatus{Name: "web", State: "running", PID: 42, Restarts: 3, LastExitCode: &code, StartedAt: time.Unix(1763766000, 0).UTC()}
	if !reflect.DeepEqual(st, want) || kv["message"] != "started" {
		t.Errorf("got %+v", st)
	}
	// Never exited, not running: empty values.
	st = parseServiceStatus(parseKV("name=web\nstate=not-started\npid=\nrestarts=\nexit=\nstarted=\n"))
	if st.LastExitCode != nil || st.PID != 0 || !st.StartedAt.IsZero() || st.State != "not-started" {
		t.Errorf("got %+v", st)
	}
}

func TestNamedPorts(t *testing.T) {
	got := namedPorts("web=8080,api=3000,bad,x=y", []docker.Binding{{ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1", HostPort: 40001}})
	want := []PortInfo{
		{Name: "api", ContainerPort: 3000, Env: "PORT_API"},
		{Name: "web", ContainerPort: 8080, Env: "PORT_WEB", HostPort: 40001, URL: "http://127.0.0.1:40001"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	if got := namedPorts("", nil); got == nil || len(got) != 0 {
		t.Errorf("no ports = %#v, want an empty non-nil list", got)
	}
}

func TestServiceActionArgv(t *testing.T) {
	f := &runner.Fake{}
	h := &Handle{Slug: "s1", Container: "cid"}
	f.Expect([]string{"docker", "exec", "--user", "1000:1000", "cid", "/run/litterbox/svc", "logs", "web", "5"},
		"name=web\nstate=running\npid=9\nrestarts=0\nexit=\nstarted=\n--- log\nline 1\nline 2\n", nil)
	f.Expect([]string{"docker", "exec", "--user", "1000:1000", "cid", "/run/litterbox/svc", "stop", "web"},
		"message=stopped\nname=web\nstate=stopped\npid=\nrestarts=0\nexit=143\nstarted=\n", nil)
	f.Expect([]string{"docker", "exec", "--user", "1000:1000", "cid", "/run/litterbox/svc", "status", "db"},
		"error=unknown service\nservices=web worker \n", &runner.ExitError{ExitCode: 3})
	s, _ := fakeService(f)
	ctx := context.Background()

	res, err := s.ServiceAction(ctx, h, "web", ActionLogs, 5)
	if err != nil || res.Log != "line 1\nline 2\n" || res.Status.PID != 9 {
		t.Errorf("logs: %+v %v", res, err)
	}
	res, err = s.ServiceAction(ctx, h, "web", ActionStop, 0)
	if err != nil || res.Message != "stopped" || res.Status.State != "stopped" || *res.Status.LastExitCode != 143 {
		t.Errorf("stop: %+v %v", res, err)
	}
	_, err = s.ServiceAction(ctx, h, "db", ActionStatus, 0)
	if !errors.Is(err, ErrNoService) || !strings.Contains(err.Error(), "its services: web, worker") {
		t.Errorf("unknown service: %v", err)
	}
	if _, err := s.ServiceAction(ctx, h, "web", "reload", 0); err == nil {
		t.Error("unknown action accepted")
	}
	if _, err := s.ServiceAction(ctx, h, "../x", ActionStatus, 0); !errors.Is(err, ErrNoService) {
		t.Errorf("bad name: %v", err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestPortsArgv(t *testing.T) {
	f := &runner.Fake{}
	f.Expect(append([]string{"docker"}, docker.InspectPortsArgs("cid", LabelPorts)...), "web=8080\t{\"8080/tcp\":[{\"HostIp\":\"127.0.0.1\",\"HostPort\":\"41000\"}]}\n", nil)
	s, _ := fakeService(f)
	res, err := s.Ports(context.Background(), &Handle{Slug: "s1", Container: "cid"})
	if err != nil || len(res.Ports) != 1 || res.Ports[0].URL != "http://127.0.0.1:41000" {
		t.Errorf("%+v %v", res, err)
	}
	if err := f.Check(); err != nil {
		t.Error(err)
	}
}

func TestSaveServices(t *testing.T) {
	dir := t.TempDir()
	r := &Repo{Git: &git.Repo{Root: dir, CommonDir: dir}}
	path := filepath.Join(r.stateDir("s1"), servicesFile)
	cfg := &Config{Services: []ServiceConfig{{Name: "web", Command: []string{"httpd"}, StopSignal: "TERM", Restart: RestartNo, Workdir: "/src"}}}
	archive, err := saveServices(r, "s1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk, err := os.ReadFile(path); err != nil || !bytes.Equal(onDisk, archive) {
		t.Fatalf("saved archive: %v", err)
	}
	// A later sandbox of that name without services must not inherit them.
	if _, err := saveServices(r, "s1", &Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale services archive left: %v", err)
	}
}
