package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/litterbox-dev/litterbox/docker"
)

// Config file names, at the repository root. ConfigFile is read from the
// commit the sandbox is made from; LocalConfigFile, git-ignored by the user,
// from the working tree, and merged over it.
const (
	ConfigFile      = ".litterbox.toml"
	LocalConfigFile = ".litterbox.local.toml"
)

// ErrConfig is a .litterbox.toml that cannot be used. Nothing was created.
var ErrConfig = errors.New("invalid configuration")

// Restart policies of a service.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Network modes.
const (
	NetworkBridge = "bridge" // the sandbox's own bridge network (default)
	NetworkNone   = "none"   // no network at all
)

// DefaultStopTimeout is how long stop and restart wait after the stop signal
// before they kill a service, in seconds; docker stop waits as long.
const DefaultStopTimeout = 10

// Config is a repository's sandbox configuration, validated and with every
// default filled in.
type Config struct {
	// Setup is the startup command run once after the copy.
	Setup []string
	// Ports are the named container ports, sorted by name.
	Ports []Port
	// Services are the supervised services, sorted by name.
	Services []ServiceConfig
	// Network is NetworkBridge or NetworkNone.
	Network string
	// Memory, CPUs and Pids override the container's default limits when set.
	Memory string
	CPUs   string
	Pids   int
	// Sources are the files the configuration came from, for messages.
	Sources []string
}

// Port is a named container port.
type Port struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
}

// EnvName is the variable the container sees the port in: PORT_<NAME>.
func (p Port) EnvName() string {
	return "PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))
}

// ServiceConfig is one supervised service.
type ServiceConfig struct {
	Name    string
	Command []string
	// StopSignal and RestartSignal are signal names without SIG (TERM, HUP).
	// An empty RestartSignal makes restart a stop followed by a start.
	StopSignal    string
	RestartSignal string
	StopTimeout   int // seconds
	Workdir       string
	Env           map[string]string
	Restart       string // RestartNo, RestartOnFailure or RestartAlways
	Autostart     bool
}

// rawConfig is the file as written; pointers tell "absent" from "zero" so the
// local file can override single keys.
type rawConfig struct {
	Setup    []string               `toml:"setup"`
	Ports    map[string]int         `toml:"ports"`
	Services map[string]*rawService `toml:"services"`
	Limits   *rawLimits             `toml:"limits"`
	Network  *string                `toml:"network"`
}

type rawService struct {
	Command     []string          `toml:"command"`
	Signals     *rawSignals       `toml:"signals"`
	StopTimeout *int              `toml:"stop_timeout"`
	Workdir     *string           `toml:"workdir"`
	Env         map[string]string `toml:"env"`
	Restart     *string           `toml:"restart"`
	Autostart   *bool             `toml:"autostart"`
}

type rawSignals struct {
	Stop    *string `toml:"stop"`
	Restart *string `toml:"restart"`
}

type rawLimits struct {
	Memory *string  `toml:"memory"`
	CPUs   *float64 `toml:"cpus"`
	Pids   *int     `toml:"pids"`
}

// DefaultConfig is the configuration of a repository without a config file.
func DefaultConfig() *Config {
	return &Config{Setup: DefaultSetup, Network: NetworkBridge}
}

// LoadConfig reads ConfigFile from commit (what is copied into the sandbox,
// so the sandbox and its configuration always match) and LocalConfigFile from
// the working tree, merges the local file over the committed one and
// validates the result. Both files are optional. Errors wrap ErrConfig and
// name the file and line.
func (s *Service) LoadConfig(ctx context.Context, r *Repo, commit string) (*Config, error) {
	var sources []string
	base, ok, err := r.Git.FileAt(ctx, commit, ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", ConfigFile, short(commit), err)
	}
	if ok {
		sources = append(sources, ConfigFile)
	}
	if wt, err := os.ReadFile(filepath.Join(r.Root(), ConfigFile)); err == nil && (!ok || !bytes.Equal(wt, base)) {
		s.Log.Warn(fmt.Sprintf("%s in the working tree differs from the one in %s, which this sandbox holds and uses; commit your edits to use them", ConfigFile, short(commit)))
	}
	local, err := os.ReadFile(filepath.Join(r.Root(), LocalConfigFile))
	switch {
	case err == nil:
		sources = append(sources, LocalConfigFile)
	case errors.Is(err, os.ErrNotExist):
		local = nil
	default:
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	cfg, err := ParseConfig(base, local)
	if err != nil {
		return nil, err
	}
	cfg.Sources = sources
	return cfg, nil
}

// ParseConfig parses the committed file's content and the local override's
// (either may be nil), merges them and validates the result.
func ParseConfig(base, local []byte) (*Config, error) {
	var raw rawConfig
	if base != nil {
		if err := decodeConfig(ConfigFile, base, &raw); err != nil {
			return nil, err
		}
	}
	if local != nil {
		var over rawConfig
		if err := decodeConfig(LocalConfigFile, local, &over); err != nil {
			return nil, err
		}
		raw.merge(&over)
	}
	return raw.validate()
}

func decodeConfig(file string, data []byte, into *rawConfig) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(into)
	if err == nil {
		return nil
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var msgs []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d: unknown key %q", file, row, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%w: %s (see docs/config.md for the keys)", ErrConfig, strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("%w: %s:%d:%d: %s", ErrConfig, file, row, col, de.Error())
	}
	return fmt.Errorf("%w: %s: %v", ErrConfig, file, err)
}

// merge lays o over c: keys o sets win; tables merge key by key.
func (c *rawConfig) merge(o *rawConfig) {
	if o.Setup != nil {
		c.Setup = o.Setup
	}
	if o.Network != nil {
		c.Network = o.Network
	}
	for k, v := range o.Ports {
		if c.Ports == nil {
			c.Ports = map[string]int{}
		}
		c.Ports[k] = v
	}
	if o.Limits != nil {
		if c.Limits == nil {
			c.Limits = &rawLimits{}
		}
		setIf(&c.Limits.Memory, o.Limits.Memory)
		setIf(&c.Limits.CPUs, o.Limits.CPUs)
		setIf(&c.Limits.Pids, o.Limits.Pids)
	}
	for name, ov := range o.Services {
		if c.Services == nil {
			c.Services = map[string]*rawService{}
		}
		cs := c.Services[name]
		if cs == nil || ov == nil {
			c.Services[name] = ov
			continue
		}
		if ov.Command != nil {
			cs.Command = ov.Command
		}
		if ov.Signals != nil {
			if cs.Signals == nil {
				cs.Signals = &rawSignals{}
			}
			setIf(&cs.Signals.Stop, ov.Signals.Stop)
			setIf(&cs.Signals.Restart, ov.Signals.Restart)
		}
		setIf(&cs.StopTimeout, ov.StopTimeout)
		setIf(&cs.Workdir, ov.Workdir)
		setIf(&cs.Restart, ov.Restart)
		setIf(&cs.Autostart, ov.Autostart)
		for k, v := range ov.Env {
			if cs.Env == nil {
				cs.Env = map[string]string{}
			}
			cs.Env[k] = v
		}
	}
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

var (
	portNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,30}$`)
	serviceRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	memoryRE   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[bkmgBKMG]?$`)
)

// signalNames are the signals busybox kill knows by name that make sense to
// send to a service.
var signalNames = map[string]bool{
	"HUP": true, "INT": true, "QUIT": true, "KILL": true, "USR1": true, "USR2": true,
	"TERM": true, "ALRM": true, "CONT": true, "STOP": true, "TSTP": true, "WINCH": true,
	"PWR": true, "IO": true, "PIPE": true,
}

// ParseSignal turns "SIGTERM", "TERM" or "sigterm" into "TERM".
func ParseSignal(s string) (string, error) {
	n := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "SIG")
	if !signalNames[n] {
		known := make([]string, 0, len(signalNames))
		for k := range signalNames {
			known = append(known, "SIG"+k)
		}
		sort.Strings(known)
		return "", fmt.Errorf("unknown signal %q (known: %s)", s, strings.Join(known, ", "))
	}
	return n, nil
}

func (c *rawConfig) validate() (*Config, error) {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	cfg := DefaultConfig()

	if c.Setup != nil {
		if len(c.Setup) == 0 || c.Setup[0] == "" {
			bad("setup: must be a non-empty list of arguments, e.g. [\"make\", \"deps\"]; leave it out for the default")
		}
		cfg.Setup = c.Setup
	}
	if c.Network != nil {
		switch *c.Network {
		case NetworkBridge, NetworkNone:
			cfg.Network = *c.Network
		default:
			bad("network: %q is not \"bridge\" or \"none\"", *c.Network)
		}
	}

	envOf := map[string]string{}
	byPort := map[int]string{}
	for _, name := range sortedKeys(c.Ports) {
		p := Port{Name: name, ContainerPort: c.Ports[name]}
		if !portNameRE.MatchString(name) {
			bad("ports.%s: a port name is a lowercase letter then up to 30 of [a-z0-9_-]", name)
			continue
		}
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			bad("ports.%s: %d is not a port (1-65535)", name, p.ContainerPort)
			continue
		}
		if other, ok := envOf[p.EnvName()]; ok {
			bad("ports.%s: its variable %s is also that of ports.%s", name, p.EnvName(), other)
			continue
		}
		if other, ok := byPort[p.ContainerPort]; ok {
			bad("ports.%s: port %d is also ports.%s", name, p.ContainerPort, other)
			continue
		}
		envOf[p.EnvName()], byPort[p.ContainerPort] = name, name
		cfg.Ports = append(cfg.Ports, p)
	}
	if cfg.Network == NetworkNone && len(cfg.Ports) > 0 {
		bad("ports: a sandbox with network = \"none\" cannot publish ports")
	}

	if l := c.Limits; l != nil {
		if l.Memory != nil {
			if !memoryRE.MatchString(*l.Memory) {
				bad("limits.memory: %q is not a size such as \"512m\" or \"2g\"", *l.Memory)
			}
			cfg.Memory = *l.Memory
		}
		if l.CPUs != nil {
			n := *l.CPUs
			if n <= 0 {
				bad("limits.cpus: %v must be more than 0", n)
			}
			// Docker refuses more CPUs than the machine has; a config
			// shared by several machines is capped instead of failing.
			cfg.CPUs = strconv.FormatFloat(min(n, float64(runtime.NumCPU())), 'f', -1, 64)
		}
		if l.Pids != nil {
			if *l.Pids < 16 {
				bad("limits.pids: %d is too few to run anything (at least 16)", *l.Pids)
			}
			cfg.Pids = *l.Pids
		}
	}

	for _, name := range sortedKeys(c.Services) {
		rs := c.Services[name]
		key := "services." + name
		if !serviceRE.MatchString(name) {
			bad("%s: a service name is 1-63 of [a-z0-9_-], starting with a letter or digit", key)
			continue
		}
		if rs == nil {
			rs = &rawService{}
		}
		sc := ServiceConfig{Name: name, StopSignal: "TERM", StopTimeout: DefaultStopTimeout, Workdir: Workdir, Restart: RestartOnFailure}
		if len(rs.Command) == 0 || rs.Command[0] == "" {
			bad("%s.command: required, a non-empty list of arguments such as [\"httpd\", \"-f\"]", key)
		}
		sc.Command = rs.Command
		if sg := rs.Signals; sg != nil {
			if sg.Stop != nil {
				sig, err := ParseSignal(*sg.Stop)
				if err != nil {
					bad("%s.signals.stop: %v", key, err)
				}
				sc.StopSignal = sig
			}
			if sg.Restart != nil && *sg.Restart != "" {
				sig, err := ParseSignal(*sg.Restart)
				if err != nil {
					bad("%s.signals.restart: %v", key, err)
				}
				sc.RestartSignal = sig
			}
		}
		if rs.StopTimeout != nil {
			if *rs.StopTimeout < 0 || *rs.StopTimeout > 600 {
				bad("%s.stop_timeout: %d is not 0-600 seconds", key, *rs.StopTimeout)
			}
			sc.StopTimeout = *rs.StopTimeout
		}
		if rs.Workdir != nil {
			w := *rs.Workdir
			if w == "" || strings.ContainsAny(w, "\x00\n") {
				bad("%s.workdir: %q is not a directory", key, w)
			}
			if !strings.HasPrefix(w, "/") {
				w = Workdir + "/" + w
			}
			sc.Workdir = w
		}
		for _, k := range sortedKeys(rs.Env) {
			if !envNameRE.MatchString(k) {
				bad("%s.env.%s: not a variable name", key, k)
			}
		}
		sc.Env = rs.Env
		if rs.Restart != nil {
			switch *rs.Restart {
			case RestartNo, RestartOnFailure, RestartAlways:
				sc.Restart = *rs.Restart
			default:
				bad("%s.restart: %q is not \"no\", \"on-failure\" or \"always\"", key, *rs.Restart)
			}
		}
		if rs.Autostart != nil {
			sc.Autostart = *rs.Autostart
		}
		cfg.Services = append(cfg.Services, sc)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s (see docs/config.md)", ErrConfig, strings.Join(errs, "; "))
	}
	return cfg, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Service returns the named service's configuration.
func (c *Config) Service(name string) (ServiceConfig, bool) {
	for _, s := range c.Services {
		if s.Name == name {
			return s, true
		}
	}
	return ServiceConfig{}, false
}

// LabelPorts records a sandbox's named ports on its container
// ("web=8080,api=3000"), so ports can be listed without the config file.
const LabelPorts = LabelPrefix + "ports"

// apply puts the configuration's network, ports and limits on a container.
func (c *Config) apply(spec *docker.RunSpec) {
	if c.Network == NetworkNone {
		spec.Network = NetworkNone
	}
	var names []string
	for _, p := range c.Ports {
		// 127.0.0.1 only, host port chosen by docker at bind time: no
		// probe-then-bind race between sandboxes.
		spec.Ports = append(spec.Ports, fmt.Sprintf("127.0.0.1::%d/tcp", p.ContainerPort))
		spec.Env = append(spec.Env, fmt.Sprintf("%s=%d", p.EnvName(), p.ContainerPort))
		names = append(names, fmt.Sprintf("%s=%d", p.Name, p.ContainerPort))
	}
	if len(names) > 0 {
		spec.Labels[LabelPorts] = strings.Join(names, ",")
	}
	if c.Memory != "" {
		spec.Memory = c.Memory
		// The in-memory file systems are sized from the limit.
		spec.Tmpfs = tmpfsMounts(c.Memory)
	}
	if c.CPUs != "" {
		spec.CPUs = c.CPUs
	}
	if c.Pids > 0 {
		spec.PidsLimit = c.Pids
	}
}
