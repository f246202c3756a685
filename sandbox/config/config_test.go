package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := Parse(nil, nil)
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
	cfg, err := Parse([]byte(base), nil)
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
	want := Service{
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

// TestParseConfigRuntime: runtime is read from either file, the local one
// winning, and left "" (the engine's default) when neither sets it.
func TestParseConfigRuntime(t *testing.T) {
	for _, tt := range []struct{ base, local, want string }{
		{"", "", ""},
		{"runtime = \"gvisor\"\n", "", "gvisor"},
		{"runtime = \"runc\"\n", "runtime = \"runsc\"\n", "runsc"},
		{"", "runtime = \"io.containerd.runc.v2\"\n", "io.containerd.runc.v2"},
	} {
		cfg, err := parseTexts(tt.base, tt.local)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Runtime != tt.want {
			t.Errorf("runtime of %q over %q = %q, want %q", tt.local, tt.base, cfg.Runtime, tt.want)
		}
	}
}

func TestParseConfigIdle(t *testing.T) {
	for _, tt := range []struct {
		base, local string
		want        time.Duration
	}{
		{"", "", 15 * time.Minute},
		{"idle = \"1h\"\n", "", time.Hour},
		{"idle = \"1h\"\n", "idle = \"0\"\n", 0},
		{"", "idle = \"90s\"\n", 90 * time.Second},
	} {
		cfg, err := parseTexts(tt.base, tt.local)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Idle != tt.want {
			t.Errorf("idle of %q over %q = %s, want %s", tt.local, tt.base, cfg.Idle, tt.want)
		}
	}
	for _, bad := range []string{"3sec", "-1m", "15", ""} {
		_, err := parseTexts(fmt.Sprintf("idle = %q\n", bad), "")
		if err == nil || !strings.Contains(err.Error(), "idle: ") || !strings.Contains(err.Error(), `is not a duration such as "15m"`) {
			t.Errorf("idle = %q: err = %v, want one naming the key and the form", bad, err)
		}
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
	cfg, err := Parse([]byte(base), []byte(local))
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
		{"runtime value", "runtime = \"run sc\"\n", "", `.litterbox.toml:1: runtime: "run sc" is not a runtime name`},
		{"ports without network", "network = \"none\"\n[ports]\nweb = 80\n", "", "cannot publish ports"},
		{"empty setup", "setup = []\n", "", "setup: must be a non-empty list"},
		{"memory", "[limits]\nmemory = \"lots\"\n", "", "limits.memory"},
		{"cpus", "[limits]\ncpus = 0\n", "", "limits.cpus"},
		{"pids", "[limits]\npids = 2\n", "", "limits.pids"},
		{"record in the committed file", "[limits]\nrecord = \"0\"\n", "", ".litterbox.toml:2: limits.record can only be set in .litterbox.local.toml"},
		{"record size", "", "[limits]\nrecord = \"lots\"\n", "limits.record"},
		{"bootstrap in the committed file", "\n[bootstrap]\ninclude = [\".env\"]\n", "", ".litterbox.toml:2: [bootstrap] can only be set in .litterbox.local.toml"},
		{"bootstrap pattern", "", "[bootstrap]\ninclude = [\"a\\nb\"]\n", "bootstrap.include"},
		{"cache preset", "[cache]\nuse = [\"maven\"]\n", "", `cache.use: "maven" is neither a cache litterbox knows`},
		{"cache path in src", "[cache]\nuse = [\"/src/.cache\"]\n", "", `cache.use: "/src/.cache" is where the sandbox keeps`},
		{"cache twice", "[cache]\nuse = [\"go\", \"go\"]\n", "", `"go" is named twice`},
		{"cache mode", "[cache]\nuse = [\"go\"]\nmode = \"readonly\"\n", "", `cache.mode: "readonly"`},
		{"dotenv mode", "", "[bootstrap]\ndotenv = \"all\"\n", `bootstrap.dotenv: "all" is not "copy"`},
		{"dotenv without hosts", "", "[bootstrap]\ndotenv = \"placeholders\"\n", "dotenv = \"placeholders\" needs dotenv_hosts"},
		{"dotenv hosts without mode", "", "[bootstrap]\ndotenv_hosts = [\"a.example\"]\n", "bootstrap.dotenv_hosts"},
		{"dotenv key without hosts", "", "[bootstrap]\ndotenv_secrets = { KEY = [] }\n", "bootstrap.dotenv_secrets.KEY: no hosts"},
		{"dotenv bad host", "", "[bootstrap]\ndotenv_secrets = { KEY = [\"a b\"] }\n", "bootstrap.dotenv_secrets.KEY"},
		{"dotenv in the committed file", "[bootstrap]\ndotenv_secrets = { KEY = [\"a.example\"] }\n", "", "[bootstrap] can only be set in .litterbox.local.toml"},
		{"env name", "[services.web]\ncommand = [\"a\"]\nenv = { \"A-B\" = \"1\" }\n", "", "services.web.env.A-B"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTexts(tt.base, tt.local)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
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

// The other spelling, [container.services.NAME], parses to the same
// configuration as [services.NAME].
func TestParseConfigSeedSpelling(t *testing.T) {
	seed := `
[container.services.backend]
command = ["npm", "run", "dev"]
signals = { stop = "SIGTERM", restart = "SIGHUP" }

[container.services.database]
command = ["postgres", "-D", "/data"]
signals = { stop = "SIGTERM" }
`
	today := `
[services.backend]
command = ["npm", "run", "dev"]
signals = { stop = "SIGTERM", restart = "SIGHUP" }

[services.database]
command = ["postgres", "-D", "/data"]
signals = { stop = "SIGTERM" }
`
	a, err := Parse([]byte(seed), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte(today), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed spelling = %+v\ntoday's       = %+v", a, b)
	}
	if len(a.Services) != 2 || a.Services[0].RestartSignal != "HUP" || a.Services[1].Command[0] != "postgres" {
		t.Errorf("services = %+v", a.Services)
	}
	// The local file may use either spelling over either.
	c, err := Parse([]byte(seed), []byte("[services.backend]\nautostart = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if be, _ := c.Service("backend"); !be.Autostart || be.Command[0] != "npm" {
		t.Errorf("backend after the local file = %+v", be)
	}
}

// Errors name the file, the line and the key as it is written, in both
// spellings.
func TestParseConfigErrorLines(t *testing.T) {
	tests := []struct {
		name, base, local, want string
	}{
		{"seed unknown key", "[container.services.web]\ncommand = [\"a\"]\ncomand = [\"b\"]\n", "", `.litterbox.toml:3: unknown key "container.services.web.comand"`},
		{"seed signal", "\n[container.services.web]\ncommand = [\"a\"]\nsignals = { stop = \"SIGFOO\" }\n", "", `.litterbox.toml:4: container.services.web.signals.stop: unknown signal "SIGFOO"`},
		{"today signal", "\n[services.web]\ncommand = [\"a\"]\nsignals = { stop = \"SIGFOO\" }\n", "", `.litterbox.toml:4: services.web.signals.stop: unknown signal "SIGFOO"`},
		{"seed no command", "[container.services.web]\nautostart = true\n", "", `.litterbox.toml:1: container.services.web.command: required`},
		{"seed restart", "[container.services.web]\ncommand = [\"a\"]\n\nrestart = \"sometimes\"\n", "", `.litterbox.toml:4: container.services.web.restart: "sometimes"`},
		{"both spellings", "[services.web]\ncommand = [\"a\"]\n[container.services.web]\ncommand = [\"b\"]\n", "", `service "web" is written both as [services.web] (.litterbox.toml:1) and as [container.services.web] (.litterbox.toml:3)`},
		{"local line", "[ports]\nweb = 80\n", "\n\n[ports]\nweb = 70000\n", `.litterbox.local.toml:4: ports.web: 70000 is not a port`},
		{"port wrong type", "[ports]\nweb = \"8080\"\n", "", `.litterbox.toml:2: ports.web: "8080" is not a port number`},
		{"range type", "[ports]\nrange = 20000\n", "", `.litterbox.toml:2: ports.range: 20000 is not a range of host ports`},
		{"range order", "[ports]\nrange = \"20010-20000\"\n", "", `ports.range: "20010-20000": the first port is above the last`},
		{"range low", "[ports]\nrange = \"80-90\"\n", "", `ports.range: "80-90": host ports are 1024-65535`},
		{"range junk", "[ports]\nrange = \"lots\"\n", "", `ports.range: "lots" is not a range`},
		{"image", "\nimage = \"--privileged\"\n", "", `.litterbox.toml:2: image: "--privileged" is not an image reference`},
		{"agent images committed", "\nagent_images = [\"a:1\"]\n", "", `.litterbox.toml:2: agent_images can only be set in .litterbox.local.toml`},
		{"agent image bad", "", "agent_images = [\"a b\"]\n", `.litterbox.local.toml:1: agent_images: "a b" is not an image reference`},
		{"image space", "image = \"busybox latest\"\n", "", `image: "busybox latest" is not an image reference`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTexts(tt.base, tt.local)
			if err == nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid with %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// image and the host port range: the local file wins over the committed one.
func TestParseConfigImageAndRange(t *testing.T) {
	cfg, err := Parse([]byte("image = \"litterbox-test/debian-python:bookworm\"\n[ports]\nweb = 8080\nrange = \"20000-20010\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Image != "litterbox-test/debian-python:bookworm" || cfg.HostPorts != (PortRange{20000, 20010}) || !reflect.DeepEqual(cfg.Ports, []Port{{"web", 8080}}) {
		t.Errorf("cfg = %+v", cfg)
	}
	cfg, err = Parse([]byte("image = \"a:1\"\n[ports]\nrange = \"20000-20010\"\n"), []byte("image = \"b:2\"\n[ports]\nrange = \"30000\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Image != "b:2" || cfg.HostPorts != (PortRange{30000, 30000}) {
		t.Errorf("merged cfg = %+v", cfg)
	}
	if cfg, _ := Parse(nil, nil); cfg.Image != "" || cfg.HostPorts != (PortRange{}) {
		t.Errorf("defaults = %+v", cfg)
	}
}

// parseTexts parses a committed and a local file given as text; "" stands
// for a file that is not there.
func parseTexts(base, local string) (*Config, error) {
	var b, l []byte
	if base != "" {
		b = []byte(base)
	}
	if local != "" {
		l = []byte(local)
	}
	return Parse(b, l)
}

// TestLoadLeavesOutATrackedLocalFile: a .litterbox.local.toml git tracks
// came with a commit (perhaps a sandbox's, merged by hand), so it is not
// read, and the warning says so; untracked, it is read.
func TestLoadLeavesOutATrackedLocalFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q")
	if err := os.WriteFile(filepath.Join(dir, LocalFile), []byte("agent_images = [\"img\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("commit", "-q", "--allow-empty", "-m", "init")
	head := run("rev-parse", "HEAD")
	ctx := context.Background()
	g := &git.Repo{R: runner.Exec{}, Root: dir, CommonDir: filepath.Join(dir, ".git")}
	load := func() (*Config, []string) {
		t.Helper()
		var warned []string
		cfg, err := Load(ctx, g, head, func(s string) { warned = append(warned, s) })
		if err != nil {
			t.Fatal(err)
		}
		return cfg, warned
	}

	cfg, warned := load()
	if !slices.Equal(cfg.AgentImages, []string{"img"}) || !slices.Contains(cfg.Sources, LocalFile) || len(warned) != 0 {
		t.Errorf("untracked: images %q, sources %q, warnings %q; want it read", cfg.AgentImages, cfg.Sources, warned)
	}
	run("add", LocalFile)
	for _, step := range []string{"staged", "committed"} {
		cfg, warned = load()
		if len(cfg.AgentImages) != 0 || slices.Contains(cfg.Sources, LocalFile) || len(warned) != 1 || !strings.Contains(warned[0], "is tracked by git, so it is not read") {
			t.Errorf("%s: images %q, sources %q, warnings %q; want it left out, with a warning", step, cfg.AgentImages, cfg.Sources, warned)
		}
		run("commit", "-q", "--allow-empty", "-m", "track it")
	}

	// A variant git tracks is the file itself on a case-insensitive file
	// system (where .litterbox.local.toml opens .LITTERBOX.LOCAL.TOML):
	// here both are there, as that file system would show the one.
	run("rm", "-q", "--cached", LocalFile)
	if err := os.WriteFile(filepath.Join(dir, ".LITTERBOX.LOCAL.TOML"), []byte("agent_images = [\"img\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("add", ".LITTERBOX.LOCAL.TOML")
	cfg, warned = load()
	if len(cfg.AgentImages) != 0 || len(warned) != 1 || !strings.Contains(warned[0], ".LITTERBOX.LOCAL.TOML is tracked by git, and on a case-insensitive file system it is "+LocalFile) {
		t.Errorf("variant tracked: images %q, warnings %q; want it left out, with a warning naming the variant", cfg.AgentImages, warned)
	}
}

// The settings only the user writes are read from the local file alone,
// and File's content is kept as read, for the record of a sandbox's
// settings.
func TestLocalOnlySettings(t *testing.T) {
	g := initRepo(t)
	if err := os.WriteFile(filepath.Join(g.Root, LocalFile), []byte("agent_base_refs = [\"refs/heads/litterbox/\", \"refs/stash\"]\nagent_images = [\"a:1\"]\n[bootstrap]\ninclude = [\".env\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	noWarn := func(msg string) { t.Errorf("unexpected warning: %s", msg) }
	cfg, err := Local(ctx, g, noWarn)
	if err != nil || !slices.Equal(cfg.AgentBaseRefs, []string{"refs/heads/litterbox/", "refs/stash"}) || !slices.Equal(cfg.AgentImages, []string{"a:1"}) || !slices.Equal(cfg.BootstrapInclude, []string{".env"}) {
		t.Fatalf("Local = %+v, %v", cfg, err)
	}
	committed := []byte("[limits]\npids = 64\n")
	cfg, err = WithLocal(ctx, g, committed, noWarn)
	if err != nil || cfg.Pids != 64 || string(cfg.Committed) != string(committed) || !slices.Equal(cfg.Sources, []string{File, LocalFile}) {
		t.Fatalf("WithLocal = %+v, %v", cfg, err)
	}
	if cfg, err = WithLocal(ctx, initRepo(t), nil, noWarn); err != nil || cfg.Committed != nil || len(cfg.Sources) != 0 {
		t.Fatalf("WithLocal without files = %+v, %v", cfg, err)
	}
}

// initRepo makes an empty git repository.
func initRepo(t *testing.T) *git.Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return &git.Repo{R: runner.Exec{}, Root: dir, CommonDir: filepath.Join(dir, ".git")}
}

// TestEgress: [network] sets the gateway's policy, the local file wins key
// by key, `network = "none"` still reads, and bad entries name their line.
func TestEgress(t *testing.T) {
	cfg, err := Parse(nil, nil)
	if err != nil || cfg.EgressMode() != EgressAllowlist || !cfg.Confined() || !cfg.Egress.Registries {
		t.Fatalf("default: %+v %v", cfg, err)
	}
	cfg, err = Parse([]byte("[network]\negress = \"allowlist\"\nallow = [\"api.example.com\", \"*.example.org:8443\"]\nregistries = false\n"),
		[]byte("[network]\ndeny = [\"10.0.0.0/8\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Egress.Mode != EgressAllowlist || len(cfg.Egress.Allow) != 2 || cfg.Egress.Deny[0] != "10.0.0.0/8" || cfg.Egress.Registries {
		t.Fatalf("merged: %+v", cfg.Egress)
	}
	cfg, err = Parse([]byte("[network]\negress = \"allowlist\"\n"), []byte("[network]\negress = \"open\"\nmode = \"own\"\n"))
	if err != nil || cfg.EgressMode() != EgressOpen || cfg.Confined() || cfg.Network != NetworkOwn {
		t.Fatalf("local wins: %+v %v", cfg, err)
	}
	cfg, err = Parse([]byte("network = \"none\"\n"), nil)
	if err != nil || cfg.Network != NetworkNone || cfg.Confined() {
		t.Fatalf("network none: %+v %v", cfg, err)
	}
	for in, want := range map[string]string{
		"[network]\negress = \"wide\"\n":        `.litterbox.toml:2: network.egress: "wide" is not`,
		"[network]\nallow = [\"a b\"]\n":        `.litterbox.toml:2: network.allow:`,
		"\n[network]\nalow = [\"x.example\"]\n": `.litterbox.toml:3: unknown key "network.alow"`,
		"[network]\nregistries = \"yes\"\n":     `.litterbox.toml:2: network.registries: must be true or false`,
		"network = 3\n":                         `.litterbox.toml:1: network: must be`,
	} {
		_, err := Parse([]byte(in), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestParseConfigDotenv(t *testing.T) {
	cfg, err := parseTexts("", "[bootstrap]\ndotenv = \"placeholders\"\ndotenv_hosts = [\"api.example.com\"]\ndotenv_secrets = { STRIPE_KEY = [\"api.stripe.com\"] }\n")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Dotenv
	if h, ok := d.Hosts("STRIPE_KEY"); !ok || !slices.Equal(h, []string{"api.stripe.com"}) {
		t.Errorf("Hosts(STRIPE_KEY) = %v, %v; want the key's own hosts", h, ok)
	}
	if h, ok := d.Hosts("OTHER"); !ok || !slices.Equal(h, []string{"api.example.com"}) {
		t.Errorf("Hosts(OTHER) = %v, %v; want dotenv_hosts", h, ok)
	}
	if d.Where != ".litterbox.local.toml:1" {
		t.Errorf("Where = %q", d.Where)
	}
	cfg, err = parseTexts("", "[bootstrap]\ndotenv_secrets = { STRIPE_KEY = [\"api.stripe.com\"] }\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Dotenv.Hosts("OTHER"); ok {
		t.Error("an unmarked key is bound without dotenv = \"placeholders\"")
	}
}
