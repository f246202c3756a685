package docker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
)

// Dialect is what differs between the engines the docker CLI can drive: how
// they spell options, how they word their failures, how to start them.
// Podman's Docker-compatible API takes the docker CLI's requests, but not
// every option means the same there (measured on Podman 4.3: see the table
// in docs/architecture.md).
type Dialect struct {
	// Engine is the engine's kind, as Info reports it.
	Engine string
	// Name is how messages name the engine.
	Name string
	// startHint says how to start the engine.
	startHint string
	// cliNote follows the "CLI not installed" message.
	cliNote string
	// ownerOption spells a tmpfs's owner. user is the container's uid:gid.
	ownerOption func(owner, user string) (string, error)
	// SharedNetwork is the bridge every provider.NetworkIsolated sandbox
	// joins, made with inter-container traffic disabled; "" gives each such
	// sandbox a network of its own instead. Podman's netavark is not known
	// to honour the Docker option that disables it, so Podman keeps one
	// network per sandbox.
	SharedNetwork string
	// CommonNetwork is the network of provider.NetworkShared containers:
	// the shared bridge on Docker, a plain one on Podman.
	CommonNetwork string
	// MountMakesVolumes: a run's --mount makes a volume it names with the
	// driver options it gives (provider.Volume's Opts) when none exists.
	// Podman's --mount takes no volume options.
	MountMakesVolumes bool
}

// The dialects.
var (
	DockerDialect = &Dialect{
		Engine:            EngineDocker,
		Name:              "Docker",
		SharedNetwork:     SharedNetwork,
		CommonNetwork:     SharedNetwork,
		MountMakesVolumes: true,
		startHint:         "start it (for example `sudo systemctl start docker`, or `scripts/ensure-docker.sh` in the litterbox repository) and try again",
		ownerOption: func(owner, _ string) (string, error) {
			uid, gid, _ := strings.Cut(owner, ":")
			if gid == "" {
				gid = uid
			}
			return "uid=" + uid + ",gid=" + gid, nil
		},
	}
	PodmanDialect = &Dialect{
		Engine:        EnginePodman,
		Name:          "Podman",
		CommonNetwork: SharedNetwork,
		startHint: "start its API service (for example `sudo systemctl start podman.socket`, or `podman system service --time=0 &`, " +
			"or `scripts/ensure-podman.sh` in the litterbox repository), point CONTAINER_HOST at its socket, and try again",
		cliNote: " (litterbox drives Podman through its Docker-compatible API with the docker CLI)",
		// Podman refuses uid= and gid= ("unknown mount option"); its U
		// gives the mount to the container's user, which is all a sandbox
		// asks for.
		ownerOption: func(owner, user string) (string, error) {
			if owner != user {
				return "", provider.Errorf(provider.ErrUnsupported, "podman can only give a tmpfs to the container's user (%s), not to %s", user, owner)
			}
			return "U", nil
		},
	}
)

// SharedNetwork is the name of Docker's shared sandbox bridge. It has one
// dash, and a sandbox's own network (litterbox-DIR-NAME) at least two, so
// the two never meet.
const SharedNetwork = "litterbox-shared"

// LabelShared marks the shared bridge. It carries no sandbox's labels, so no
// sandbox's list, delete or prune ever selects it.
const LabelShared = "dev.litterbox.shared"

// Engine kinds.
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// tmpfsOption spells one tmpfs mount for --tmpfs: path:options.
func (d *Dialect) tmpfsOption(t provider.Tmpfs, user string) (string, error) {
	opts := []string{"rw"}
	if t.ReadOnly {
		opts[0] = "ro"
	}
	if t.Exec {
		opts = append(opts, "exec")
	} else {
		opts = append(opts, "noexec")
	}
	if t.Owner != "" {
		o, err := d.ownerOption(t.Owner, user)
		if err != nil {
			return "", fmt.Errorf("tmpfs %s: %w", t.Path, err)
		}
		opts = append(opts, o)
	}
	opts = append(opts, fmt.Sprintf("mode=%04o", t.Mode))
	if t.Size > 0 {
		opts = append(opts, "size="+strconv.FormatInt(t.Size, 10))
	}
	return t.Path + ":" + strings.Join(opts, ","), nil
}
