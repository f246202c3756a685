// Package spec is the hardened container a sandbox runs in, as the
// provider is asked for it, and the probes litterbox starts to check an
// engine or an image: what keeps an agent in its sandbox is written here
// once.
package spec

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Labels are the labels of a sandbox's resources: its own, and its gateway's.
func Labels(o api.Options, r *api.Repo, slug, base, image string) map[string]string {
	l := map[string]string{
		api.LabelSlug:   slug,
		api.LabelRepo:   r.Root(),
		api.LabelGitDir: r.Git.CommonDir,
		api.LabelRepoID: r.ID,
		api.LabelBranch: api.BranchPrefix + slug,
		api.LabelBase:   base,
		api.LabelImage:  image,
	}
	for k, v := range o.ExtraLabels {
		l[k] = v
	}
	return l
}

// For is the hardened container of sandbox slug of r at commit base:
// non-root, no capabilities, no privilege gain, read-only root with /src
// and /tmp in memory, limits on pids, memory and CPU, an init to reap
// zombies, and an idle main process, on a network where it cannot reach
// other sandboxes. /src is a tmpfs because filling an overlay-backed /src
// was about 4x slower (copying a repository of 2,500 files); the branch, not
// the container, is the record of the work. o's image is the default. cfg's image,
// network, ports, host port range and limits apply over the defaults; none
// of what the image itself says (its USER, ENTRYPOINT, CMD, VOLUMEs,
// EXPOSEd ports, WORKDIR, HEALTHCHECK) weakens the hardening: the provider
// sets each of those explicitly (see docs/images.md).
func For(o api.Options, r *api.Repo, slug, base string, cfg *config.Config) provider.Spec {
	image := cmp.Or(o.Image, api.DefaultImage)
	if cfg.Image != "" {
		image = cfg.Image
	}
	memory := DefaultMemory
	if cfg.Memory != "" {
		memory = cfg.Memory
	}
	sp := provider.Spec{
		Name:            r.ContainerName(slug),
		Image:           image,
		Network:         provider.NetworkIsolated,
		Hostname:        slug,
		User:            api.User,
		Workdir:         config.Workdir,
		Labels:          Labels(o, r, slug, base, image),
		Env:             append(envList(cfg.Env), "HOME=/tmp", "LITTERBOX_SANDBOX="+slug),
		Tmpfs:           tmpfsMounts(memory),
		ReadOnlyRoot:    true,
		Init:            true,
		DropCaps:        true,
		NoNewPrivileges: true,
		NoHealthcheck:   true,
		Limits:          provider.Limits{Pids: 1024, Memory: config.Bytes(memory), CPUs: float64(min(2, runtime.NumCPU())), Log: provider.DefaultLog},
		Cmd:             []string{"sleep", "infinity"},
	}
	if cfg.Runtime != "" {
		sp.Runtime = cfg.Runtime
		sp.Labels[api.LabelRuntime] = cfg.Runtime
	}
	switch cfg.Network {
	case config.NetworkNone:
		sp.Network = provider.NetworkNone
	case config.NetworkOwn:
		sp.Network = provider.NetworkOwn
	}
	for _, p := range cfg.Ports {
		sp.Ports = append(sp.Ports, provider.PortSpec{Name: p.Name, Port: p.ContainerPort})
		sp.Env = append(sp.Env, fmt.Sprintf("%s=%d", p.EnvName(), p.ContainerPort))
	}
	sp.HostPorts = provider.PortRange{First: cfg.HostPorts.First, Last: cfg.HostPorts.Last}
	if n, err := strconv.ParseFloat(cfg.CPUs, 64); err == nil && n > 0 {
		sp.Limits.CPUs = n
	}
	if cfg.Pids > 0 {
		sp.Limits.Pids = cfg.Pids
	}
	// The repository's shared caches (package cache).
	vols, env := CacheMounts(o.ExtraLabels, r, cfg.Cache)
	sp.Volumes = append(sp.Volumes, vols...)
	sp.Env = append(sp.Env, env...)
	return sp
}

// envList is env as NAME=VALUE, sorted by name.
func envList(env map[string]string) []string {
	var list []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}

// DefaultMemory is a sandbox's memory limit unless its configuration sets one.
const DefaultMemory = "2g"

// runDirSize caps RunDir: the scanner (about 16 MiB) and the services' state
// and logs fit with room to spare.
const runDirSize = 64 << 20

// tmpfsMounts are the in-memory file systems of a sandbox with the memory
// limit memory. Their pages count against that limit, so an unbounded /src
// that the agent fills leaves no memory for any process: every command, the
// snapshot scanner and `rm` included, is then OOM-killed, and the sandbox is
// dead while the engine still calls it running. Capped below the limit (half
// of it for /src, a quarter for /tmp), a full file system is "No space left
// on device" instead, and there is memory left to clean up. A memory of 0
// (no limit) or one that does not parse leaves the sizes to the engine.
func tmpfsMounts(memory string) []provider.Tmpfs {
	src := provider.Tmpfs{Path: config.Workdir, Exec: true, Owner: api.User, Mode: 0o755}
	tmp := provider.Tmpfs{Path: "/tmp", Exec: true, Mode: 0o1777}
	run := provider.Tmpfs{Path: api.RunDir, Exec: true, Mode: 0o755, Size: runDirSize}
	if n := config.Bytes(memory); n > 0 {
		src.Size, tmp.Size = n/2, n/4
	}
	return []provider.Tmpfs{src, tmp, run}
}

// VolumeMasks cover each VOLUME the image declares with an empty read-only
// tmpfs: the engine would otherwise mount a writable volume there, on disk,
// outside the read-only root and the memory limit. Where the sandbox has a
// file system of its own (/src, /tmp, the run dir) that one is mounted
// already, so the volume is not made either.
func VolumeMasks(volumes []string) []provider.Tmpfs {
	var out []provider.Tmpfs
	for _, v := range volumes {
		switch path.Clean(v) {
		case api.Workdir, "/tmp", api.RunDir:
			continue
		}
		out = append(out, provider.Tmpfs{Path: path.Clean(v), Mode: 0o755, Size: 4096, ReadOnly: true})
	}
	return out
}

// Probe is a throwaway sandbox of image that litterbox starts to check an
// engine or an image, as hardened as a sandbox: labelled LabelProbe=kind
// (and with the extra labels) so that nothing takes it for a user's, with a
// /tmp of tmp bytes, memory bytes of memory, and a main process that ends
// after life.
func Probe(extra map[string]string, kind, name, image, network string, tmp, memory int64, life time.Duration) provider.Spec {
	labels := map[string]string{api.LabelProbe: kind}
	for k, v := range extra {
		labels[k] = v
	}
	return provider.Spec{
		Name: name, Image: image, Hostname: name, Labels: labels, User: api.User, Workdir: "/tmp",
		Tmpfs:        []provider.Tmpfs{{Path: "/tmp", Exec: true, Mode: 0o1777, Size: tmp}},
		ReadOnlyRoot: true, Init: true, DropCaps: true, NoNewPrivileges: true, NoHealthcheck: true,
		Limits:  provider.Limits{Pids: 64, Memory: memory, Log: provider.DefaultLog},
		Network: network,
		Cmd:     []string{"sleep", strconv.Itoa(int(life.Seconds()))},
	}
}
