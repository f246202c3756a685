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
// with the sandbox. Docker, Podman, an ssh engine and the VM engine (its
// Docker) do; an engine that does not (Kubernetes for now) runs no
// gateway, and a confined sandbox there is refused.
type Gateways interface {
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
