package provider

import (
	"context"
	"io"
)

// SharedVolume is a named volume in memory, owned by one user: a sandbox
// and its egress gateway share one (package egress). It lives while a
// container mounts it; what it holds is gone when the last one stops.
type SharedVolume struct {
	Name   string
	Labels map[string]string
	// UID and GID own its root; Mode is its root's permission bits.
	UID, GID int
	Mode     uint32
	// Size caps it in bytes; an engine that cannot cap a volume's size
	// (Podman refuses the option) leaves it to itself.
	Size int64
}

// Gateways is implemented by a provider that can run a confined sandbox's
// egress gateway beside it (package egress, docs/egress.md): a container
// of its own, from an image the engine builds, sharing a volume in memory
// with the sandbox, which has no network at all. Docker, Podman, an ssh
// engine and the VM engine (its Docker) do; Kubernetes, whose pods always
// have a network, links the two by network instead (GatewayLinks).
type Gateways interface {
	Reach
	// The gateway's image is built on the engine.
	ImageBuilder
	// MountShared is a mount of v at path for a Spec's Volumes. made
	// says the engine makes v as the first container that mounts it is
	// made; otherwise CreateVolume makes it first.
	MountShared(v SharedVolume, path string) (m Volume, made bool)
	// CreateVolume makes v; one that exists already is an error (its
	// options may not be v's).
	CreateVolume(ctx context.Context, v SharedVolume) error
	// RemoveVolume removes volume name once no container mounts it; gone
	// already is not an error.
	RemoveVolume(ctx context.Context, name string) error
	// RemoveAll removes containers (by name or id) and their anonymous
	// volumes, in one engine call where it can; missing are those that
	// were gone already.
	RemoveAll(ctx context.Context, names ...string) (missing []string, err error)
	// RemoveNetless is RemoveAll of containers that have no network (a
	// confined sandbox's: its way out is its gateway's): their removal
	// touches no network of the engine, so it waits for no other.
	RemoveNetless(ctx context.Context, names ...string) (missing []string, err error)
	// State is the state of container ref (a gateway's), StateNone when
	// there is none.
	State(ctx context.Context, ref Ref) (State, error)
	// Start starts a stopped container again, as it was made.
	Start(ctx context.Context, ref Ref) error
}

// Reach is what an engine that runs gateways says no sandbox may reach
// without the user: its host's addresses and its networks.
type Reach interface {
	// HostAddrs are the engine host's own addresses (its loopback and
	// link-local ones aside), which a sandbox may not reach unless the
	// user says: found by a one-shot container of image (it must hold
	// `ip`) on the host's network.
	HostAddrs(ctx context.Context, image string) ([]string, error)
	// Subnets are the subnets of the engine's networks, where other
	// containers are, each once.
	Subnets(ctx context.Context) ([]string, error)
	// Endpoint names the engine the calls reach, to key what is kept of
	// its answers.
	Endpoint() string
}

// GatewayLinks is implemented by a provider whose sandboxes always have a
// network, which it can narrow to one peer (Kubernetes: a pod, and a
// NetworkPolicy). A confined sandbox's gateway is then a sandbox-like
// object of its own, made by Create from a Spec whose Link names both; the
// sandbox, made from a Spec with the same Link, reaches the gateway and
// nothing else, finds it by the name GatewayHost, and resolves names with
// it. The gateway takes connections from its sandbox only, and reaches
// nothing of the engine's own (its pods, services, nodes' private
// addresses): what is left it judges itself. Such an engine builds no
// image: the gateway runs from a base image, and its program is installed
// by an exec. Each object's network is named as it is: Create's Ref has
// NetworkID == ID, and Remove of that Ref takes both.
type GatewayLinks interface {
	Reach
	// GatewayHost is the name a linked sandbox finds its gateway by.
	GatewayHost() string
	// GatewayNameFile is where a linked gateway finds the name of the
	// sandbox a warm pool's member was claimed for (Claimer), once the
	// engine has put it there after the claim: no such file, or an
	// empty one, before. The gateway reads it (without following a link
	// at its last step) for the name its refusals give.
	GatewayNameFile() string
}

// Link joins a confined sandbox and its gateway on an engine that links
// them by network (GatewayLinks).
type Link struct {
	// Sandbox and Gateway are the two Specs' names.
	Sandbox, Gateway string
	// TCP and UDP are the gateway's ports the sandbox may reach.
	TCP, UDP []int
	// Closed are the engine's networks (Reach.Subnets) the gateway may
	// not reach; when empty, the engine asks itself.
	Closed []string
}

// ImageBuilder is implemented by a provider that can build an image on its
// engine: the egress gateway's (Gateways), a devcontainer.json's
// Dockerfile.
type ImageBuilder interface {
	// BuildImage makes image tag from a build context, a tar stream whose
	// Dockerfile is at dockerfile in it. The engine's own images serve its
	// FROM; no registry is asked when the engine holds them.
	BuildImage(ctx context.Context, tag, dockerfile string, buildContext io.Reader) error
}

// Volumes is implemented by a provider whose engine keeps named volumes
// with labels, made as the first container whose Spec mounts one is made
// (Docker's, an ssh engine's, the VM's): the repositories' shared caches
// (sandbox/internal/cache). KeepsVolumes says false where a mount cannot
// label the volume it makes (Podman).
type Volumes interface {
	KeepsVolumes() bool
	// ListVolumes names the volumes that carry every label of labels
	// ("KEY=VALUE", or "KEY" for any value).
	ListVolumes(ctx context.Context, labels ...string) ([]string, error)
	// VolumeLabels is the labels of each volume of names.
	VolumeLabels(ctx context.Context, names []string) (map[string]map[string]string, error)
	// RemoveVolume removes volume name once no container mounts it; gone
	// already is not an error.
	RemoveVolume(ctx context.Context, name string) error
}
