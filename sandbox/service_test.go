package sandbox

import (
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"reflect"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

func TestSpecFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte("[ports]\nweb = 8080\napi = 3000\n[limits]\nmemory = \"1g\"\npids = 100\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Common: &core.Common{Options: core.Options{Image: DefaultImage}}}
	r := &Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	spec := s.spec(r, "x", "base", cfg)
	if want := []provider.PortSpec{{Name: "api", Port: 3000}, {Name: "web", Port: 8080}}; !reflect.DeepEqual(spec.Ports, want) {
		t.Errorf("ports = %+v", spec.Ports)
	}
	if !strings.Contains(strings.Join(spec.Env, " "), "PORT_API=3000 PORT_WEB=8080") {
		t.Errorf("env = %q", spec.Env)
	}
	if spec.Limits.Memory != 1<<30 || spec.Limits.Pids != 100 || spec.Network != provider.NetworkIsolated || spec.Name != "litterbox-repo-x" {
		t.Errorf("spec = %+v", spec)
	}
	// The in-memory file systems are sized from the configured limit.
	if sizes := []int64{spec.Tmpfs[0].Size, spec.Tmpfs[1].Size, spec.Tmpfs[2].Size}; !reflect.DeepEqual(sizes, []int64{512 << 20, 256 << 20, 64 << 20}) {
		t.Errorf("tmpfs = %+v", spec.Tmpfs)
	}
	if spec.Image != DefaultImage || spec.Labels[LabelImage] != DefaultImage || spec.HostPorts != (provider.PortRange{}) {
		t.Errorf("image %q (label %q), host ports %+v; want the service's image and no range", spec.Image, spec.Labels[LabelImage], spec.HostPorts)
	}
	// The configuration's image and host port range go into the spec.
	img, _ := config.Parse([]byte("image = \"litterbox-test/x:1\"\n[ports]\nweb = 80\nrange = \"20000-20001\"\n"), nil)
	if spec := s.spec(r, "x", "base", img); spec.Image != "litterbox-test/x:1" || spec.Labels[LabelImage] != "litterbox-test/x:1" || spec.HostPorts != (provider.PortRange{First: 20000, Last: 20001}) {
		t.Errorf("spec = %+v", spec)
	}
	none, _ := config.Parse([]byte(`network = "none"`), nil)
	if spec := s.spec(r, "x", "base", none); spec.Network != provider.NetworkNone {
		t.Errorf("network = %q", spec.Network)
	}
}

func TestTmpfsMountsBelowMemory(t *testing.T) {
	for _, tc := range []struct {
		memory   string
		src, tmp int64
	}{
		{"2g", 1073741824, 536870912},
		{"512m", 268435456, 134217728},
		{"1.5G", 805306368, 402653184},
		{"1048576", 524288, 262144},
		{"64k", 32768, 16384},
		{"0", 0, 0},
	} {
		got := tmpfsMounts(tc.memory)
		if len(got) != 3 || got[0].Size != tc.src || got[1].Size != tc.tmp || got[2].Size != runDirSize {
			t.Errorf("tmpfsMounts(%q) = %+v, want /src %d and /tmp %d", tc.memory, got, tc.src, tc.tmp)
		}
	}
	s := &Service{Common: &core.Common{Options: core.Options{Image: DefaultImage}}}
	r := &Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	if spec := s.ContainerSpec(r, "x", "base"); spec.Tmpfs[0].Size != 1<<30 || spec.Tmpfs[0].Owner != User {
		t.Errorf("default /src = %+v, want half of %s, owned by %s", spec.Tmpfs[0], DefaultMemory, User)
	}
}
