// Package config reads a repository's sandbox configuration: .litterbox.toml
// from a commit of the user's (or as a sandbox's record of its settings holds
// it), with .litterbox.local.toml from the working tree laid over it,
// validated, every default filled in. It knows the file format only; the
// sandbox service decides which commit's file is read, and applies the
// result.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/fsname"
	"github.com/litterbox-dev/litterbox/internal/secretdecl"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/internal/tomlkeys"
	"github.com/litterbox-dev/litterbox/sandbox/config/devcontainer"
)

// Config file names, at the repository root. File is read from a commit of
// the user's; LocalFile, git-ignored by the user, from the working tree, and
// merged over it.
const (
	File      = ".litterbox.toml"
	LocalFile = ".litterbox.local.toml"
)

// ErrInvalid is a configuration that cannot be used. Nothing was created.
var ErrInvalid = errors.New("invalid configuration")

// Workdir is the sandbox's working directory, where the repository is
// copied: relative paths in the configuration (a service's workdir) are
// taken from it.
const Workdir = "/src"

// DefaultSetup is the startup command run once after the copy when the
// configuration names none: it shows the sandbox runs commands.
var DefaultSetup = []string{"echo", "hello", "world"}

// Restart policies of a service.
const (
	RestartNo        = "no"
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
)

// Network modes.
const (
	NetworkBridge = "bridge" // a bridge it shares with no reachable neighbour (default; see provider.NetworkIsolated)
	NetworkOwn    = "own"    // a bridge network of its own: slower to make, and its DNS knows no other sandbox
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
	Services []Service
	// Network is NetworkBridge, NetworkOwn or NetworkNone.
	Network string
	// Egress is the [network] table's policy of the sandbox's gateway.
	Egress Egress
	// AllowUnisolated lets sandboxes be made on an engine that does not
	// isolate them from each other. Only LocalFile may set it: the committed
	// file is what an agent's branch can change.
	AllowUnisolated bool
	// Memory, CPUs and Pids override the container's default limits when set.
	Memory string
	CPUs   string
	Pids   int
	// Record is the most new file content a sandbox's snapshots may add to
	// the repository, a size ("1g"; "0" for no limit); "" leaves the
	// default. Only LocalFile may set it, as AllowUnisolated: it protects
	// the host's disk from the agent.
	Record string
	// Image is the image sandboxes are made from; "" leaves it to the
	// service's default. `create --image` wins over it.
	Image string
	// AgentImages are the images an agent may name in sandbox-create. Only
	// LocalFile may set it, as AllowUnisolated.
	AgentImages []string
	// Runtime is the engine's runtime sandboxes run under: "gvisor" (runsc
	// on Docker), or any name the engine offers; "" is the engine's
	// default. `create --runtime` wins over it.
	Runtime string
	// AgentBaseRefs are more refs an agent may start a sandbox from (its
	// base_ref), besides the user's branches, tags and remote-tracking
	// branches: full ref names (refs/stash), a name ending in "/" for
	// every ref under it (refs/heads/litterbox/), or path.Match patterns.
	// Only LocalFile may set it, as AllowUnisolated.
	AgentBaseRefs []string
	// BootstrapInclude are more gitignore patterns of files to copy from
	// the working tree into /src at create, beside those .worktreeinclude
	// lists; only files git ignores are copied, and never recorded. Only
	// LocalFile may set it ([bootstrap] include): what host files go into
	// a sandbox is not for a file an agent can write to decide.
	BootstrapInclude []string
	// Cache are the package caches the repository's sandboxes share
	// ([cache]: docs/config.md#shared-caches).
	Cache Cache
	// Dotenv says which values of the dotenv files copied in become
	// secrets' placeholders. Only LocalFile may set it ([bootstrap]).
	Dotenv Dotenv
	// Secrets are the credentials the sandbox's gateway adds on the way
	// out (docs/secrets.md), sorted by name: LocalFile's over the user's
	// own file's (WithLocal reads it). The committed file can declare
	// none.
	Secrets []secretdecl.Declaration
	// HostPorts is the range published ports are bound in on the host;
	// zero leaves the choice to the engine.
	HostPorts PortRange
	// Idle is how long a sandbox may go without activity before it is
	// paused (DefaultIdle; 0: never). `create --idle` wins over it.
	Idle time.Duration
	// Sources are the files the configuration came from, for messages.
	Sources []string
	// Env is the container's environment a devcontainer.json gave
	// (containerEnv), besides litterbox's own variables.
	Env map[string]string
	// DevContainer is the devcontainer.json the configuration took its
	// image, setup, ports and environment from (UseDevContainer), with
	// what it ignored; nil when none was used.
	DevContainer *devcontainer.File
	// Committed is File as it was read (from a commit, or from the
	// record of a sandbox's settings); nil when there was none. The
	// sandbox service records it, so a fork is made as its source was.
	Committed []byte
}

// PortRange is an inclusive range of host ports; the zero value is none.
type PortRange struct {
	First, Last int
}

// String is the range as written: "20000-20010".
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Port is a named container port.
type Port struct {
	Name          string `json:"name"`
	ContainerPort int    `json:"containerPort"`
}

// EnvName is the variable the container sees the port in: PORT_<NAME>.
func (p Port) EnvName() string {
	return "PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))
}

// Service is one supervised service.
type Service struct {
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
	Setup []string `toml:"setup"`
	// Ports are the named ports, and the host port range under the
	// reserved name "range".
	Ports    map[string]rawPort     `toml:"ports"`
	Services map[string]*rawService `toml:"services"`
	// Container holds the other spelling of services,
	// [container.services.NAME]; Parse moves them into Services.
	Container *rawContainer `toml:"container"`
	Limits    *rawLimits    `toml:"limits"`
	// Network is `network = "none"` or a [network] table; splitNetwork
	// reads it into NetworkMode and Egress.
	Network     any `toml:"network"`
	NetworkMode *string
	Egress      *rawEgress
	Image       *string `toml:"image"`
	Runtime     *string `toml:"runtime"`
	Idle        *string `toml:"idle"`
	// AgentImages: see Config.AgentImages.
	AgentImages []string `toml:"agent_images"`
	// Secrets is read by secretdecl (Parse), not here: the decoder only
	// takes the table.
	Secrets any `toml:"secrets"`
	// AgentBaseRefs: see Config.AgentBaseRefs.
	AgentBaseRefs []string `toml:"agent_base_refs"`
	// Cache: see Config.Cache.
	Cache *rawCache `toml:"cache"`
	// Bootstrap: see Config.BootstrapInclude.
	Bootstrap *rawBootstrap `toml:"bootstrap"`
	// AllowUnisolated: see Config.AllowUnisolated.
	AllowUnisolated *bool `toml:"allow_unisolated"`

	// where is the file and line each key was set at, by its dotted name
	// (services spelled [container.services.NAME] included), for messages; spelled
	// maps a service name to the table it was written in.
	where   map[string]string
	spelled map[string]string
}

type rawContainer struct {
	Services map[string]*rawService `toml:"services"`
}

// rangeKey is the reserved name in [ports] of the host port range.
const rangeKey = "range"

// rawPort is a value in [ports] as written: an integer (a named port) or,
// for rangeKey, a string. It takes any value, so a wrong one is reported
// by validate with its line, rather than by the decoder without it.
type rawPort struct{ raw string }

// UnmarshalTOML keeps the value's TOML text.
func (p *rawPort) UnmarshalTOML(b []byte) error {
	p.raw = strings.TrimSpace(string(b))
	return nil
}

// int is the value as a port number.
func (p rawPort) int() (int, bool) {
	n, err := strconv.Atoi(strings.ReplaceAll(p.raw, "_", ""))
	return n, err == nil
}

// string is the value as a TOML string.
func (p rawPort) string() (string, bool) {
	var v struct {
		S *string `toml:"s"`
	}
	if toml.Unmarshal([]byte("s = "+p.raw), &v) != nil || v.S == nil {
		return "", false
	}
	return *v.S, true
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

type rawCache struct {
	Use  []string `toml:"use"`
	Mode *string  `toml:"mode"`
}

// Cache names the package caches a repository's sandboxes share: each is
// an engine volume of the repository, mounted into each of its sandboxes
// (package cache).
type Cache struct {
	// Use are presets by name (CachePresets) or absolute paths in the
	// sandbox.
	Use []string
	// ReadOnly ([cache] mode = "ro"): sandboxes mount them read-only; only
	// `litterbox cache fill`'s setup writes them.
	ReadOnly bool
}

// CachePresets are the caches [cache] use names.
var CachePresets = []string{"cargo", "go", "npm", "pip"}

type rawBootstrap struct {
	Include       []string            `toml:"include"`
	Dotenv        *string             `toml:"dotenv"`
	DotenvHosts   []string            `toml:"dotenv_hosts"`
	DotenvSecrets map[string][]string `toml:"dotenv_secrets"`
}

// Dotenv says which values of the dotenv files a sandbox gets copied in
// (.env, .env.*: [bootstrap]) become secrets (docs/secrets.md): the
// sandbox's copy holds a placeholder, and its gateway adds the value on
// the way to the hosts it is bound to.
type Dotenv struct {
	// All: every value ([bootstrap] dotenv = "placeholders"), bound to
	// AllHosts (dotenv_hosts).
	All      bool
	AllHosts []string
	// Keys are the keys marked one by one (dotenv_secrets), each with
	// the hosts its value may go to; they win over All's hosts.
	Keys map[string][]string
	// Where is where it is set, for messages.
	Where string
}

// Dotenv modes ([bootstrap] dotenv).
const (
	DotenvCopy         = "copy"
	DotenvPlaceholders = "placeholders"
)

// Hosts are the hosts key's value is bound to; false for a key whose
// value is copied as it is.
func (d Dotenv) Hosts(key string) ([]string, bool) {
	if h, ok := d.Keys[key]; ok {
		return h, true
	}
	return d.AllHosts, d.All
}

// Marks says whether any value becomes a placeholder.
func (d Dotenv) Marks() bool { return d.All || len(d.Keys) > 0 }

type rawLimits struct {
	Memory *string  `toml:"memory"`
	CPUs   *float64 `toml:"cpus"`
	Pids   *int     `toml:"pids"`
	Record *string  `toml:"record"`
}

// Default is the configuration of a repository without a config file.
func Default() *Config {
	return &Config{Setup: DefaultSetup, Network: NetworkBridge, Egress: Egress{Registries: true}, Idle: DefaultIdle}
}

// TrackedLocalWarning says why a LocalFile git tracks (as name: LocalFile,
// or a name that is the same file on a case-insensitive file system) is not
// read, and what to do. Local settings decide what agents may do
// (agent_images, allow_unisolated), so they come only from a file the user
// wrote: one git tracks came with a commit, which may be a sandbox's,
// merged by hand.
func TrackedLocalWarning(name string) string {
	if name == LocalFile {
		return LocalFile + " is tracked by git, so it is not read: it came with a commit, perhaps an agent's (merged from a sandbox's branch), and local settings come only from a file you wrote. " +
			"Read it; if it is yours, stop tracking it (`git rm --cached " + LocalFile + "`, and list it in .gitignore)."
	}
	q := termtext.Quote(name)
	return q + " is tracked by git, and on a case-insensitive file system it is " + LocalFile + ", so that file is not read: " + q + " came with a commit, perhaps an agent's (merged from a sandbox's branch), and local settings come only from a file you wrote. " +
		"Read it, then remove it (`git rm " + q + "`) and commit."
}

// IsLocalFile reports whether the path p is LocalFile, or the same file on
// a case- or normalisation-insensitive file system (fsname.Same).
func IsLocalFile(p string) bool { return fsname.Same(p, LocalFile) }

// IsFile reports whether the path p is File, or the same file on a case- or
// normalisation-insensitive file system.
func IsFile(p string) bool { return fsname.Same(p, File) }

// Load reads File from commit, a commit of the user's (the sandbox service
// decides which: never one an agent wrote), and LocalFile from the working
// tree of g (unless git tracks it: then warn is told, and it is left out),
// merges the local file over the committed one and validates the result.
// Both files are optional. Errors wrap ErrInvalid and name the file and
// line. warn is told when the working tree's File differs from the
// commit's.
func Load(ctx context.Context, g *git.Repo, commit string, warn func(string)) (*Config, error) {
	// File and the devcontainer.json, in one git call.
	fs, err := g.FilesAt(ctx, commit, Files()...)
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", File, short(commit), err)
	}
	return LoadFiles(ctx, g, commit, fs, warn)
}

// Files are the files Load reads from a commit, in the order LoadFiles
// takes what git read of them: File, then the devcontainer.json.
func Files() []string { return append([]string{File}, devcontainer.Files...) }

// LoadFiles is Load of fs, what git read of Files at commit (a create
// reads them in the git call that reads HEAD: git.HeadFiles).
func LoadFiles(ctx context.Context, g *git.Repo, commit string, fs []git.FileContent, warn func(string)) (*Config, error) {
	if err := fs[0].Err; err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", File, short(commit), err)
	}
	base, ok := fs[0].Content, fs[0].OK
	if !ok {
		base = nil
	} else if base == nil {
		base = []byte{}
	}
	if wt, err := os.ReadFile(filepath.Join(g.Root, File)); err == nil && (!ok || !bytes.Equal(wt, base)) {
		warn(fmt.Sprintf("%s in the working tree differs from the one in %s, which this sandbox holds and uses; commit your edits to use them", File, short(commit)))
	}
	cfg, err := WithLocal(ctx, g, base, warn)
	if err != nil {
		return nil, err
	}
	if err := cfg.UseDevContainer(commit, fs[1:]); err != nil {
		return nil, err
	}
	return cfg, nil
}

// WithLocal is the configuration of committed, File's content (nil when
// there is none), with LocalFile from the working tree of g merged over it
// (unless git tracks it: then warn is told, and it is left out), validated.
func WithLocal(ctx context.Context, g *git.Repo, committed []byte, warn func(string)) (*Config, error) {
	var sources []string
	if committed != nil {
		sources = append(sources, File)
	}
	local, err := readLocal(ctx, g, warn)
	if err != nil {
		return nil, err
	}
	if local != nil {
		sources = append(sources, LocalFile)
	}
	cfg, err := Parse(committed, local)
	if err != nil {
		return nil, err
	}
	user, err := secretdecl.LoadUser()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	cfg.Secrets = secretdecl.Merge(user, cfg.Secrets)
	cfg.Sources = sources
	cfg.Committed = committed
	return cfg, nil
}

// Local is the configuration LocalFile alone gives (the settings only the
// user may write, such as AgentBaseRefs), validated; as WithLocal, a
// tracked LocalFile is left out.
func Local(ctx context.Context, g *git.Repo, warn func(string)) (*Config, error) {
	local, err := readLocal(ctx, g, warn)
	if err != nil {
		return nil, err
	}
	return Parse(nil, local)
}

// readLocal reads LocalFile from the working tree of g; nil when there is
// none, or when git tracks it (warn says so).
func readLocal(ctx context.Context, g *git.Repo, warn func(string)) ([]byte, error) {
	local, err := os.ReadFile(filepath.Join(g.Root, LocalFile))
	switch {
	case err == nil:
		name, tracked, err := g.Tracked(ctx, LocalFile)
		if err != nil {
			return nil, fmt.Errorf("ask git whether it tracks %s: %w", LocalFile, err)
		}
		if tracked {
			warn(TrackedLocalWarning(name))
			return nil, nil
		}
		if local == nil {
			local = []byte{}
		}
		return local, nil
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Parse parses the committed file's content and the local override's
// (either may be nil), merges them and validates the result.
func Parse(base, local []byte) (*Config, error) {
	raw := rawConfig{where: map[string]string{}, spelled: map[string]string{}}
	if base != nil {
		if err := decodeConfig(File, base, &raw); err != nil {
			return nil, err
		}
		if err := secretdecl.CheckCommitted(File, base); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if raw.AllowUnisolated != nil {
			return nil, fmt.Errorf("%w: %s%s: allow_unisolated can only be set in %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/config.md)", ErrInvalid, raw.at("allow_unisolated"), File, LocalFile)
		}
		if raw.AgentImages != nil {
			return nil, fmt.Errorf("%w: %sagent_images can only be set in %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/config.md)", ErrInvalid, raw.at("agent_images"), LocalFile)
		}
		if raw.AgentBaseRefs != nil {
			return nil, fmt.Errorf("%w: %sagent_base_refs can only be set in %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/config.md)", ErrInvalid, raw.at("agent_base_refs"), LocalFile)
		}
		if raw.Bootstrap != nil {
			return nil, fmt.Errorf("%w: %s[bootstrap] can only be set in %s: the committed file comes with the code a sandbox holds, which an agent can change, and must not decide which of your files go into a sandbox (see docs/config.md)", ErrInvalid, raw.at("bootstrap"), LocalFile)
		}
		if raw.Limits != nil && raw.Limits.Record != nil {
			return nil, fmt.Errorf("%w: %slimits.record can only be set in %s: the committed file comes with the code a sandbox holds, which an agent can change (see docs/config.md)", ErrInvalid, raw.at("limits.record"), LocalFile)
		}
	}
	if local != nil {
		over := rawConfig{where: map[string]string{}, spelled: map[string]string{}}
		if err := decodeConfig(LocalFile, local, &over); err != nil {
			return nil, err
		}
		raw.merge(&over)
	}
	cfg, err := raw.validate()
	if err != nil || local == nil {
		return cfg, err
	}
	if cfg.Secrets, err = secretdecl.Parse(LocalFile, local); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return cfg, nil
}

// at is where key was set, "FILE:LINE: ": for a key that is missing, where
// its table is; "" when unknown.
func (c *rawConfig) at(key string) string {
	for k := key; k != ""; {
		if w, ok := c.where[k]; ok {
			return w + ": "
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return ""
}

// serviceKey is how the file names service name's table: services.NAME,
// or container.services.NAME in the other spelling.
func (c *rawConfig) serviceKey(name string) string {
	if p, ok := c.spelled[name]; ok {
		return p + name
	}
	return "services." + name
}

func decodeConfig(file string, data []byte, into *rawConfig) error {
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.EnableUnmarshalerInterface()
	err := dec.Decode(into)
	if err == nil {
		for k, line := range keyLines(data) {
			into.where[k] = fmt.Sprintf("%s:%d", file, line)
		}
		if err := into.splitNetwork(file); err != nil {
			return err
		}
		return into.moveContainerServices(file)
	}
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var msgs []string
		for _, e := range strict.Errors {
			row, _ := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d: unknown key %q", file, row, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%w: %s (see docs/config.md for the keys)", ErrInvalid, strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("%w: %s:%d:%d: %s", ErrInvalid, file, row, col, de.Error())
	}
	return fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
}

// moveContainerServices moves the services spelled [container.services.NAME]
// into Services, where they are validated and merged as any
// other. A service written both ways in one file is refused: which of the
// two is meant cannot be guessed.
func (c *rawConfig) moveContainerServices(file string) error {
	if c.Container == nil {
		return nil
	}
	for name, rs := range c.Container.Services {
		if _, ok := c.Services[name]; ok {
			return fmt.Errorf("%w: %s: service %q is written both as [services.%s] (%s) and as [container.services.%s] (%s): keep one (see docs/config.md)",
				ErrInvalid, file, name, name, c.where["services."+name], name, c.where["container.services."+name])
		}
		if c.Services == nil {
			c.Services = map[string]*rawService{}
		}
		c.Services[name] = rs
		c.spelled[name] = "container.services."
	}
	c.Container = nil
	return nil
}

// merge lays o over c: keys o sets win; tables merge key by key. Where o
// set a key is where it is now set.
func (c *rawConfig) merge(o *rawConfig) {
	maps.Copy(c.where, o.where)
	maps.Copy(c.spelled, o.spelled)
	if o.Setup != nil {
		c.Setup = o.Setup
	}
	setIf(&c.NetworkMode, o.NetworkMode)
	c.Egress = mergeEgress(c.Egress, o.Egress)
	setIf(&c.Image, o.Image)
	setIf(&c.Runtime, o.Runtime)
	setIf(&c.Idle, o.Idle)
	if o.AgentBaseRefs != nil {
		c.AgentBaseRefs = o.AgentBaseRefs
	}
	if o.AgentImages != nil {
		c.AgentImages = o.AgentImages
	}
	setIf(&c.Bootstrap, o.Bootstrap)
	if o.Cache != nil {
		if c.Cache == nil {
			c.Cache = &rawCache{}
		}
		if o.Cache.Use != nil {
			c.Cache.Use = o.Cache.Use
		}
		setIf(&c.Cache.Mode, o.Cache.Mode)
	}
	setIf(&c.AllowUnisolated, o.AllowUnisolated)
	for k, v := range o.Ports {
		if c.Ports == nil {
			c.Ports = map[string]rawPort{}
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
		setIf(&c.Limits.Record, o.Limits.Record)
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
	portNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,30}$`) })
	serviceRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })
	envNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	memoryRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[bkmgBKMG]?$`) })
	// imageRE is docker's image reference, loosely: name components, an
	// optional registry with a port, a tag and a digest; nothing that could
	// pass for an option or hold a space.
	imageRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._/:@-]{0,254}$`) })
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
	// bad reports a problem with key, after the file and line that set it.
	bad := func(key, format string, args ...any) {
		errs = append(errs, c.at(key)+key+": "+fmt.Sprintf(format, args...))
	}
	cfg := Default()

	if c.Setup != nil {
		if len(c.Setup) == 0 || c.Setup[0] == "" {
			bad("setup", "must be a non-empty list of arguments, e.g. [\"make\", \"deps\"]; leave it out for the default")
		}
		if hasNUL(c.Setup) {
			bad("setup", "an argument holds a NUL character, which no command line can")
		}
		cfg.Setup = c.Setup
	}
	if c.AllowUnisolated != nil {
		cfg.AllowUnisolated = *c.AllowUnisolated
	}
	if c.NetworkMode != nil {
		key := "network"
		if _, ok := c.where["network.mode"]; ok {
			key = "network.mode"
		}
		switch *c.NetworkMode {
		case NetworkBridge, NetworkOwn, NetworkNone:
			cfg.Network = *c.NetworkMode
		default:
			bad(key, "%q is not \"bridge\", \"own\" or \"none\"", *c.NetworkMode)
		}
	}
	c.validateEgress(cfg, bad)
	if c.Image != nil {
		if !imageRE().MatchString(*c.Image) {
			bad("image", "%q is not an image reference such as \"busybox:latest\" or \"registry.example/team/app:1.2\"", *c.Image)
		}
		cfg.Image = *c.Image
	}
	if c.Runtime != nil {
		if !ValidRuntime(*c.Runtime) {
			bad("runtime", "%q is not a runtime name such as \"gvisor\" or \"runsc\" (letters, digits, '.', '_' and '-'); leave it out for the engine's default", *c.Runtime)
		}
		cfg.Runtime = *c.Runtime
	}
	if c.Idle != nil {
		d, err := ParseIdle(*c.Idle)
		if err != nil {
			bad("idle", "%s", err)
		}
		cfg.Idle = d
	}
	for _, im := range c.AgentImages {
		if !imageRE().MatchString(im) {
			bad("agent_images", "%q is not an image reference", im)
		}
	}
	cfg.AgentImages = c.AgentImages
	for _, ref := range c.AgentBaseRefs {
		if _, err := path.Match(ref, ""); err != nil || !strings.HasPrefix(ref, "refs/") || strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			bad("agent_base_refs", "%q is not a full ref name or pattern such as \"refs/heads/litterbox/\" or \"refs/heads/team/*\"", ref)
		}
	}
	cfg.AgentBaseRefs = c.AgentBaseRefs
	if c.Cache != nil {
		cfg.Cache = c.Cache.check(bad)
	}
	if c.Bootstrap != nil {
		for _, p := range c.Bootstrap.Include {
			if p == "" || strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
				bad("bootstrap.include", "%q is not a gitignore pattern such as \".env\" or \"config/*.local\"", p)
			}
		}
		cfg.BootstrapInclude = c.Bootstrap.Include
		cfg.Dotenv = c.Bootstrap.dotenv(c.at("bootstrap"), bad)
	}

	envOf := map[string]string{}
	byPort := map[int]string{}
	for _, name := range slices.Sorted(maps.Keys(c.Ports)) {
		key := "ports." + name
		if name == rangeKey {
			v, ok := c.Ports[name].string()
			if !ok {
				bad(key, "%s is not a range of host ports such as \"20000-20010\" (the name %q is reserved for it)", c.Ports[name].raw, rangeKey)
				continue
			}
			r, err := ParsePortRange(v)
			if err != nil {
				bad(key, "%v", err)
				continue
			}
			cfg.HostPorts = r
			continue
		}
		n, ok := c.Ports[name].int()
		if !ok {
			bad(key, "%s is not a port number (an integer, 1-65535)", c.Ports[name].raw)
			continue
		}
		p := Port{Name: name, ContainerPort: n}
		if !portNameRE().MatchString(name) {
			bad(key, "a port name is a lowercase letter then up to 30 of [a-z0-9_-]")
			continue
		}
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			bad(key, "%d is not a port (1-65535)", p.ContainerPort)
			continue
		}
		if other, ok := envOf[p.EnvName()]; ok {
			bad(key, "its variable %s is also that of ports.%s", p.EnvName(), other)
			continue
		}
		if other, ok := byPort[p.ContainerPort]; ok {
			bad(key, "port %d is also ports.%s", p.ContainerPort, other)
			continue
		}
		envOf[p.EnvName()], byPort[p.ContainerPort] = name, name
		cfg.Ports = append(cfg.Ports, p)
	}
	if cfg.Network == NetworkNone && len(cfg.Ports) > 0 {
		bad("ports", "a sandbox with network = \"none\" cannot publish ports")
	}

	if l := c.Limits; l != nil {
		if l.Memory != nil {
			if !memoryRE().MatchString(*l.Memory) {
				bad("limits.memory", "%q is not a size such as \"512m\" or \"2g\"", *l.Memory)
			}
			cfg.Memory = *l.Memory
		}
		if l.CPUs != nil {
			n := *l.CPUs
			if !(n > 0) { // NaN too
				bad("limits.cpus", "%v must be more than 0", n)
			}
			// Docker refuses more CPUs than the machine has; a config
			// shared by several machines is capped instead of failing.
			cfg.CPUs = strconv.FormatFloat(min(n, float64(runtime.NumCPU())), 'f', -1, 64)
		}
		if l.Pids != nil {
			if *l.Pids < 16 {
				bad("limits.pids", "%d is too few to run anything (at least 16)", *l.Pids)
			}
			cfg.Pids = *l.Pids
		}
		if l.Record != nil {
			if !memoryRE().MatchString(*l.Record) {
				bad("limits.record", "%q is not a size such as \"500m\" or \"2g\" (\"0\" for no limit)", *l.Record)
			}
			cfg.Record = *l.Record
		}
	}

	for _, name := range slices.Sorted(maps.Keys(c.Services)) {
		rs := c.Services[name]
		key := c.serviceKey(name)
		if !serviceRE().MatchString(name) {
			bad(key, "a service name is 1-63 of [a-z0-9_-], starting with a letter or digit")
			continue
		}
		if rs == nil {
			rs = &rawService{}
		}
		sc := Service{Name: name, StopSignal: "TERM", StopTimeout: DefaultStopTimeout, Workdir: Workdir, Restart: RestartOnFailure}
		if len(rs.Command) == 0 || rs.Command[0] == "" {
			bad(key+".command", "required, a non-empty list of arguments such as [\"httpd\", \"-f\"]")
		}
		if hasNUL(rs.Command) {
			bad(key+".command", "an argument holds a NUL character, which no command line can")
		}
		sc.Command = rs.Command
		if sg := rs.Signals; sg != nil {
			if sg.Stop != nil {
				sig, err := ParseSignal(*sg.Stop)
				if err != nil {
					bad(key+".signals.stop", "%v", err)
				}
				sc.StopSignal = sig
			}
			if sg.Restart != nil && *sg.Restart != "" {
				sig, err := ParseSignal(*sg.Restart)
				if err != nil {
					bad(key+".signals.restart", "%v", err)
				}
				sc.RestartSignal = sig
			}
		}
		if rs.StopTimeout != nil {
			if *rs.StopTimeout < 0 || *rs.StopTimeout > 600 {
				bad(key+".stop_timeout", "%d is not 0-600 seconds", *rs.StopTimeout)
			}
			sc.StopTimeout = *rs.StopTimeout
		}
		if rs.Workdir != nil {
			w := *rs.Workdir
			if w == "" || strings.ContainsAny(w, "\x00\n") {
				bad(key+".workdir", "%q is not a directory", w)
			}
			if !strings.HasPrefix(w, "/") {
				w = Workdir + "/" + w
			}
			sc.Workdir = w
		}
		for _, k := range slices.Sorted(maps.Keys(rs.Env)) {
			if !envNameRE().MatchString(k) {
				bad(key+".env."+k, "not a variable name")
			}
			if strings.ContainsRune(rs.Env[k], 0) {
				bad(key+".env."+k, "the value holds a NUL character, which no environment can")
			}
		}
		sc.Env = rs.Env
		if rs.Restart != nil {
			switch *rs.Restart {
			case RestartNo, RestartOnFailure, RestartAlways:
				sc.Restart = *rs.Restart
			default:
				bad(key+".restart", "%q is not \"no\", \"on-failure\" or \"always\"", *rs.Restart)
			}
		}
		if rs.Autostart != nil {
			sc.Autostart = *rs.Autostart
		}
		cfg.Services = append(cfg.Services, sc)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s (see docs/config.md)", ErrInvalid, strings.Join(errs, "; "))
	}
	return cfg, nil
}

// ParsePortRange reads a range of host ports, "20000-20010" (or one port,
// "20000").
func ParsePortRange(s string) (PortRange, error) {
	a, b, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		b = a
	}
	first, err1 := strconv.Atoi(strings.TrimSpace(a))
	last, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return PortRange{}, fmt.Errorf("%q is not a range of host ports such as \"20000-20010\"", s)
	case first < 1024 || last > 65535:
		return PortRange{}, fmt.Errorf("%q: host ports are 1024-65535 (lower ones need privileges)", s)
	case first > last:
		return PortRange{}, fmt.Errorf("%q: the first port is above the last", s)
	}
	return PortRange{First: first, Last: last}, nil
}

// keyLines maps each key of a TOML document to the line that sets it, by
// its dotted name; tables map to their header's line.
func keyLines(data []byte) map[string]int { return tomlkeys.Lines(data) }

func hasNUL(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return strings.ContainsRune(a, 0) })
}

// DefaultIdle is how long a sandbox may go without activity before it is
// paused, when neither the configuration nor create says.
const DefaultIdle = 15 * time.Minute

// ParseIdle reads an idle time as `idle` and `create --idle` take it: a
// duration such as "15m" or "1h30m", or "0" for never.
func ParseIdle(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as \"15m\" or \"1h\" (\"0\" never pauses an idle sandbox)", s)
	}
	return d, nil
}

// ValidRuntime reports whether s reads as a runtime's name: a Docker
// runtime ("runsc", "io.containerd.runc.v2") or a Kubernetes RuntimeClass.
func ValidRuntime(s string) bool { return runtimeRE().MatchString(s) }

// runtimeRE is a runtime's name.
var runtimeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`) })

// ValidImage reports whether s reads as an image reference.
func ValidImage(s string) bool { return imageRE().MatchString(s) }

// ValidServiceName reports whether name can name a service.
func ValidServiceName(name string) bool { return serviceRE().MatchString(name) }

// Service returns the named service's configuration.
func (c *Config) Service(name string) (Service, bool) {
	for _, s := range c.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}

// Bytes reads a size as the configuration gives it (memory, record:
// "512m", "1.5g", "1048576"); 0 when it is 0 or does not parse.
func Bytes(s string) int64 {
	unit := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			unit = 1 << 10
		case 'm', 'M':
			unit = 1 << 20
		case 'g', 'G':
			unit = 1 << 30
		}
	}
	s = strings.TrimRight(s, "bBkKmMgG")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0
	}
	return int64(f * float64(unit))
}

// dotenv checks [bootstrap]'s dotenv keys; where is where the table is.
func (b *rawBootstrap) dotenv(where string, bad func(key, format string, args ...any)) Dotenv {
	d := Dotenv{Keys: map[string][]string{}, Where: strings.TrimSuffix(where, ": ")}
	hosts := func(key string, list []string) []string {
		for _, h := range list {
			if _, err := policy.ParseEntry(h); err != nil {
				bad(key, "%v (hosts are entries as [network] allow takes them: \"api.stripe.com\", \"*.example.org\", \"git.example.net:8443\")", err)
			}
		}
		return list
	}
	mode := DotenvCopy
	if b.Dotenv != nil {
		mode = *b.Dotenv
	}
	switch mode {
	case DotenvCopy:
		if len(b.DotenvHosts) > 0 {
			bad("bootstrap.dotenv_hosts", "dotenv_hosts binds every value of the dotenv files copied in, which needs dotenv = %q", DotenvPlaceholders)
		}
	case DotenvPlaceholders:
		if len(b.DotenvHosts) == 0 {
			bad("bootstrap.dotenv", "dotenv = %q needs dotenv_hosts, the hosts the values may go to: dotenv_hosts = [\"api.example.com\"] (see docs/secrets.md)", DotenvPlaceholders)
		}
		d.All, d.AllHosts = true, hosts("bootstrap.dotenv_hosts", b.DotenvHosts)
	default:
		bad("bootstrap.dotenv", "%q is not %q (values copied as they are) or %q (every value a placeholder: see docs/secrets.md)", mode, DotenvCopy, DotenvPlaceholders)
	}
	for _, k := range slices.Sorted(maps.Keys(b.DotenvSecrets)) {
		key := "bootstrap.dotenv_secrets." + k
		if !dotenvKeyRE().MatchString(k) {
			bad(key, "%q is not a variable name of a dotenv file", k)
		}
		if len(b.DotenvSecrets[k]) == 0 {
			bad(key, "no hosts: the value of %s goes only to the hosts it is bound to, %s = [\"api.example.com\"]", k, k)
		}
		d.Keys[k] = hosts(key, b.DotenvSecrets[k])
	}
	return d
}

var dotenvKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`) })

// check checks [cache].
func (c *rawCache) check(bad func(key, format string, args ...any)) Cache {
	seen := map[string]bool{}
	for _, u := range c.Use {
		switch {
		case slices.Contains(CachePresets, u):
		case !path.IsAbs(u) || path.Clean(u) != u || strings.ContainsAny(u, ",\"\n") || u == "/":
			bad("cache.use", "%q is neither a cache litterbox knows (%s) nor a clean absolute path in the sandbox such as \"/home/dev/.m2\"", u, strings.Join(CachePresets, ", "))
		case u == Workdir || strings.HasPrefix(u, Workdir+"/") || u == "/tmp" || slices.ContainsFunc([]string{"/proc", "/sys", "/dev", "/run"}, func(p string) bool { return u == p || strings.HasPrefix(u, p+"/") }):
			bad("cache.use", "%q is where the sandbox keeps something of its own (/src, /tmp, /run, /proc, /sys, /dev): choose another path", u)
		}
		if seen[u] {
			bad("cache.use", "%q is named twice", u)
		}
		seen[u] = true
	}
	out := Cache{Use: c.Use}
	if c.Mode != nil {
		switch *c.Mode {
		case "rw":
		case "ro":
			out.ReadOnly = true
		default:
			bad("cache.mode", "%q is not \"rw\" (sandboxes fill the caches) or \"ro\" (only `litterbox cache fill` does)", *c.Mode)
		}
	}
	return out
}
