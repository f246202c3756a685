package docker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// LabelPorts records a sandbox's named ports on its container.
const LabelPorts = provider.LabelPorts

// RunArgs builds the argv of `docker run --detach` for spec, spelled in
// dialect d. The network is the dialect's shared bridge for a
// NetworkIsolated spec, else one named after the sandbox (Create makes it
// first).
// csvField quotes one field of a --mount value, which the CLI reads as CSV:
// a field holding a comma or a quote is quoted, its quotes doubled.
func csvField(f string) string {
	if !strings.ContainsAny(f, ",\"\n") {
		return f
	}
	return `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
}

func RunArgs(s provider.Spec, d *Dialect) ([]string, error) {
	args := []string{"run", "--detach", "--name", s.Name}
	if s.Platform != "" {
		args = append(args, "--platform", s.Platform)
	}
	labels := s.Labels
	if len(s.Ports) > 0 {
		labels = make(map[string]string, len(s.Labels)+1)
		for k, v := range s.Labels {
			labels[k] = v
		}
		labels[LabelPorts] = provider.PortsLabel(s.Ports)
	}
	for _, kv := range SortedLabels(labels) {
		args = append(args, "--label", kv)
	}
	if s.Init {
		args = append(args, "--init")
	}
	if s.Runtime != "" {
		args = append(args, "--runtime", s.Runtime)
	}
	switch s.Network {
	case provider.NetworkIsolated, provider.NetworkOwn, provider.NetworkShared:
		args = append(args, "--network", networkOf(s, d))
	case provider.NetworkNone:
		args = append(args, "--network", "none")
	}
	if s.Hostname != "" {
		args = append(args, "--hostname", s.Hostname)
	}
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	if s.DropCaps {
		args = append(args, "--cap-drop", "ALL")
	}
	if s.NoNewPrivileges {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if s.ReadOnlyRoot {
		args = append(args, "--read-only")
	}
	for _, t := range s.Tmpfs {
		opt, err := d.tmpfsOption(t, s.User)
		if err != nil {
			return nil, err
		}
		args = append(args, "--tmpfs", opt)
	}
	if s.Limits.Pids > 0 {
		args = append(args, "--pids-limit", strconv.Itoa(s.Limits.Pids))
	}
	if s.Limits.Memory > 0 {
		args = append(args, "--memory", strconv.FormatInt(s.Limits.Memory, 10))
	}
	if s.Limits.CPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(s.Limits.CPUs, 'f', -1, 64))
	}
	if s.Limits.Log > 0 {
		// json-file, whatever the engine's default: its size options are
		// the same on Docker and Podman (k8s-file there, which keeps
		// max-size and ignores max-file), where journald or syslog would
		// refuse them.
		args = append(args, "--log-driver", "json-file",
			"--log-opt", "max-size="+strconv.FormatInt(max(1, s.Limits.Log/2), 10),
			"--log-opt", "max-file=2")
	}
	for _, p := range s.Ports {
		// 127.0.0.1 only, host port chosen by the engine at bind time
		// (within the range, when there is one): no probe-then-bind race
		// between sandboxes.
		host := ""
		if r := s.HostPorts; r.First > 0 {
			host = fmt.Sprintf("%d-%d", r.First, r.Last)
		}
		args = append(args, "--publish", fmt.Sprintf("127.0.0.1:%s:%d/tcp", host, p.Port))
	}
	if s.Workdir != "" {
		args = append(args, "--workdir", s.Workdir)
	}
	for _, e := range s.Env {
		args = append(args, "--env", e)
	}
	if s.NoPull {
		args = append(args, "--pull", "never")
	}
	if s.NoHealthcheck {
		args = append(args, "--no-healthcheck")
	}
	for _, v := range s.Volumes {
		if strings.ContainsAny(v.Name+v.Path, ",\"\n") {
			return nil, fmt.Errorf("volume %q at %q: a comma or quote in either", v.Name, v.Path)
		}
		m := "type=volume,src=" + v.Name + ",dst=" + v.Path
		if (len(v.Opts) > 0 || len(v.Labels) > 0) && d.MountMakesVolumes {
			m += ",volume-driver=local"
			for _, kv := range SortedLabels(v.Labels) {
				m += "," + csvField("volume-label="+kv)
			}
			for _, kv := range SortedLabels(v.Opts) {
				m += "," + csvField("volume-opt="+kv)
			}
		}
		if v.ReadOnly {
			m += ",readonly"
		}
		args = append(args, "--mount", m)
	}
	for _, b := range s.Binds {
		if strings.ContainsAny(b.Source+b.Path, ",\"\n") {
			return nil, fmt.Errorf("bind %q at %q: a comma or quote in either", b.Source, b.Path)
		}
		args = append(args, "--mount", "type=bind,src="+b.Source+",dst="+b.Path+",readonly")
	}
	for _, d := range s.DNS {
		args = append(args, "--dns", d)
	}
	keys := make([]string, 0, len(s.Sysctls))
	for k := range s.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--sysctl", k+"="+s.Sysctls[k])
	}
	if len(s.Cmd) == 0 {
		return append(args, s.Image), nil
	}
	// The main process is the entrypoint: an image's ENTRYPOINT (a shell
	// that exits, say) would otherwise run instead, with Cmd as its
	// arguments.
	args = append(args, "--entrypoint", s.Cmd[0], s.Image)
	return append(args, s.Cmd[1:]...), nil
}

// networkOf names the network a sandbox of spec s joins: the dialect's shared
// bridge, or its own, named after it.
func networkOf(s provider.Spec, d *Dialect) string {
	if s.Network == provider.NetworkShared {
		return d.CommonNetwork
	}
	if s.Network == provider.NetworkIsolated && d.SharedNetwork != "" {
		return d.SharedNetwork
	}
	return s.Name
}

// ownNetwork reports whether a sandbox of spec s gets a network of its own.
func ownNetwork(s provider.Spec, d *Dialect) bool {
	return s.Network == provider.NetworkOwn || (s.Network == provider.NetworkIsolated && d.SharedNetwork == "")
}

// RunDetached creates and starts a detached container and returns its id. It
// is work, not a control call: the engine pulls an image it does not have.
func (c *Client) RunDetached(ctx context.Context, s provider.Spec) (string, error) {
	args, err := RunArgs(s, c.dialect())
	if err != nil {
		return "", err
	}
	res, err := c.Run(ctx, c.Cmd(args...).As(runner.Work))
	// docker run prints the id once it created the container, even when
	// starting it then fails: the caller may need it then too.
	return strings.TrimSpace(string(res.Stdout)), err
}

// SortedLabels renders labels as sorted key=value strings, so argv is stable.
func SortedLabels(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
