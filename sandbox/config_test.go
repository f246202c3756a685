package sandbox

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Setup, DefaultSetup) || cfg.Network != NetworkBridge || len(cfg.Ports) != 0 || len(cfg.Services) != 0 {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestParseConfigFull(t *testing.T) {
	base := `
setup = ["make", "deps"]
network = "bridge"

[ports]
web = 8080
admin-ui = 9000

[limits]
memory = "512m"
cpus = 0.5
pids = 256

[services.web]
command = ["httpd", "-f", "-p", "8080"]
signals = { stop = "SIGINT", restart = "hup" }
workdir = "www"
env = { MODE = "dev" }
restart = "always"
autostart = true
stop_timeout = 3

[services.worker]
command = ["sh", "-c", "while sleep 1; do :; done"]
`
	cfg, err := ParseConfig([]byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Setup; !reflect.DeepEqual(got, []string{"make", "deps"}) {
		t.Errorf("setup = %q", got)
	}
	wantPorts := []Port{{"admin-ui", 9000}, {"web", 8080}}
	if !reflect.DeepEqual(cfg.Ports, wantPorts) {
		t.Errorf("ports = %+v, want %+v", cfg.Ports, wantPorts)
	}
	if cfg.Ports[0].EnvName() != "PORT_ADMIN_UI" {
		t.Errorf("env name = %s", cfg.Ports[0].EnvName())
	}
	if cfg.Memory != "512m" || cfg.CPUs != "0.5" || cfg.Pids != 256 {
		t.Errorf("limits = %q %q %d", cfg.Memory, cfg.CPUs, cfg.Pids)
	}
	web, ok := cfg.Service("web")
	if !ok {
		t.Fatal("no web service")
	}
	want := ServiceConfig{
		Name: "web", Command: []string{"httpd", "-f", "-p", "8080"}, StopSignal: "INT", RestartSignal: "HUP",
		StopTimeout: 3, Workdir: "/src/www", Env: map[string]string{"MODE": "dev"}, Restart: RestartAlways, Autostart: true,
	}
	if !reflect.DeepEqual(web, want) {
		t.Errorf("web = %+v\nwant  %+v", web, want)
	}
	worker, _ := cfg.Service("worker")
	if worker.StopSignal != "TERM" || worker.RestartSignal != "" || worker.Restart != RestartOnFailure || worker.Workdir != "/src" || worker.StopTimeout != DefaultStopTimeout || worker.Autostart {
		t.Errorf("worker defaults = %+v", worker)
	}
}

func TestParseConfigLocalOverride(t *testing.T) {
	base := `
[ports]
web = 8080
[services.web]
command = ["httpd", "-f"]
env = { A = "1", B = "2" }
`
	local := `
setup = ["true"]
[ports]
api = 3000
[services.web]
autostart = true
env = { B = "local" }
[services.extra]
command = ["sleep", "1000"]
`
	cfg, err := ParseConfig([]byte(base), []byte(local))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Ports) != 2 || !reflect.DeepEqual(cfg.Setup, []string{"true"}) {
		t.Errorf("merged = %+v", cfg)
	}
	web, _ := cfg.Service("web")
	if !web.Autostart || !reflect.DeepEqual(web.Command, []string{"httpd", "-f"}) || !reflect.DeepEqual(web.Env, map[string]string{"A": "1", "B": "local"}) {
		t.Errorf("web = %+v", web)
	}
	if _, ok := cfg.Service("extra"); !ok {
		t.Error("extra service from the local file is missing")
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, base, local, want string
	}{
		{"syntax", "[ports]\nweb = 8080\napi = = 1\n", "", ".litterbox.toml:3:"},
		{"unknown top key", "setup = [\"true\"]\nnetwrok = \"none\"\n", "", `.litterbox.toml:2: unknown key "netwrok"`},
		{"unknown service key", "[services.web]\ncommand = [\"a\"]\ncomand = [\"b\"]\n", "", `.litterbox.toml:3: unknown key "services.web.comand"`},
		{"unknown key in local", "", "[limits]\nmemroy = \"1g\"\n", `.litterbox.local.toml:2: unknown key "limits.memroy"`},
		{"wrong type", "[ports]\nweb = \"8080\"\n", "", ".litterbox.toml:2:"},
		{"empty command", "[services.web]\ncommand = []\n", "", "services.web.command: required"},
		{"missing command", "[services.web]\nautostart = true\n", "", "services.web.command: required"},
		{"unknown signal", "[services.web]\ncommand = [\"a\"]\nsignals = { stop = \"SIGFOO\" }\n", "", `services.web.signals.stop: unknown signal "SIGFOO"`},
		{"unknown restart signal", "[services.web]\ncommand = [\"a\"]\nsignals = { restart = \"RELOAD\" }\n", "", "services.web.signals.restart: unknown signal"},
		{"bad policy", "[services.web]\ncommand = [\"a\"]\nrestart = \"sometimes\"\n", "", "services.web.restart"},
		{"bad service name", "[services.Web]\ncommand = [\"a\"]\n", "", "services.Web: a service name"},
		{"port range", "[ports]\nweb = 70000\n", "", "ports.web: 70000 is not a port"},
		{"port name", "[ports]\n1web = 80\n", "", "ports.1web: a port name"},
		{"duplicate port", "[ports]\nweb = 80\nalt = 80\n", "", "port 80 is also"},
		{"same env name", "[ports]\nweb-ui = 80\nweb_ui = 81\n", "", "PORT_WEB_UI is also"},
		{"network value", "network = \"host\"\n", "", `network: "host"`},
		{"ports without network", "network = \"none\"\n[ports]\nweb = 80\n", "", "cannot publish ports"},
		{"empty setup", "setup = []\n", "", "setup: must be a non-empty list"},
		{"memory", "[limits]\nmemory = \"lots\"\n", "", "limits.memory"},
		{"cpus", "[limits]\ncpus = 0\n", "", "limits.cpus"},
		{"pids", "[limits]\npids = 2\n", "", "limits.pids"},
		{"env name", "[services.web]\ncommand = [\"a\"]\nenv = { \"A-B\" = \"1\" }\n", "", "services.web.env.A-B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base, local []byte
			if tt.base != "" {
				base = []byte(tt.base)
			}
			if tt.local != "" {
				local = []byte(tt.local)
			}
			_, err := ParseConfig(base, local)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v does not wrap ErrConfig", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]string{"SIGTERM": "TERM", "term": "TERM", "SigHup": "HUP", "USR1": "USR1"} {
		if got, err := ParseSignal(in); err != nil || got != want {
			t.Errorf("ParseSignal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "SIG", "SIGFOO", "15"} {
		if _, err := ParseSignal(in); err == nil {
			t.Errorf("ParseSignal(%q) accepted", in)
		}
	}
}

func TestConfigApply(t *testing.T) {
	cfg, err := ParseConfig([]byte("[ports]\nweb = 8080\napi = 3000\n[limits]\nmemory = \"1g\"\npids = 100\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Image: DefaultImage}
	r := &Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	spec := s.runSpec(r, "x", "base")
	cfg.apply(&spec)
	if want := []string{"127.0.0.1::3000/tcp", "127.0.0.1::8080/tcp"}; !reflect.DeepEqual(spec.Ports, want) {
		t.Errorf("ports = %q", spec.Ports)
	}
	if !strings.Contains(strings.Join(spec.Env, " "), "PORT_API=3000 PORT_WEB=8080") {
		t.Errorf("env = %q", spec.Env)
	}
	if spec.Labels[LabelPorts] != "api=3000,web=8080" || spec.Memory != "1g" || spec.PidsLimit != 100 || spec.Network != "litterbox-repo-x" {
		t.Errorf("spec = %+v", spec)
	}
	// The in-memory file systems are sized from the configured limit.
	if want := []string{"/src:rw,exec,uid=1000,gid=1000,mode=0755,size=536870912", "/tmp:rw,exec,mode=1777,size=268435456", "/run/litterbox:rw,exec,mode=0755,size=67108864"}; !reflect.DeepEqual(spec.Tmpfs, want) {
		t.Errorf("tmpfs = %q", spec.Tmpfs)
	}
	none, _ := ParseConfig([]byte(`network = "none"`), nil)
	none.apply(&spec)
	if spec.Network != "none" {
		t.Errorf("network = %q", spec.Network)
	}
}

func TestTmpfsMountsBelowMemory(t *testing.T) {
	for _, tc := range []struct {
		memory   string
		src, tmp string
	}{
		{"2g", "size=1073741824", "size=536870912"},
		{"512m", "size=268435456", "size=134217728"},
		{"1.5G", "size=805306368", "size=402653184"},
		{"1048576", "size=524288", "size=262144"},
		{"64k", "size=32768", "size=16384"},
		{"0", "", ""},
	} {
		got := tmpfsMounts(tc.memory)
		if len(got) != 3 {
			t.Fatalf("tmpfsMounts(%q) = %q", tc.memory, got)
		}
		for i, want := range []string{tc.src, tc.tmp} {
			_, size, _ := strings.Cut(got[i], ",size=")
			if want == "" && size != "" || want != "" && "size="+size != want {
				t.Errorf("tmpfsMounts(%q)[%d] = %q, want %q", tc.memory, i, got[i], want)
			}
		}
	}
	s := &Service{Image: DefaultImage}
	r := &Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	if spec := s.runSpec(r, "x", "base"); !strings.HasSuffix(spec.Tmpfs[0], ",size=1073741824") {
		t.Errorf("default /src = %q, want half of %s", spec.Tmpfs[0], DefaultMemory)
	}
}
