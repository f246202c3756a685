package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// tmpfsOptions are the local driver's options that make v.
func tmpfsOptions(v provider.SharedVolume, d *Dialect) map[string]string {
	o := fmt.Sprintf("uid=%d,gid=%d,mode=%04o", v.UID, v.GID, v.Mode)
	if v.Size > 0 && d.Engine != EnginePodman {
		o += fmt.Sprintf(",size=%d", v.Size)
	}
	return map[string]string{"type": "tmpfs", "device": "tmpfs", "o": o}
}

// MountMaking is a mount of v at path that makes v as the container is
// made, when it does not exist and the engine can (Dialect's
// MountMakesVolumes); made says so, and otherwise v must be made first.
func (c *Client) MountMaking(v provider.SharedVolume, path string) (m provider.Volume, made bool) {
	m = provider.Volume{Name: v.Name, Path: path}
	if d := c.dialect(); d.MountMakesVolumes {
		m.Opts, m.Labels = tmpfsOptions(v, d), v.Labels
		return m, true
	}
	return m, false
}

// VolumeCreateArgs builds the argv of `docker volume create` for v in
// dialect d.
func VolumeCreateArgs(v provider.SharedVolume, d *Dialect) []string {
	args := []string{"volume", "create"}
	for _, kv := range SortedLabels(v.Labels) {
		args = append(args, "--label", kv)
	}
	o := tmpfsOptions(v, d)
	return append(args, "--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", "o="+o["o"], v.Name)
}

// VolumeCreate makes v. One that exists already is an error: its options
// may not be v's.
func (c *Client) VolumeCreate(ctx context.Context, v provider.SharedVolume) error {
	_, err := c.Run(ctx, c.Cmd(VolumeCreateArgs(v, c.dialect())...))
	if err != nil {
		return fmt.Errorf("create volume %s: %w", v.Name, err)
	}
	return nil
}

// VolumeRemove removes a volume; one that is gone already is not an error.
func (c *Client) VolumeRemove(ctx context.Context, name string) error {
	_, err := c.Run(ctx, c.Cmd("volume", "rm", "--force", name))
	if err != nil && !strings.Contains(strings.ToLower(runner.Stderr(err)), "no such volume") {
		return fmt.Errorf("remove volume %s: %w", name, err)
	}
	return nil
}

// VolumeList is the names of the volumes that carry every label of labels
// ("KEY=VALUE", or "KEY" for any value).
func (c *Client) VolumeList(ctx context.Context, labels ...string) ([]string, error) {
	args := []string{"volume", "ls", "--quiet"}
	for _, l := range labels {
		args = append(args, "--filter", "label="+l)
	}
	res, err := c.Run(ctx, c.Cmd(args...))
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	return strings.Fields(string(res.Stdout)), nil
}

// MakesVolumesAtMount says whether a run's --mount makes the volume it
// names, with its labels (Docker: Dialect's MountMakesVolumes).
func (c *Client) MakesVolumesAtMount() bool { return c.dialect().MountMakesVolumes }

// VolumeLabels is the labels of each volume of names. A volume removed
// meanwhile (another prune, between a list and this) is only missing from
// the answer, as in Subnets.
func (c *Client) VolumeLabels(ctx context.Context, names []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	res, err := c.Run(ctx, c.Cmd(append([]string{"volume", "inspect", "--format", "{{json .Name}} {{json .Labels}}"}, names...)...))
	if err != nil && !onlyGone(runner.Stderr(err)) {
		return nil, fmt.Errorf("inspect volumes: %w", err)
	}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if line == "" {
			continue
		}
		name, labels, ok := strings.Cut(line, " ")
		var n string
		var l map[string]string
		if !ok || json.Unmarshal([]byte(name), &n) != nil || json.Unmarshal([]byte(labels), &l) != nil {
			return nil, fmt.Errorf("inspect volumes: cannot read %q", line)
		}
		out[n] = l
	}
	return out, nil
}
