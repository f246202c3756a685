// Package fake is an in-memory provider.Provider for the sandbox service's
// unit tests. Sandboxes are records in memory that keep the contract of a
// real provider (Create removes what it made when it fails, Remove is
// idempotent, a paused sandbox refuses commands); commands run through a
// function the test gives; and every step can be made to fail, once, with the
// error the test picks. It is safe for concurrent use, so the service's
// parallel steps run against it under the race detector.
package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
)

// Step is one step of the provider that can be made to fail.
type Step string

// The steps.
const (
	StepInfo      Step = "info"
	StepNetwork   Step = "network"   // Create: making the network
	StepContainer Step = "container" // Create: starting the container
	StepList      Step = "list"
	StepPause     Step = "pause"
	StepResume    Step = "resume"
	StepRemove    Step = "remove"         // Remove: the container
	StepRemoveNet Step = "remove-network" // Remove: the network
	StepExec      Step = "exec"
	StepPorts     Step = "ports"
	StepImage     Step = "image"
)

// Provider is the in-memory provider. Its zero value is ready to use.
type Provider struct {
	// Run answers the commands run in sandboxes (Exec). Nil runs nothing:
	// it reads the command's stdin to its end and exits 0 with no output.
	Run func(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error)
	// OnStep, when set, is called as each step starts, before any injected
	// failure: a test can cancel a context there, or look at the state.
	OnStep func(Step)
	// Images are the images the engine holds, by name; nil holds every
	// image, as linux/amd64.
	Images map[string]provider.Image

	mu         sync.Mutex
	seq        int
	containers map[string]*object // by id
	networks   map[string]*object // by id
	failures   map[Step][]error
	calls      []Step
}

type object struct {
	id      string
	name    string
	network string // a container's network id
	state   provider.State
	created time.Time
	labels  map[string]string
	ports   []provider.PortSpec
}

var _ provider.Provider = (*Provider)(nil)

// Fail makes the next call of step fail with err. Several calls queue
// several failures. A Create that fails at StepContainer removes the network
// it made, as a real provider does, unless err matches
// provider.ErrLeftBehind: then the network stays, as when a real provider's
// cleanup fails too.
func (p *Provider) Fail(step Step, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures == nil {
		p.failures = map[Step][]error{}
	}
	p.failures[step] = append(p.failures[step], err)
}

// step records step, calls OnStep and returns the failure injected for it.
func (p *Provider) step(s Step) error {
	if p.OnStep != nil {
		p.OnStep(s)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
	if errs := p.failures[s]; len(errs) > 0 {
		p.failures[s] = errs[1:]
		return errs[0]
	}
	return nil
}

// Calls are the steps run so far, in order.
func (p *Provider) Calls() []Step {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// Objects lists everything the provider holds, as List would without a
// selector: the sandboxes, and networks left without a container.
func (p *Provider) Objects() []provider.Sandbox {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.list(func(map[string]string) bool { return true }, nil)
}

// AddNetwork makes a network as a cut-short create leaves it, for tests of
// leftovers.
func (p *Provider) AddNetwork(name string, labels map[string]string) provider.Ref {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.add(&p.networks, name, labels)
	return provider.Ref{NetworkID: n.id}
}

// SetState sets a sandbox's state as if it changed behind the service's back
// (its main process exited: StateStopped).
func (p *Provider) SetState(ref provider.Ref, st provider.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.containers[ref.ID]; c != nil {
		c.state = st
	}
}

func (p *Provider) add(into *map[string]*object, name string, labels map[string]string) *object {
	if *into == nil {
		*into = map[string]*object{}
	}
	p.seq++
	o := &object{id: fmt.Sprintf("fake%04d", p.seq), name: name, labels: maps.Clone(labels), created: time.Now().UTC()}
	(*into)[o.id] = o
	return o
}

func (p *Provider) nameTaken(name string) bool {
	for _, m := range []map[string]*object{p.containers, p.networks} {
		for _, o := range m {
			if o.name == name {
				return true
			}
		}
	}
	return false
}

// Image describes an image of Images.
func (p *Provider) Image(_ context.Context, name string) (provider.Image, error) {
	if err := p.step(StepImage); err != nil {
		return provider.Image{}, err
	}
	if p.Images == nil {
		return provider.Image{ID: "sha256:" + name, OS: "linux", Arch: "amd64"}, nil
	}
	img, ok := p.Images[name]
	if !ok {
		return provider.Image{}, provider.Errorf(provider.ErrNoImage, "image %s is not on the engine", name)
	}
	return img, nil
}

// Info describes the fake engine.
func (p *Provider) Info(context.Context) (provider.Info, error) {
	if err := p.step(StepInfo); err != nil {
		return provider.Info{}, err
	}
	return provider.Info{Engine: "fake", Endpoint: "memory", Version: "1", OS: "linux", Arch: "amd64", Pause: true}, nil
}

// Create makes the network, then the container, each only when its step
// does not fail; a failure or a cancelled ctx removes what was made.
func (p *Provider) Create(ctx context.Context, s provider.Spec) (*provider.Sandbox, error) {
	p.mu.Lock()
	taken := p.nameTaken(s.Name)
	p.mu.Unlock()
	if taken {
		return nil, provider.Errorf(provider.ErrConflict, "name %s is taken", s.Name)
	}
	sb := &provider.Sandbox{Name: s.Name, State: provider.StateRunning, Labels: maps.Clone(s.Labels)}
	var net *object
	if s.Network == provider.NetworkIsolated || s.Network == provider.NetworkOwn {
		if err := p.step(StepNetwork); err != nil {
			return nil, fmt.Errorf("create network %s: %w", s.Name, err)
		}
		p.mu.Lock()
		net = p.add(&p.networks, s.Name, s.Labels)
		p.mu.Unlock()
		sb.Ref.NetworkID, sb.Network = net.id, s.Name
	}
	removeNet := func() {
		if net != nil {
			p.mu.Lock()
			delete(p.networks, net.id)
			p.mu.Unlock()
		}
	}
	if err := p.step(StepContainer); err != nil {
		if !errors.Is(err, provider.ErrLeftBehind) {
			removeNet()
		}
		return nil, fmt.Errorf("start container %s: %w", s.Name, err)
	}
	if err := ctx.Err(); err != nil {
		removeNet()
		return nil, err
	}
	p.mu.Lock()
	c := p.add(&p.containers, s.Name, s.Labels)
	c.state, c.ports = provider.StateRunning, slices.Clone(s.Ports)
	if net != nil {
		c.network = net.id
	}
	p.mu.Unlock()
	sb.Ref.ID, sb.Created = c.id, c.created
	return sb, nil
}

// List lists the sandboxes whose labels match sel.
func (p *Provider) List(_ context.Context, sel provider.Selector) ([]provider.Sandbox, error) {
	if err := p.step(StepList); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	match := func(labels map[string]string) bool {
		for k, v := range sel.Labels {
			got, ok := labels[k]
			if !ok || v != "" && got != v {
				return false
			}
		}
		return true
	}
	out := p.list(match, sel.Report)
	if sel.ContainersOnly {
		// As docker ps: a container names its network, no network is
		// listed alone.
		out = slices.DeleteFunc(out, func(sb provider.Sandbox) bool { return sb.State == provider.StateNone })
		for i := range out {
			out[i].Ref.NetworkID = ""
		}
	}
	return out, nil
}

// list joins containers and networks, newest container first, as docker ps
// lists them. report nil reports every label.
func (p *Provider) list(match func(map[string]string) bool, report []string) []provider.Sandbox {
	labels := func(l map[string]string) map[string]string {
		if report == nil {
			return maps.Clone(l)
		}
		out := map[string]string{}
		for _, k := range report {
			if v := l[k]; v != "" {
				out[k] = v
			}
		}
		return out
	}
	var out []provider.Sandbox
	joined := map[string]bool{}
	ids := slices.Sorted(maps.Keys(p.containers))
	slices.Reverse(ids)
	for _, id := range ids {
		c := p.containers[id]
		if !match(c.labels) {
			continue
		}
		sb := provider.Sandbox{Ref: provider.Ref{ID: c.id}, Name: c.name, State: c.state, Created: c.created, Labels: labels(c.labels)}
		if n := p.networks[c.network]; n != nil && match(n.labels) {
			sb.Ref.NetworkID, sb.Network = n.id, n.name
			joined[n.id] = true
		}
		out = append(out, sb)
	}
	for _, id := range slices.Sorted(maps.Keys(p.networks)) {
		n := p.networks[id]
		if !joined[id] && match(n.labels) {
			out = append(out, provider.Sandbox{Ref: provider.Ref{NetworkID: n.id}, Name: n.name, Network: n.name, State: provider.StateNone, Labels: labels(n.labels)})
		}
	}
	return out
}

func (p *Provider) container(ref provider.Ref) (*object, error) {
	c := p.containers[ref.ID]
	if c == nil {
		return nil, provider.Errorf(provider.ErrNotFound, "no such container: %q", ref.ID)
	}
	return c, nil
}

// Pause pauses a running sandbox.
func (p *Provider) Pause(_ context.Context, ref provider.Ref) (bool, error) {
	return p.toggle(StepPause, ref, provider.StatePaused, provider.StateRunning)
}

// Resume resumes a paused sandbox.
func (p *Provider) Resume(_ context.Context, ref provider.Ref) (bool, error) {
	return p.toggle(StepResume, ref, provider.StateRunning, provider.StatePaused)
}

func (p *Provider) toggle(step Step, ref provider.Ref, to, from provider.State) (bool, error) {
	if err := p.step(step); err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.container(ref)
	switch {
	case err != nil:
		return false, err
	case c.state == to:
		return true, nil
	case c.state != from:
		return false, provider.Errorf(provider.ErrStopped, "container %s is %s", c.name, c.state)
	}
	c.state = to
	return false, nil
}

// Remove removes the container, then the network, of ref.
func (p *Provider) Remove(_ context.Context, ref provider.Ref) error {
	if ref.ID != "" {
		if err := p.step(StepRemove); err != nil {
			return fmt.Errorf("remove container: %w", err)
		}
		p.mu.Lock()
		delete(p.containers, ref.ID)
		p.mu.Unlock()
	}
	if ref.NetworkID != "" {
		if err := p.step(StepRemoveNet); err != nil {
			return fmt.Errorf("remove network: %w", err)
		}
		p.mu.Lock()
		delete(p.networks, ref.NetworkID)
		p.mu.Unlock()
	}
	return nil
}

// Exec runs a command through p.Run, in a running sandbox.
func (p *Provider) Exec(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
	if err := p.step(StepExec); err != nil {
		return provider.ExecResult{}, err
	}
	p.mu.Lock()
	c, err := p.container(req.Ref)
	if err == nil && c.state != provider.StateRunning {
		kind := provider.ErrStopped
		if c.state == provider.StatePaused {
			kind = provider.ErrPaused
		}
		err = provider.Errorf(kind, "container %s is %s", c.name, c.state)
	}
	p.mu.Unlock()
	if err != nil {
		return provider.ExecResult{}, err
	}
	if p.Run != nil {
		return p.Run(ctx, req)
	}
	if req.Stdin != nil {
		_, _ = io.Copy(io.Discard, req.Stdin)
	}
	return provider.ExecResult{}, nil
}

// Ports lists the named ports, each on its own made-up host port.
func (p *Provider) Ports(_ context.Context, ref provider.Ref) ([]provider.Port, error) {
	if err := p.step(StepPorts); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c, err := p.container(ref)
	if err != nil {
		return nil, err
	}
	out := []provider.Port{}
	for i, ps := range c.ports {
		hp := 40000 + i
		out = append(out, provider.Port{Name: ps.Name, ContainerPort: ps.Port, HostIP: "127.0.0.1", HostPort: hp, URL: fmt.Sprintf("http://127.0.0.1:%d", hp)})
	}
	return out, nil
}
