package config

import (
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// FuzzParseConfig feeds fuzzed .litterbox.toml and .litterbox.local.toml
// contents to Parse. A file it refuses is ErrInvalid (exit 2, nothing
// made); a file it accepts gives a configuration whose every value docker
// and the service supervisor can use. Merging behaves: a local file that
// repeats the committed one changes nothing, and a local file alone means
// what it means as the committed one.
func FuzzParseConfig(f *testing.F) {
	// Every configuration the end-to-end scripts use, good and bad.
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "script", "*.txtar"))
	for _, s := range scripts {
		a, err := txtar.ParseFile(s)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".toml") {
				f.Add(file.Data, []byte(nil))
			}
		}
	}
	f.Add([]byte("[limits]\ncpus = nan\n"), []byte(nil))
	f.Add([]byte("setup = [\"echo\", \"a\\u0000b\"]\n"), []byte(nil))
	f.Add([]byte("[services.web]\ncommand = [\"httpd\"]\nenv = { A = \"1\" }\n"), []byte("[services.web]\nenv = { B = \"x\\u0000\" }\n"))
	f.Add([]byte("[ports]\nweb = 8080\n"), []byte("network = \"none\"\n"))
	f.Fuzz(func(t *testing.T, base, local []byte) {
		cfg, err := Parse(base, local)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse refused the files with %v; want ErrInvalid", err)
			}
			return
		}
		checkConfig(t, cfg)
		if local == nil {
			// Nil and an empty file are the same: no override.
			if c2, err := Parse(base, []byte{}); err != nil || !reflect.DeepEqual(c2, cfg) {
				t.Errorf("with an empty local file: %+v, %v; want %+v", c2, err, cfg)
			}
			if c2, err := Parse(base, base); err != nil || !reflect.DeepEqual(c2, cfg) {
				t.Errorf("with itself as the local file: %+v, %v; want %+v", c2, err, cfg)
			}
			if c2, err := Parse(nil, base); err != nil || !reflect.DeepEqual(c2, cfg) {
				t.Errorf("as the local file alone: %+v, %v; want %+v", c2, err, cfg)
			}
		}
	})
}

// checkConfig fails t unless every value of cfg is one create can use.
func checkConfig(t *testing.T, cfg *Config) {
	t.Helper()
	argv := func(what string, args []string) {
		if len(args) == 0 || args[0] == "" {
			t.Errorf("%s %q: no program", what, args)
		}
		for _, a := range args {
			if strings.ContainsRune(a, 0) {
				t.Errorf("%s %q: an argument holds a NUL, which no argv can", what, args)
			}
		}
	}
	argv("setup", cfg.Setup)
	if cfg.Network != NetworkBridge && cfg.Network != NetworkOwn && cfg.Network != NetworkNone {
		t.Errorf("network %q", cfg.Network)
	}
	if !slices.IsSortedFunc(cfg.Ports, func(a, b Port) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("ports not sorted by name: %+v", cfg.Ports)
	}
	ports, envs := map[int]bool{}, map[string]bool{}
	for _, p := range cfg.Ports {
		if !portNameRE().MatchString(p.Name) || p.ContainerPort < 1 || p.ContainerPort > 65535 || ports[p.ContainerPort] || envs[p.EnvName()] {
			t.Errorf("port %+v: bad name or number, or used twice", p)
		}
		ports[p.ContainerPort], envs[p.EnvName()] = true, true
	}
	if cfg.Network == NetworkNone && len(cfg.Ports) > 0 {
		t.Errorf("ports %+v on network none", cfg.Ports)
	}
	if cfg.Memory != "" && !memoryRE().MatchString(cfg.Memory) {
		t.Errorf("memory %q", cfg.Memory)
	}
	if cfg.CPUs != "" {
		if n, err := strconv.ParseFloat(cfg.CPUs, 64); err != nil || !(n > 0) || math.IsInf(n, 0) {
			t.Errorf("cpus %q is not a number of CPUs docker takes", cfg.CPUs)
		}
	}
	if cfg.Pids != 0 && cfg.Pids < 16 {
		t.Errorf("pids %d", cfg.Pids)
	}
	if !slices.IsSortedFunc(cfg.Services, func(a, b Service) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("services not sorted by name")
	}
	for _, s := range cfg.Services {
		if !serviceRE().MatchString(s.Name) {
			t.Errorf("service name %q", s.Name)
		}
		argv("services."+s.Name+".command", s.Command)
		if !signalNames[s.StopSignal] || s.RestartSignal != "" && !signalNames[s.RestartSignal] {
			t.Errorf("service %s signals %q %q", s.Name, s.StopSignal, s.RestartSignal)
		}
		if s.StopTimeout < 0 || s.StopTimeout > 600 {
			t.Errorf("service %s stop_timeout %d", s.Name, s.StopTimeout)
		}
		if !strings.HasPrefix(s.Workdir, "/") || strings.ContainsAny(s.Workdir, "\x00\n") {
			t.Errorf("service %s workdir %q", s.Name, s.Workdir)
		}
		for k, v := range s.Env {
			if !envNameRE().MatchString(k) || strings.ContainsRune(v, 0) {
				t.Errorf("service %s env %q=%q: bad name, or a NUL no environment can hold", s.Name, k, v)
			}
		}
		switch s.Restart {
		case RestartNo, RestartOnFailure, RestartAlways:
		default:
			t.Errorf("service %s restart %q", s.Name, s.Restart)
		}
	}
}
