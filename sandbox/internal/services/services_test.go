package services

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/fake"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

func TestServiceSpecQuotes(t *testing.T) {
	sc := config.Service{
		Name: "web", Command: []string{"sh", "-c", "echo 'hi' $HOME; rm -rf /"}, StopSignal: "TERM", RestartSignal: "HUP",
		StopTimeout: 7, Workdir: "/src/my dir", Env: map[string]string{"B": "two words", "A": "it's"}, Restart: config.RestartAlways,
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
	cfg := &config.Config{Services: []config.Service{{Name: "web", Command: []string{"httpd"}, StopSignal: "TERM", Restart: config.RestartNo, Workdir: "/src"}}}
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
	st := parseStatus("web", kv)
	code := 143
	want := api.ServiceStatus{Name: "web", State: "running", PID: 42, Restarts: 3, LastExitCode: &code, StartedAt: time.Unix(1763766000, 0).UTC()}
	if !reflect.DeepEqual(st, want) || kv["message"] != "started" {
		t.Errorf("got %+v", st)
	}
	// Never exited, not running: empty values.
	st = parseStatus("web", parseKV("name=web\nstate=not-started\npid=\nrestarts=\nexit=\nstarted=\n"))
	if st.LastExitCode != nil || st.PID != 0 || !st.StartedAt.IsZero() || st.State != "not-started" {
		t.Errorf("got %+v", st)
	}
}

// The state files are the agent's to write: whatever they hold, the status
// has the name asked for, one of the supervisor's states, and numbers only
// when they are plain digits in range.
func TestParseServiceStatusHostile(t *testing.T) {
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	for _, tc := range []struct {
		out  string
		want api.ServiceStatus
	}{
		{"name=\x1b]0;PWNED\a\nstate=\x1b[2Jrunning\npid=\x1b[31m\nrestarts=1\x1b\nexit=\x1b]0;x\a\nstarted=1\x1b[2J\n",
			api.ServiceStatus{Name: "web", State: StateUnknown}},
		{"name=web\nstate=running\npid=-1\nrestarts=+3\nexit=256\nstarted=" + future + "\n",
			api.ServiceStatus{Name: "web", State: "running"}},
		{"name=web\nstate=running\npid=0\nrestarts= 3\nexit=-1\nstarted=0\n",
			api.ServiceStatus{Name: "web", State: "running"}},
		{"name=web\nstate=stopped\npid=99999999\nrestarts=99999999999999999999\nexit=0143\nstarted=1e9\n",
			api.ServiceStatus{Name: "web", State: "stopped"}},
		{"name=web\nstate=stopped\npid=4194304\nrestarts=0\nexit=255\nstarted=1\n",
			api.ServiceStatus{Name: "web", State: "stopped", PID: 4194304, LastExitCode: ptr(255), StartedAt: time.Unix(1, 0).UTC()}},
	} {
		if got := parseStatus("web", parseKV(tc.out)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.out, got, tc.want)
		}
	}
	if got := message("\x1b[2J" + strings.Repeat("a", 300)); got != `\033[2J`+strings.Repeat("a", 196) {
		t.Errorf("message = %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

// What the supervisor prints past maxSupervisorOutput is dropped, not kept,
// and the command still runs to its end.
func TestCapWriter(t *testing.T) {
	w := capWriter{max: 10}
	for _, p := range []string{"12345", "67890", "abc", "def"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if w.String() != "1234567890" || !w.cut {
		t.Errorf("kept %q, cut %v", w.String(), w.cut)
	}
	w.Reset()
	_, _ = w.Write([]byte("x"))
	if w.String() != "x" || w.cut {
		t.Errorf("after Reset: %q, cut %v", w.String(), w.cut)
	}
}

// ServiceAction runs the supervisor as the sandbox user, with the action's
// arguments, and reads its answer.
func TestServiceAction(t *testing.T) {
	answers := map[string]provider.ExecResult{
		"/run/litterbox/svc logs web 5": {Stdout: []byte("name=web\nstate=running\npid=9\nrestarts=0\nexit=\nstarted=\n--- log\nline 1\nline 2\n")},
		"/run/litterbox/svc stop web":   {Stdout: []byte("message=stopped\nname=web\nstate=stopped\npid=\nrestarts=0\nexit=143\nstarted=\n")},
		"/run/litterbox/svc status db":  {Stdout: []byte("error=unknown service\nservices=web worker \n"), ExitCode: 3},
	}
	p := &fake.Provider{}
	p.Run = func(_ context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
		res, ok := answers[strings.Join(req.Cmd, " ")]
		if !ok || req.User != api.User {
			t.Errorf("unexpected exec %q as %q", req.Cmd, req.User)
		}
		_, _ = req.Stdout.Write(res.Stdout)
		return res, nil
	}
	sb, err := p.Create(context.Background(), provider.Spec{Name: "c", Network: provider.NetworkNone})
	if err != nil {
		t.Fatal(err)
	}
	s := New(&core.Common{Provider: p, Runner: runner.Exec{}, Log: log.New(io.Discard)})
	h := &api.Handle{Slug: "s1", Ref: sb.Ref}
	ctx := context.Background()

	res, err := s.Do(ctx, h, "web", api.ActionLogs, 5)
	if err != nil || res.Log != "line 1\nline 2\n" || res.Status.PID != 9 {
		t.Errorf("logs: %+v %v", res, err)
	}
	res, err = s.Do(ctx, h, "web", api.ActionStop, 0)
	if err != nil || res.Message != "stopped" || res.Status.State != "stopped" || *res.Status.LastExitCode != 143 {
		t.Errorf("stop: %+v %v", res, err)
	}
	_, err = s.Do(ctx, h, "db", api.ActionStatus, 0)
	if !errors.Is(err, api.ErrNoService) || !strings.Contains(err.Error(), "its services: web, worker") {
		t.Errorf("unknown service: %v", err)
	}
	if _, err := s.Do(ctx, h, "web", "reload", 0); err == nil {
		t.Error("unknown action accepted")
	}
	if _, err := s.Do(ctx, h, "../x", api.ActionStatus, 0); !errors.Is(err, api.ErrNoService) {
		t.Errorf("bad name: %v", err)
	}
	p.SetState(sb.Ref, provider.StatePaused)
	if _, err := s.Do(ctx, h, "web", api.ActionStatus, 0); !errors.Is(err, api.ErrPaused) {
		t.Errorf("paused: %v", err)
	}
}

func TestSaveServices(t *testing.T) {
	dir := t.TempDir()
	r := &api.Repo{Git: &git.Repo{Root: dir, CommonDir: dir}}
	path := filepath.Join(r.StateDir("s1"), servicesFile)
	cfg := &config.Config{Services: []config.Service{{Name: "web", Command: []string{"httpd"}, StopSignal: "TERM", Restart: config.RestartNo, Workdir: "/src"}}}
	archive, err := Save(r, "s1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk, err := os.ReadFile(path); err != nil || !bytes.Equal(onDisk, archive) {
		t.Fatalf("saved archive: %v", err)
	}
	// A later sandbox of that name without services must not inherit them.
	if _, err := Save(r, "s1", &config.Config{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale services archive left: %v", err)
	}
}
