package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// TestRunArgsVolumesDNSSysctls: a sandbox confined behind its gateway has a
// shared volume, its resolver and a sysctl, in a stable order.
func TestRunArgsVolumesDNSSysctls(t *testing.T) {
	s := provider.Spec{Name: "c", Image: "busybox", Network: provider.NetworkNone,
		Volumes: []provider.Volume{{Name: "c-gw", Path: "/run/litterbox-gw"}},
		Binds:   []provider.Bind{{Source: "/var/cache/h/claude-1", Path: "/opt/litterbox/harness"}},
		DNS:     []string{"127.0.0.1"},
		Sysctls: map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "net.ipv4.ping_group_range": "1 0"},
		Cmd:     []string{"sleep", "infinity"}}
	got, err := RunArgs(s, DockerDialect)
	if err != nil {
		t.Fatal(err)
	}
	want := "--mount type=volume,src=c-gw,dst=/run/litterbox-gw --mount type=bind,src=/var/cache/h/claude-1,dst=/opt/litterbox/harness,readonly --dns 127.0.0.1 --sysctl net.ipv4.ip_unprivileged_port_start=0 --sysctl 'net.ipv4.ping_group_range=1 0'"
	if q := runner.Quote(got...); !strings.Contains(q, want) {
		t.Errorf("RunArgs = %s\nwant it to hold %s", q, want)
	}
	s.Volumes = []provider.Volume{{Name: "a,b", Path: "/x"}}
	if _, err := RunArgs(s, DockerDialect); err == nil {
		t.Error("a comma in a volume name passed")
	}
	s.Volumes, s.Binds = nil, []provider.Bind{{Source: "/a,b", Path: "/x"}}
	if _, err := RunArgs(s, DockerDialect); err == nil {
		t.Error("a comma in a bind's source passed")
	}
}

// TestRunArgsShared: a NetworkShared container joins the one shared network
// on both engines (on Podman, where sandboxes get networks of their own).
func TestRunArgsShared(t *testing.T) {
	s := provider.Spec{Name: "g", Image: "busybox", Network: provider.NetworkShared}
	for _, d := range []*Dialect{DockerDialect, PodmanDialect} {
		got, err := RunArgs(s, d)
		if err != nil || !strings.Contains(runner.Quote(got...), "--network litterbox-shared") {
			t.Errorf("%s: %q, %v", d.Name, got, err)
		}
	}
	if got := sharedCreateArgs("litterbox-shared", PodmanDialect); slices.Contains(got, "--opt") {
		t.Errorf("podman's shared network: %q", got)
	}
}

// TestMountMaking: on Docker the run that first mounts the shared volume
// makes it, with the options and labels a volume create would give it (the
// option holding commas quoted, as the CLI's CSV wants); on Podman, whose
// --mount takes no volume options, the mount is a plain one.
func TestMountMaking(t *testing.T) {
	v := provider.SharedVolume{Name: "c-gw", Labels: map[string]string{"dev.litterbox.slug": "x"}, UID: 65532, GID: 1000, Mode: 0o770, Size: 32 << 20}
	c := &Client{}
	m, made := c.MountMaking(v, "/run/litterbox-gw")
	if !made {
		t.Fatal("docker: not made at mount")
	}
	got, err := RunArgs(provider.Spec{Name: "c", Image: "busybox", Volumes: []provider.Volume{m}}, DockerDialect)
	if err != nil {
		t.Fatal(err)
	}
	want := `--mount 'type=volume,src=c-gw,dst=/run/litterbox-gw,volume-driver=local,volume-label=dev.litterbox.slug=x,volume-opt=device=tmpfs,"volume-opt=o=uid=65532,gid=1000,mode=0770,size=33554432",volume-opt=type=tmpfs'`
	if q := runner.Quote(got...); !strings.Contains(q, want) {
		t.Errorf("RunArgs = %s\nwant it to hold %s", q, want)
	}
	// a labelled volume without options (a shared cache) is made with
	// its labels; a read-only one mounted so
	got, err = RunArgs(provider.Spec{Name: "c", Image: "busybox", Volumes: []provider.Volume{{Name: "cache-go", Path: "/cache/go", Labels: map[string]string{"dev.litterbox.cache": "go"}, ReadOnly: true}}}, DockerDialect)
	if err != nil {
		t.Fatal(err)
	}
	want = `--mount type=volume,src=cache-go,dst=/cache/go,volume-driver=local,volume-label=dev.litterbox.cache=go,readonly`
	if q := runner.Quote(got...); !strings.Contains(q, want) {
		t.Errorf("RunArgs = %s\nwant it to hold %s", q, want)
	}
	c.Dialect = PodmanDialect
	if m, made := c.MountMaking(v, "/run/litterbox-gw"); made || m.Opts != nil {
		t.Errorf("podman: %+v made %v", m, made)
	}
}

func TestVolumeCreateArgs(t *testing.T) {
	v := provider.SharedVolume{Name: "c-gw", Labels: map[string]string{"dev.litterbox.slug": "x"}, UID: 65532, GID: 65532, Mode: 0o700, Size: 16 << 20}
	want := []string{"volume", "create", "--label", "dev.litterbox.slug=x", "--driver", "local", "--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", "o=uid=65532,gid=65532,mode=0700,size=16777216", "c-gw"}
	if got := VolumeCreateArgs(v, DockerDialect); !slices.Equal(got, want) {
		t.Errorf("docker: %q", got)
	}
	// Podman refuses a size ("volume options size and inodes not supported").
	if got := VolumeCreateArgs(v, PodmanDialect); slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, "size=") }) {
		t.Errorf("podman: %q", got)
	}
}

// TestVolumeLabelsOneGone: a volume removed between a list and the
// inspect of its labels (another prune meanwhile) is only missing from the
// answer; the others' labels still come.
func TestVolumeLabelsOneGone(t *testing.T) {
	if exec.Command("docker", "info").Run() != nil {
		t.Skip("needs a Docker engine")
	}
	ctx := context.Background()
	name := fmt.Sprintf("lbtest-labels-%d", os.Getpid())
	if out, err := exec.Command("docker", "volume", "create", "--label", "dev.litterbox.test=labels", name).CombinedOutput(); err != nil {
		t.Fatalf("volume create: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "volume", "rm", name).Run() })
	p, err := New(Options{Runner: runner.Exec{}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.VolumeLabels(ctx, []string{name, name + "-gone"})
	if err != nil || len(got) != 1 || got[name]["dev.litterbox.test"] != "labels" {
		t.Fatalf("VolumeLabels = %v, %v; want %s's labels alone", got, err, name)
	}
}
