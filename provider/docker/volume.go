package docker

import (
	"context"
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
