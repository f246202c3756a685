package docker

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// Provider runs sandboxes as containers through the docker CLI. A sandbox is
// a container and, unless it has no network, a bridge network of the same
// name made for it alone, both carrying the spec's labels.
type Provider struct {
	c *Client

	netnsOnce sync.Once
	netns     string // see socketNetns

	// offered holds the runtimes a create found the engine offers, so
	// each is asked about once; hostUDS, by the engine's name, whether
	// each of those lets a container use the host's unix sockets
	// (HostSockets), learnt from the same answer.
	offered sync.Map
	hostUDS sync.Map
}

var _ provider.Provider = (*Provider)(nil)

// Options configure New.
type Options struct {
	// Engine is EngineDocker (the default) or EnginePodman.
	Engine string
	// Host is the engine's endpoint for the CLI's --host. Empty means, for
	// Docker, wherever the CLI points (DOCKER_HOST, DOCKER_CONTEXT, its
	// current context), and for Podman PodmanSocket().
	Host string
	// Runner runs the commands.
	Runner runner.Runner
	// SSHConfig, for an ssh endpoint, is the ssh client configuration file
	// every ssh command reads (-F) instead of the user's: the VM engine
	// (provider/vm) names its VM's address, key and host key there.
	SSHConfig string
	// SSHConnectTimeout bounds how long ssh waits for the endpoint's host to
	// connect and send its banner: 15 s when zero. The VM engine gives its
	// VM longer: an emulated VM's sshd on a loaded machine answered after
	// more than 15 s.
	SSHConnectTimeout time.Duration
}

// New returns the provider o describes.
func New(o Options) (*Provider, error) {
	c := &Client{R: o.Runner, Host: o.Host}
	switch o.Engine {
	case "", EngineDocker:
		c.Dialect = DockerDialect
	case EnginePodman:
		c.Dialect = PodmanDialect
		if c.Host == "" {
			c.Host = PodmanSocket()
		}
	default:
		return nil, fmt.Errorf("unknown engine %q: litterbox runs sandboxes on docker or podman", o.Engine)
	}
	c.ep = ResolveEndpoint(c.Host)
	if c.ep.Scheme() == "ssh" {
		t, err := newSSHTunnel(c.ep, o.Runner, o.SSHConfig, cmp.Or(o.SSHConnectTimeout, 15*time.Second))
		if err != nil {
			return nil, err
		}
		c.tunnel, c.Host = t, t.Host()
	}
	return &Provider{c: c}, nil
}

// Client is the provider's docker client, for the few callers (benchmarks)
// that build the same argv themselves.
func (p *Provider) Client() *Client { return p.c }

// PodmanSocket is where Podman's API is looked for: CONTAINER_HOST (Podman's
// own variable), else the rootful socket when it exists, else the user's.
func PodmanSocket() string {
	if h := os.Getenv("CONTAINER_HOST"); h != "" {
		return h
	}
	const rootful = "/run/podman/podman.sock"
	if _, err := os.Stat(rootful); err == nil || os.Getenv("XDG_RUNTIME_DIR") == "" {
		return "unix://" + rootful
	}
	return "unix://" + filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "podman", "podman.sock")
}

// Info asks the engine for its version and platform, and, beside that, for
// the id of its default network, which is its Instance: Docker makes its
// "bridge" network anew, with a new random id, each time it starts (Podman's
// "podman" network keeps its id).
func (p *Provider) Info(ctx context.Context) (provider.Info, error) {
	info := provider.Info{Engine: p.c.dialect().Engine, Endpoint: p.c.endpoint(), Pause: true, PortsNote: p.portsNote()}
	var (
		instance string
		wg       sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		// An engine whose bridge cannot be listed is not told apart.
		instance, _ = p.instance(ctx)
	}()
	go func() {
		defer wg.Done()
		// An engine that cannot say reports none: the version decides.
		info.Runtimes, info.DefaultRuntime, _ = p.runtimes(ctx)
	}()
	res, err := p.c.Run(ctx, p.c.Cmd("version", "--format", "{{json .Server}}"))
	wg.Wait()
	if err != nil {
		return info, err
	}
	info.Instance = instance
	var v struct {
		Version    string
		Os         string
		Arch       string
		Components []struct{ Name string }
	}
	if err := json.Unmarshal(res.Stdout, &v); err != nil {
		return info, fmt.Errorf("parse docker version %q: %w", res.Stdout, err)
	}
	info.Version, info.OS, info.Arch = v.Version, v.Os, v.Arch
	for _, c := range v.Components {
		if strings.Contains(c.Name, "Podman") {
			info.Engine = EnginePodman
		}
	}
	return info, nil
}

// Instance is Info's Endpoint and Instance alone, in one call of Info's
// three: the engine's default bridge, which a new run of the engine makes
// anew (a new id).
func (p *Provider) Instance(ctx context.Context) (provider.Info, error) {
	info := provider.Info{Engine: p.c.dialect().Engine, Endpoint: p.c.endpoint()}
	var err error
	info.Instance, err = p.instance(ctx)
	return info, err
}

// instance names the run of the engine by its default bridge's id ("" when
// it has none).
func (p *Provider) instance(ctx context.Context) (string, error) {
	nets, err := p.c.Run(ctx, p.c.Cmd("network", "ls", "--no-trunc", "--filter", "name=bridge", "--filter", "name=podman", "--format", "{{.ID}} {{.Name}}"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(nets.Stdout), "\n") {
		if id, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && (name == "bridge" || name == "podman") {
			return name + "/" + id, nil
		}
	}
	return "", nil
}

// Create makes the sandbox's network (unless it has none), then runs its
// container. Each call runs to its end whatever ctx says: the engine may
// make the object even when the CLI is stopped, and only once the call
// returns is it known what exists. What was made is removed again when a
// step fails, or when ctx was cancelled meanwhile.
func (p *Provider) Create(ctx context.Context, s provider.Spec) (*provider.Sandbox, error) {
	switch s.Network {
	case provider.NetworkIsolated, provider.NetworkOwn, provider.NetworkNone, provider.NetworkShared:
	default:
		return nil, fmt.Errorf("create %s: network %q is not %q, %q, %q or %q", s.Name, s.Network, provider.NetworkIsolated, provider.NetworkOwn, provider.NetworkNone, provider.NetworkShared)
	}
	if _, err := RunArgs(s, p.c.dialect()); err != nil {
		return nil, fmt.Errorf("create %s: %w", s.Name, err)
	}
	rt, err := p.CheckRuntime(ctx, s.Runtime)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", s.Name, err)
	}
	s.Runtime = rt
	mk := context.WithoutCancel(ctx)
	sb := &provider.Sandbox{Name: s.Name, State: provider.StateRunning, Labels: s.Labels}
	shared := s.Network == provider.NetworkIsolated && !ownNetwork(s, p.c.dialect()) || s.Network == provider.NetworkShared
	if shared {
		sb.Network = networkOf(s, p.c.dialect())
	}
	var made provider.Made
	undo := func(cause error) error { return made.Undo(mk, cause) }

	if ownNetwork(s, p.c.dialect()) {
		id, err := p.c.NetworkCreate(mk, s.Name, s.Labels)
		switch {
		case err != nil && strings.Contains(runner.Stderr(err), "already exists"):
			return nil, provider.Errorf(provider.ErrConflict, "network %s exists already: %w", s.Name, err)
		case err != nil && strings.Contains(runner.Stderr(err), "could not find an available, non-overlapping IPv4 address pool"):
			return nil, fmt.Errorf("create network %s: %s has no address pool left for another network (each sandbox has its own, and Docker's defaults allow about 30). "+
				"Delete sandboxes you no longer need (`litterbox list --all-repos`), or give it more room: \"default-address-pools\": [{\"base\": \"10.213.0.0/16\", \"size\": 26}] in /etc/docker/daemon.json, then restart it",
				s.Name, p.c.dialect().Name)
		case err != nil && !refused(err):
			// Killed or timed out: the engine may have made it anyway.
			// Only a network carrying every label of this spec is
			// removed, never another's of that name.
			if rerr := p.removeMadeNetwork(mk, s); rerr != nil {
				return nil, fmt.Errorf("create network %s: %w\nthe engine may have made it, and looking for it failed: %v: %w", s.Name, err, rerr, provider.ErrLeftBehind)
			}
			return nil, fmt.Errorf("create network %s: %w", s.Name, err)
		case err != nil:
			return nil, fmt.Errorf("create network %s: %w", s.Name, err)
		}
		sb.Ref.NetworkID, sb.Network = id, s.Name
		made.Add(func(ctx context.Context) (string, error) {
			return "network " + s.Name, p.c.NetworkRemove(ctx, id)
		})
		if err := ctx.Err(); err != nil {
			return nil, undo(err)
		}
	}

	id, err := p.c.RunDetached(mk, s)
	if err != nil && shared && id == "" && strings.Contains(runner.Stderr(err), "unable to find network with name or ID "+sb.Network) {
		// Podman makes no container when the network is missing: make the
		// network, then run again.
		if err = p.ensureShared(mk, sb.Network); err == nil {
			id, err = p.c.RunDetached(mk, s)
		}
	}
	if err != nil && shared && sharedFull(err) {
		// The bridge's subnet has no address left (ensure-docker.sh's pools
		// give it 61): this sandbox gets a network of its own instead.
		// docker run made the container it could not start; remove it.
		if id != "" {
			if rerr := ignoreMissing(p.c.Remove(mk, id)); rerr != nil {
				return nil, fmt.Errorf("start container %s: %w\nit could not remove what it made: container %s (%v): %w", s.Name, err, s.Name, rerr, provider.ErrLeftBehind)
			}
		}
		own := s
		own.Network = provider.NetworkOwn
		return p.Create(ctx, own)
	}
	if err != nil && shared && sharedMissing(err, sb.Network) && id != "" {
		// First sandbox on this engine, or the bridge was pruned: docker
		// run made the container and could not start it. Make the bridge,
		// then start that container.
		made.Add(func(ctx context.Context) (string, error) {
			return "container " + s.Name, ignoreMissing(p.c.Remove(ctx, id))
		})
		if err = p.ensureShared(mk, sb.Network); err == nil {
			err = p.c.Start(mk, id)
		}
		if err != nil {
			return nil, undo(fmt.Errorf("start container %s: %w", s.Name, err))
		}
		made = made[:len(made)-1] // pushed again below
	}
	if err != nil {
		stderr := runner.Stderr(err)
		if strings.Contains(stderr, "is already in use") {
			return nil, undo(provider.Errorf(provider.ErrConflict, "container name %s is taken: %w", s.Name, err))
		}
		if s.HostPorts.First > 0 && len(s.Ports) > 0 && (strings.Contains(stderr, "port is already allocated") || strings.Contains(stderr, "address already in use")) {
			// Docker's words, then Podman's.
			err = provider.Errorf(provider.ErrNoHostPort, "no free host port in %d-%d: %w", s.HostPorts.First, s.HostPorts.Last, err)
		}
		if s.NoPull && noImage(err) {
			err = provider.Errorf(provider.ErrNoImage, "image %s is not on the engine: %w", s.Image, err)
		}
		if strings.Contains(stderr, `unknown mount option "uid=`) && p.c.dialect() == DockerDialect {
			err = fmt.Errorf("%w\nThis engine looks like Podman: run litterbox with --engine podman (or LITTERBOX_ENGINE=podman)", err)
		}
		// docker run may have created the container before failing to
		// start it, unless it never reached the engine.
		if !neverReached(err) && !errors.Is(err, provider.ErrNoImage) {
			made.Add(func(ctx context.Context) (string, error) {
				return "container " + s.Name, ignoreMissing(p.c.Remove(ctx, s.Name))
			})
		}
		return nil, undo(fmt.Errorf("start container %s: %w", s.Name, err))
	}
	sb.Ref.ID = id
	sb.Created = time.Now().UTC()
	made.Add(func(ctx context.Context) (string, error) {
		return "container " + s.Name, ignoreMissing(p.c.Remove(ctx, id))
	})
	if err := ctx.Err(); err != nil {
		return nil, undo(err)
	}
	return sb, nil
}

// removeMadeNetwork removes the network of s that a cut-short network create
// may have made: one named s.Name and carrying every label of s.
func (p *Provider) removeMadeNetwork(ctx context.Context, s provider.Spec) error {
	filters := SortedLabels(s.Labels)
	nets, err := p.c.NetworkList(ctx, filters, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nets {
		if n.Name == s.Name {
			errs = append(errs, p.c.NetworkRemove(ctx, n.ID))
		}
	}
	return errors.Join(errs...)
}

func ignoreMissing(err error) error {
	if errors.Is(err, provider.ErrNotFound) {
		return nil
	}
	return err
}

// List lists the containers and the networks that carry sel's labels, side
// by side, and joins each network to the container attached to it; a
// network left without one is a StateNone sandbox. Containers come newest
// first.
func (p *Provider) List(ctx context.Context, sel provider.Selector) ([]provider.Sandbox, error) {
	filters := selectorFilters(sel)
	var (
		cts            []Container
		nets           []Network
		psErr, netsErr error
		wg             sync.WaitGroup
	)
	wg.Add(1)
	go func() { defer wg.Done(); cts, psErr = p.c.PS(ctx, filters, sel.Report) }()
	if !sel.ContainersOnly {
		wg.Add(1)
		go func() { defer wg.Done(); nets, netsErr = p.c.NetworkList(ctx, filters, sel.Report) }()
	}
	wg.Wait()
	// One error is enough: when the engine cannot be reached, both say so.
	if err := cmp.Or(psErr, netsErr); err != nil {
		return nil, err
	}
	byName := make(map[string]*Network, len(nets))
	for i := range nets {
		byName[nets[i].Name] = &nets[i]
	}
	joined := map[string]bool{}
	out := make([]provider.Sandbox, 0, len(cts)+len(nets))
	shared, common := p.c.dialect().SharedNetwork, p.c.dialect().CommonNetwork
	for _, c := range cts {
		sb := provider.Sandbox{Ref: provider.Ref{ID: c.ID}, Name: c.Name, State: state(c.State), Created: c.Created, Labels: c.Labels}
		for _, name := range c.Networks {
			if n := byName[name]; n != nil {
				sb.Ref.NetworkID, sb.Network = n.ID, n.Name
				joined[n.ID] = true
				break
			}
			if name != "" && (name == shared || name == common) {
				sb.Network = name // not its own: no NetworkID, never removed with it
			} else if sel.ContainersOnly && name != "" && name != "none" && name != "host" {
				sb.Network = name // its own, by name: the networks were not listed
				break
			}
		}
		out = append(out, sb)
	}
	for _, n := range nets {
		if !joined[n.ID] {
			out = append(out, provider.Sandbox{Ref: provider.Ref{NetworkID: n.ID}, Name: n.Name, Network: n.Name, State: provider.StateNone, Labels: n.Labels})
		}
	}
	return out, nil
}

// selectorFilters are the label filters of sel, sorted so that argv is
// stable: a key alone for a value of "".
func selectorFilters(sel provider.Selector) []string {
	filters := make([]string, 0, len(sel.Labels))
	for k, v := range sel.Labels {
		if v == "" {
			filters = append(filters, k)
		} else {
			filters = append(filters, k+"="+v)
		}
	}
	sort.Strings(filters)
	return filters
}

// state maps a docker state (created, running, paused, restarting, removing,
// exited, dead) to a provider.State.
func state(s string) provider.State {
	switch s {
	case "running":
		return provider.StateRunning
	case "paused":
		return provider.StatePaused
	}
	return provider.StateStopped
}

// Pause freezes a sandbox's processes.
func (p *Provider) Pause(ctx context.Context, ref provider.Ref) (bool, error) {
	if ref.ID == "" {
		return false, provider.Errorf(provider.ErrNotFound, "pause: the sandbox has no container")
	}
	return p.c.Pause(ctx, ref.ID)
}

// Resume thaws a paused sandbox. Both engines say "is not paused" of a
// stopped container as of a running one, so that answer is checked.
func (p *Provider) Resume(ctx context.Context, ref provider.Ref) (bool, error) {
	if ref.ID == "" {
		return false, provider.Errorf(provider.ErrNotFound, "resume: the sandbox has no container")
	}
	already, err := p.c.Unpause(ctx, ref.ID)
	if err != nil || !already {
		return already, err
	}
	st, err := p.c.State(ctx, ref.ID)
	if err != nil {
		return false, err
	}
	if state(st) != provider.StateRunning {
		return false, provider.Errorf(provider.ErrStopped, "resume: container %s is %s", ref.ID, st)
	}
	return true, nil
}

// Remove removes the container, then the network, of ref; what is gone
// already counts as removed. A container that cannot be removed leaves the
// network alone, so the sandbox stays whole.
func (p *Provider) Remove(ctx context.Context, ref provider.Ref) error {
	if ref.ID != "" {
		if err := ignoreMissing(p.c.Remove(ctx, ref.ID)); err != nil {
			return fmt.Errorf("remove container: %w", err)
		}
	}
	if ref.NetworkID != "" {
		if err := p.c.NetworkRemove(ctx, ref.NetworkID); err != nil {
			return fmt.Errorf("remove network: %w", err)
		}
	}
	return nil
}

// Exec runs a command in a sandbox. The CLI's exit code is the command's,
// unless stderr says the engine refused the exec (see classify).
func (p *Provider) Exec(ctx context.Context, r provider.ExecRequest) (provider.ExecResult, error) {
	// An exec still running when its sandbox stops is not always answered
	// (gVisor's runsc with Docker 20.10: 2 of 4 such execs waited for
	// ever): one that runs longer than execWatchAfter has the sandbox's
	// state checked now and then, and is ended when the sandbox stopped.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stopped atomic.Bool
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		wait := execWatchAfter
		for {
			select {
			case <-watchDone:
				return
			case <-time.After(wait):
			}
			wait = execWatchEvery
			st, err := p.c.State(ctx, r.Ref.ID)
			if err == nil && state(st) == provider.StateStopped || errors.Is(err, provider.ErrNotFound) {
				stopped.Store(true)
				cancel()
				return
			}
		}
	}()
	res, err := p.c.Exec(ctx, ExecSpec{
		Container: r.Ref.ID, Cmd: r.Cmd, User: r.User, Workdir: r.Workdir, Env: r.Env, Kind: r.Kind,
		Stdin: r.Stdin, Interactive: r.Interactive, TTY: r.TTY, Stdout: r.Stdout, Stderr: r.Stderr,
	})
	out := provider.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}
	if stopped.Load() && err != nil {
		return out, provider.Errorf(provider.ErrStopped, "the sandbox stopped while the command ran (%s): %w", runner.Quote(r.Cmd...), err)
	}
	if ee, ok := err.(*runner.ExitError); ok {
		// Left as it was by classify: the command ran and exited non-zero.
		out.ExitCode = ee.ExitCode
		if len(out.Stderr) == 0 {
			// Streamed: the error kept its end.
			out.Stderr = []byte(ee.Stderr)
		}
		return out, nil
	}
	return out, err
}

// How long an exec runs before its sandbox's state is checked, and then how
// often (see Exec).
var (
	execWatchAfter = 3 * time.Second
	execWatchEvery = 5 * time.Second
)

// Ports lists a sandbox's named ports (LabelPorts) with their bindings, from
// one docker inspect, and the URL where the user reaches each: this
// machine's 127.0.0.1 for a local engine; for an ssh engine, a port of this
// machine forwarded through litterbox's ssh connection (made here, and
// said in the note); for another host's engine over tcp, its own
// 127.0.0.1, with a note naming that host.
func (p *Provider) Ports(ctx context.Context, ref provider.Ref) ([]provider.Port, error) {
	label, bindings, err := p.c.PublishedPorts(ctx, ref.ID, LabelPorts)
	if err != nil {
		return nil, err
	}
	note := p.portsNote()
	out := []provider.Port{}
	for _, ps := range provider.ParsePortsLabel(label) {
		port := provider.Port{Name: ps.Name, ContainerPort: ps.Port}
		for _, b := range bindings {
			if b.ContainerPort == ps.Port && b.Proto == "tcp" && (port.HostPort == 0 || b.HostIP == "127.0.0.1") {
				port.HostIP, port.HostPort = b.HostIP, b.HostPort
			}
		}
		if port.HostPort == 0 {
			out = append(out, port)
			continue
		}
		host, hostPort := port.HostIP, port.HostPort
		if host == "" || host == "0.0.0.0" {
			host = "127.0.0.1"
		}
		if t := p.c.tunnel; t != nil {
			local, err := t.Forward(ctx, port.HostIP, port.HostPort)
			if err != nil {
				return nil, err
			}
			host, hostPort = "127.0.0.1", local
		}
		port.URL = fmt.Sprintf("http://%s:%d", host, hostPort)
		port.Note = note
		if p.c.tunnel != nil {
			port.Note = fmt.Sprintf("forwarded by litterbox over ssh to port %d on %s; the forward lasts while litterbox's ssh connection does (it closes after %d minutes unused; `litterbox ports` opens it again)", port.HostPort, p.c.tunnel.host, int(sshPersist.Minutes()))
		}
		out = append(out, port)
	}
	return out, nil
}

// Image inspects a local image; docker never pulls for an inspect. An image
// the engine does not hold is provider.ErrNoImage.
func (p *Provider) Image(ctx context.Context, name string) (provider.Image, error) {
	res, err := p.c.Run(ctx, p.c.Cmd(ImageInspectArgs(name)...))
	if err != nil {
		if noImage(err) {
			return provider.Image{}, provider.Errorf(provider.ErrNoImage, "image %s is not on the engine: %w", name, err)
		}
		return provider.Image{}, err
	}
	return ParseImageInspect(res.Stdout)
}

// noImage says the engine refused an image it does not hold: Docker's
// words, then Podman's.
func noImage(err error) bool {
	lower := strings.ToLower(runner.Stderr(err))
	return strings.Contains(lower, "no such image") || strings.Contains(lower, "image not known")
}

// portsNote says where published ports are reachable when that is not this
// machine: another host's engine reached over tcp, or a local one that runs
// in another network namespace. For an ssh engine, Ports forwards them here.
func (p *Provider) portsNote() string {
	switch {
	case p.c.tunnel != nil:
		return fmt.Sprintf("ports of this engine (on %s) are forwarded here over ssh when they are listed", p.c.tunnel.host)
	case !p.c.ep.Local() && p.c.ep.HostName() != "":
		h := p.c.ep.HostName()
		return fmt.Sprintf("the engine runs on %s and published this port on that host's 127.0.0.1, not on this machine's: open it there, or forward it, e.g. `ssh -N -L PORT:127.0.0.1:PORT %s`", h, h)
	case !p.c.ep.Local():
		return fmt.Sprintf("the engine (%s) may run on another host: the port is on that host's 127.0.0.1", p.c.endpoint())
	}
	p.netnsOnce.Do(func() {
		if sock, ok := strings.CutPrefix(p.c.ep.URL, "unix://"); ok {
			p.netns = socketNetns(sock)
		}
	})
	if p.netns == "" {
		return ""
	}
	return fmt.Sprintf("the engine runs in network namespace %s: this URL works only there, e.g. `nsenter --net=%s curl URL`", p.netns, p.netns)
}

var (
	_ provider.Renamer           = (*Provider)(nil)
	_ provider.RuntimeChecker    = (*Provider)(nil)
	_ provider.HostSocketChecker = (*Provider)(nil)
)

// Rename gives a sandbox's container a new name (a pooled sandbox taking
// its sandbox's name).
func (p *Provider) Rename(ctx context.Context, ref provider.Ref, name string) error {
	if ref.ID == "" {
		return provider.Errorf(provider.ErrNotFound, "rename: the sandbox has no container")
	}
	_, err := p.c.Run(ctx, p.c.Cmd("rename", ref.ID, name))
	if err != nil && strings.Contains(runner.Stderr(err), "in use") {
		return &provider.Error{Kind: provider.ErrConflict, Msg: daemonMessage(runner.Stderr(err)), Err: err}
	}
	return err
}

// engineRuntime is a runtime as the engine reports it: its program, and
// the arguments the engine runs it with.
type engineRuntime struct {
	Path string   `json:"path"`
	Args []string `json:"runtimeArgs"`
}

// hostSockets says a container under rt, the engine's runtime name, may use
// the host's unix sockets in its volumes: not under gVisor's runsc (by its
// name or its program) unless the engine runs it with --host-uds=all.
func (rt engineRuntime) hostSockets(name string) bool {
	if path.Base(rt.Path) != "runsc" && name != "runsc" {
		return true
	}
	return slices.Contains(rt.Args, "--host-uds=all") || slices.Contains(rt.Args, "-host-uds=all")
}

// runtimeTable asks the engine for the runtimes it offers and its
// default.
func (p *Provider) runtimeTable(ctx context.Context) (map[string]engineRuntime, string, error) {
	res, err := p.c.Run(ctx, p.c.Cmd("info", "--format", "{{json .Runtimes}} {{json .DefaultRuntime}}"))
	if err != nil {
		return nil, "", err
	}
	var (
		offered map[string]engineRuntime
		def     string
	)
	dec := json.NewDecoder(bytes.NewReader(res.Stdout))
	if err := dec.Decode(&offered); err != nil {
		return nil, "", fmt.Errorf("parse the runtimes of docker info %q: %w", res.Stdout, err)
	}
	_ = dec.Decode(&def) // older engines may not say
	return offered, def, nil
}

// runtimes asks the engine for the runtimes it offers (sorted) and its
// default. Podman's Docker-compatible API lists every runtime its
// containers.conf names, installed or not, and then ignores the runtime a
// container asks for (4.3 runs its default for any name, even one it does
// not know): only its default can be had there.
func (p *Provider) runtimes(ctx context.Context) ([]string, string, error) {
	offered, def, err := p.runtimeTable(ctx)
	if err != nil {
		return nil, "", err
	}
	if p.c.dialect() == PodmanDialect {
		if def == "" {
			return nil, "", nil
		}
		return []string{def}, def, nil
	}
	for name, rt := range offered {
		p.hostUDS.Store(name, rt.hostSockets(name))
	}
	return slices.Sorted(maps.Keys(offered)), def, nil
}

// HostSockets says whether a container under runtime (the engine's name,
// as CheckRuntime gives it; "" its default) may use the host's unix sockets
// in its volumes (engineRuntime.hostSockets). The engine's answer to
// CheckRuntime says it; otherwise the engine is asked. Podman's API runs
// its default runtime whatever is asked: it is taken as able.
func (p *Provider) HostSockets(ctx context.Context, runtime string) (bool, error) {
	if p.c.dialect() == PodmanDialect {
		return true, nil
	}
	if ok, known := p.hostUDS.Load(runtime); known && runtime != "" {
		return ok.(bool), nil
	}
	offered, def, err := p.runtimeTable(ctx)
	if err != nil {
		return false, err
	}
	name := cmp.Or(runtime, def)
	rt, ok := offered[name]
	return !ok || rt.hostSockets(name), nil
}

// CheckRuntime makes sure the engine offers runtime ("" is its default),
// before anything is made for a sandbox that names it, and says the
// engine's name for it: provider.RuntimeGVisor is "runsc" unless the
// engine offers a runtime named "gvisor". The answer is kept while the
// provider lives.
func (p *Provider) CheckRuntime(ctx context.Context, runtime string) (string, error) {
	if runtime == "" {
		return "", nil
	}
	if name, ok := p.offered.Load(runtime); ok {
		return name.(string), nil
	}
	offered, def, err := p.runtimes(ctx)
	if err != nil {
		return "", err
	}
	name := runtime
	if name == provider.RuntimeGVisor && !slices.Contains(offered, name) {
		name = "runsc"
	}
	if slices.Contains(offered, name) {
		p.offered.Store(runtime, name)
		return name, nil
	}
	d := p.c.dialect()
	if d == PodmanDialect {
		return "", provider.Errorf(provider.ErrNoRuntime, "%s at %s cannot run a sandbox under runtime %q: its Docker-compatible API runs every container under its default runtime (%s) whatever is asked. "+
			"To run sandboxes under %s there, set runtime = %q under [engine] in its containers.conf (and name it under [engine.runtimes]), restart its service, and leave the runtime unset",
			d.Name, p.c.endpoint(), runtime, cmp.Or(def, "runc"), name, name)
	}
	hint := "register it with the engine (\"runtimes\" in /etc/docker/daemon.json, then reload the engine), or leave the runtime unset"
	if name == "runsc" {
		hint = "install gVisor's runsc and register it with the engine (https://gvisor.dev/docs/user_guide/install/; in the litterbox repository `scripts/ensure-gvisor.sh` builds and registers it), or leave the runtime unset"
	}
	return "", provider.Errorf(provider.ErrNoRuntime, "%s at %s offers no runtime %q (it offers %s): %s",
		d.Name, p.c.endpoint(), runtime, strings.Join(offered, ", "), hint)
}
