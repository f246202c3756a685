// Package provider is the seam between the sandbox service and the engines
// that run sandboxes. A Provider makes, finds, pauses, removes and runs
// commands in sandboxes, each a hardened container (or pod) on its own
// network; it knows nothing of git, branches or snapshots. Its types and
// errors are neutral: the service never sees an engine's words, because each
// provider translates its engine's failures into the errors below, once.
//
// Implementations: provider/docker (the docker CLI, for Docker and for
// Podman's Docker-compatible API) and provider/fake (in memory, for the
// service's unit tests). provider/contract is the test suite every real
// provider passes.
package provider

import (
	"context"
	"io"
	"time"

	"github.com/litterbox-dev/litterbox/runner"
)

// Provider runs sandboxes on one engine. Every method is safe to call from
// several goroutines at once.
type Provider interface {
	// Info describes the engine: its kind, endpoint, version, and where the
	// ports it publishes can be reached.
	Info(ctx context.Context) (Info, error)
	// Create makes a sandbox as spec says (isolated, hardened, labelled) and
	// starts it. When it fails it removes whatever it made, and returns
	// ErrConflict when spec's name is taken. It runs to its end even when
	// ctx is cancelled (an engine finishes what it was asked to make, so
	// stopping halfway would leave it behind), then, if ctx was cancelled,
	// removes the sandbox and returns ctx's error.
	Create(ctx context.Context, spec Spec) (*Sandbox, error)
	// List returns the sandboxes whose labels match sel, in every state,
	// leftovers included: a network whose container is gone is a Sandbox
	// in StateNone, so it can be shown and removed.
	List(ctx context.Context, sel Selector) ([]Sandbox, error)
	// Pause freezes every process of a sandbox; already reports one that
	// was paused. A stopped sandbox is ErrStopped.
	Pause(ctx context.Context, ref Ref) (already bool, err error)
	// Resume thaws a paused sandbox; already reports one that was running.
	// A stopped sandbox is ErrStopped.
	Resume(ctx context.Context, ref Ref) (already bool, err error)
	// Remove removes what ref names: the container, the network, or both
	// (container first). Gone already is success.
	Remove(ctx context.Context, ref Ref) error
	// Exec runs a command in a running sandbox. The command's own exit
	// code, zero or not, is data in ExecResult; an error means it could
	// not run (ErrNotFound, ErrPaused, ErrStopped, ErrUnreachable...).
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// Ports lists a sandbox's named ports with the URL where the user
	// reaches each.
	Ports(ctx context.Context, ref Ref) ([]Port, error)
	// Image describes an image the engine holds, without pulling it; one it
	// does not hold is ErrNoImage.
	Image(ctx context.Context, name string) (Image, error)
}

// Image is an image as its engine holds it.
type Image struct {
	ID string `json:"id"`
	// OS and Arch are the platform its metadata names: what its programs
	// are built for ("linux", "arm64").
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// Volumes are the paths the image declares as volumes (VOLUME), where
	// an engine would mount a writable volume of its own.
	Volumes []string `json:"volumes,omitempty"`
	// Labels are the image's labels, which its containers inherit.
	Labels map[string]string `json:"labels,omitempty"`
}

// EngineVM is the kind of engine (Info.Engine) of the VM engine
// (provider/vm): a Docker inside one VM per repository.
const EngineVM = "vm"

// Info describes an engine.
type Info struct {
	// Engine is the kind of engine: "docker" or "podman".
	Engine string `json:"engine"`
	// Endpoint is where the engine is reached, as the user would name it
	// (unix:///var/run/docker.sock, ssh://host, a docker context).
	Endpoint string `json:"endpoint"`
	Version  string `json:"version"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	// Instance names this run of the engine: it changes when the engine
	// restarts or is replaced, which is when what Info cannot show (its
	// firewall, say) may change too. "" when the engine cannot tell.
	Instance string `json:"instance,omitempty"`
	// Pause says whether the engine can pause sandboxes.
	Pause bool `json:"pause"`
	// PortsNote says where published ports are reachable when that is not
	// this machine's 127.0.0.1; empty when it is.
	PortsNote string `json:"portsNote,omitempty"`
	// Runtimes are the runtimes a Spec can name (Docker's and Podman's
	// OCI runtimes, "runc", "runsc"...; a cluster's RuntimeClasses),
	// sorted; DefaultRuntime is the one a Spec without Runtime gets, ""
	// when the engine does not say.
	Runtimes       []string `json:"runtimes,omitempty"`
	DefaultRuntime string   `json:"defaultRuntime,omitempty"`
}

// Ref names one sandbox on its engine, as Create and List return it: by the
// engine's own ids, so a same-named sandbox made later (by another
// repository, say) is never reached through an old Ref.
type Ref struct {
	// ID is the engine's id of the sandbox's container; "" for a leftover
	// that has none.
	ID string `json:"id,omitempty"`
	// NetworkID is the engine's id of the sandbox's own network; "" when it
	// has none (network none, a shared network, or removed).
	NetworkID string `json:"networkId,omitempty"`
}

// State is what a sandbox's container is doing.
type State string

// States. Every engine state maps to one of these.
const (
	StateRunning State = "running"
	StatePaused  State = "paused"
	// StateStopped: the container exists but does not run (exited,
	// created and never started, dead, restarting).
	StateStopped State = "stopped"
	// StateNone: no container, only a leftover network.
	StateNone State = "none"
)

// Sandbox is one sandbox as an engine knows it.
type Sandbox struct {
	Ref Ref
	// Name is the container's name, or the leftover network's.
	Name string
	// Network is the name of the network the sandbox is on, "" when none.
	// It is the sandbox's own only when Ref.NetworkID is set; a shared one
	// (see NetworkIsolated) is never removed with a sandbox.
	Network string
	State   State
	Created time.Time
	// Labels are the sandbox's labels that Selector.Report asked for
	// (those set, never an empty one).
	Labels map[string]string
}

// Selector picks sandboxes by their labels.
type Selector struct {
	// Labels must all match: key=value, or, for a value of "", the key set
	// to any value.
	Labels map[string]string
	// Report are the label keys List fills in: engines that cannot list
	// every label of an object safely (docker) read them one by one.
	Report []string
	// ContainersOnly lists the containers alone, not the networks an
	// engine keeps apart from them (Docker's: one engine call less). A
	// container's network is then named, but not its id (Ref.NetworkID),
	// and a network whose container is gone is not listed: for what is
	// shown, never for what is removed.
	ContainersOnly bool
}

// Network modes of a sandbox.
const (
	// NetworkIsolated puts the sandbox where it reaches the outside, not its
	// neighbours, by the cheapest scheme the provider proves as isolating:
	// for Docker one shared bridge with inter-container traffic disabled,
	// for Podman a network of its own (NetworkOwn).
	NetworkIsolated = "isolated"
	// NetworkOwn gives the sandbox a bridge network of its own, which no
	// other sandbox shares: it costs a network create (about 0.5 s) and one
	// of the engine's address pools, but its DNS knows no other sandbox's
	// name.
	NetworkOwn = "own"
	// NetworkNone gives it no network at all.
	NetworkNone = "none"
	// NetworkShared puts the container on the one network every container
	// of this mode shares, made when missing, where nothing keeps them from
	// reaching each other on engines that cannot (Podman): for containers
	// that guard what they reach themselves, as egress gateways do (they
	// refuse the networks they are on).
	NetworkShared = "shared"
)

// Spec describes a sandbox to create.
type Spec struct {
	// Name is the sandbox's name on the engine (its container's, and its
	// network's).
	Name  string
	Image string
	// Platform is the image's os/arch ("linux/arm64"); "" for the engine's
	// own.
	Platform string
	Hostname string
	// Labels go on everything made for the sandbox; they are the service's
	// whole record of it.
	Labels map[string]string
	// User is the uid:gid commands run as unless an exec says otherwise.
	User    string
	Workdir string
	Env     []string // KEY=VALUE
	Tmpfs   []Tmpfs
	// ReadOnlyRoot makes the image's file system read-only: only the tmpfs
	// mounts can be written.
	ReadOnlyRoot bool
	// Init runs a minimal init as pid 1, which reaps zombies.
	Init bool
	// DropCaps drops every capability; NoNewPrivileges forbids gaining any
	// (setuid binaries included).
	DropCaps        bool
	NoNewPrivileges bool
	Limits          Limits
	// Network is NetworkIsolated, NetworkOwn or NetworkNone.
	Network string
	// Ports are published on the engine host's loopback, each at a port the
	// engine picks (within HostPorts when it is set), and listed by Ports
	// under their names.
	Ports []PortSpec
	// HostPorts, when set, is the range the host ports are drawn from; a
	// range with no free port fails Create with ErrNoHostPort.
	HostPorts PortRange
	// Cmd is the main process; it must run until the sandbox is removed.
	// It runs as is: the image's own entrypoint does not wrap it.
	Cmd []string
	// NoHealthcheck turns off the image's health check, a command the
	// engine would otherwise run in the sandbox on its own schedule.
	NoHealthcheck bool
	// NoPull says the image is one litterbox built on the engine, never
	// in a registry: Create does not pull it, and fails with ErrNoImage
	// at once when the engine lacks it.
	NoPull bool
	// Volumes are named volumes (made beforehand) to mount: a sandbox and
	// its egress gateway share one (package egress).
	Volumes []Volume
	// Binds are directories of the engine's host mounted read-only: a
	// harness's released build, which `litterbox run` runs in the
	// sandbox (docs/run.md). Nothing of the user's home is ever one.
	Binds []Bind
	// DNS are the resolvers the container's /etc/resolv.conf names.
	DNS []string
	// Sysctls are namespaced kernel settings of the container (net.* of
	// its own network namespace).
	Sysctls map[string]string
	// Link, on an engine that links a confined sandbox to its gateway by
	// network (GatewayLinks), is set on both Specs: the sandbox's network
	// reaches only its gateway, and the gateway's takes only its sandbox.
	Link *Link
	// Runtime is the runtime the engine runs the sandbox with, by the
	// engine's name for it (Docker's and Podman's --runtime, "runsc" for
	// gVisor; a RuntimeClass on Kubernetes); "" for the engine's default.
	// One the engine does not offer fails Create with ErrNoRuntime before
	// anything is made.
	Runtime string
}

// Volume is a named volume mounted in a container.
type Volume struct {
	Name string
	Path string
	// Opts or Labels, when set, have the engine make the volume as it
	// mounts it, unless it exists: a local volume with these driver
	// options and Labels (Docker's --mount volume-opt), so that two containers made at
	// once can share it without a volume create before either. An engine
	// that cannot (Podman) leaves them: there the caller makes it first.
	Opts   map[string]string
	Labels map[string]string
	// ReadOnly mounts it read-only.
	ReadOnly bool
}

// Bind is a directory of the engine's host, mounted read-only at Path.
type Bind struct {
	Source string
	Path   string
}

// Tmpfs is an in-memory file system of a sandbox.
type Tmpfs struct {
	Path string
	// Size caps it, in bytes; 0 leaves the engine's default.
	Size int64
	// Mode is its root's permission bits, as chmod takes them (0o1777).
	Mode uint32
	// Owner is the uid:gid that owns its root; "" for root. Some engines
	// (Podman) can only give it to Spec.User.
	Owner string
	// Exec allows running programs from it.
	Exec bool
	// ReadOnly mounts it read-only: an empty directory nothing can be
	// written to (it covers a VOLUME of the image).
	ReadOnly bool
}

// Limits cap a sandbox's resources; a zero field leaves the engine's default.
type Limits struct {
	Pids   int
	Memory int64 // bytes
	CPUs   float64
	// Log is the most of the container's output (its engine log) the
	// engine keeps on its host's disk, in bytes: without it, an engine's
	// default json-file log grows until the container is removed. On
	// Kubernetes the kubelet bounds container logs itself
	// (containerLogMaxSize), and this is not used.
	Log int64
}

// DefaultLog is the Log limit of every container litterbox makes.
const DefaultLog = 8 << 20

// PortRange is an inclusive range of host ports; the zero value is none.
type PortRange struct{ First, Last int }

// PortSpec is a named container port to publish.
type PortSpec struct {
	Name string
	Port int
}

// Port is a published port and where the user reaches it.
type Port struct {
	Name          string
	ContainerPort int
	// HostIP and HostPort are where the engine bound it, on its own host.
	HostIP   string
	HostPort int
	// URL is http://HOST:PORT for the user; Note says where that URL works
	// when it is not this machine (another host, a network namespace).
	URL  string
	Note string
}

// ExecRequest is one command to run in a sandbox.
type ExecRequest struct {
	Ref     Ref
	Cmd     []string
	User    string // uid:gid; "" for the sandbox's user
	Workdir string // "" for the sandbox's
	Env     []string
	// Kind sets the host-side time limit: runner.Work (the zero value) for
	// a command whose work is bounded, runner.Stream for one the caller
	// bounds itself (a shell, bash with its own timeout).
	Kind runner.Kind
	// Stdin, when set, is the command's input; Interactive attaches the
	// caller's own stdin instead.
	Stdin       io.Reader
	Interactive bool
	TTY         bool
	// Stdout and Stderr stream the output; when nil it is captured into
	// ExecResult.
	Stdout io.Writer
	Stderr io.Writer
}

// ExecResult is what a command did.
type ExecResult struct {
	ExitCode int
	Stdout   []byte // captured when ExecRequest.Stdout was nil
	// Stderr is captured when ExecRequest.Stderr was nil; when it was
	// streamed, a failed command's Stderr still holds its last few KiB.
	Stderr []byte
}

// PauseEnder is implemented by a provider whose Pause cannot freeze a
// sandbox and ends it instead, keeping what makes it again (Kubernetes: a
// pod cannot be frozen, so pause deletes it). Its Resume starts the sandbox
// anew with empty memory file systems. The service then snapshots /src to
// the branch before Pause, and copies the branch into /src after Resume.
type PauseEnder interface {
	// PauseEnds reports whether Pause ends the sandbox's processes and
	// memory.
	PauseEnds() bool
}

// Renamer is implemented by a provider that can rename a sandbox's container
// in place: a warm pool's member takes the name of the sandbox it becomes
// once it is claimed. On an engine that cannot (Kubernetes: a pod's name is
// fixed) it keeps the pool's name, which no lookup goes by. A name that is
// taken is ErrConflict, a sandbox that is gone ErrNotFound.
type Renamer interface {
	Rename(ctx context.Context, ref Ref, name string) error
}

// Claimer is implemented by a provider that marks a warm pool's member,
// and its gateway when it has one (gateway.ID "" when not), as taken by
// a sandbox in one call to the engine, which also reports whether both
// still run (Kubernetes: an annotation on the two pods, patched and read
// back; the gateway reads it for the name its refusals give, GatewayLinks):
// a claim that has nothing to run in the member then needs no exec to know
// it hands over a live sandbox. A member or gateway that is gone is
// ErrNotFound, one that does not run (or is being deleted) ErrStopped.
type Claimer interface {
	Claim(ctx context.Context, ref, gateway Ref, sandbox string) error
}

// ClaimKeeper is implemented by a provider whose claims (Claimer) cost
// less through a process kept beside them than as a call of their own
// (Kubernetes: a shared kubectl proxy, so that a one-shot create's claim
// starts no kubectl): a fill of a warm pool starts it when none runs, and
// a delete of the pool ends it. Neither fails: a claim without it is made
// as before.
type ClaimKeeper interface {
	KeepClaims(ctx context.Context)
	EndClaims(ctx context.Context)
}

// RuntimeGVisor is the portable name of gVisor as a Spec's runtime: an
// engine that offers no runtime of that name runs it under its own name
// for gVisor (runsc on Docker).
const RuntimeGVisor = "gvisor"

// RuntimeChecker is implemented by a provider that can say, before
// anything is made, whether it offers a runtime: name is the engine's
// name for it (RuntimeGVisor is "runsc" on Docker), which a Spec then
// carries; one it does not offer is ErrNoRuntime, naming those it does.
// "" (the engine's default) is always offered.
type RuntimeChecker interface {
	CheckRuntime(ctx context.Context, runtime string) (name string, err error)
}

// SpecChecker is implemented by a provider that can say, before anything
// is made, that Create would refuse a spec for what it asks (ports under
// gVisor on Kubernetes): ErrUnsupported, saying what to change. The spec is
// the sandbox's as its configuration makes it, before a gateway is linked.
type SpecChecker interface {
	CheckSpec(ctx context.Context, s Spec) error
}

// HostSocketChecker is implemented by a provider that can say whether a
// container under runtime (the engine's name; "" its default) may use the
// unix sockets of a volume the host shares with it, as a confined
// sandbox's relay does to reach its gateway. gVisor's runsc keeps them
// from it unless run with --host-uds=all; runc lets them through.
type HostSocketChecker interface {
	HostSockets(ctx context.Context, runtime string) (ok bool, err error)
}

// Instancer is implemented by a provider that can say which run of its
// engine answers (Info's Endpoint and Instance) in fewer calls than Info:
// what a create's isolation check is keyed by, on its path.
type Instancer interface {
	Instance(ctx context.Context) (Info, error)
}
