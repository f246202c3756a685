package spec

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

func TestSpecFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte("[ports]\nweb = 8080\napi = 3000\n[limits]\nmemory = \"1g\"\npids = 100\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	o := api.Options{Image: api.DefaultImage}
	r := &api.Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	sp := For(o, r, "x", "base", cfg)
	if want := []provider.PortSpec{{Name: "api", Port: 3000}, {Name: "web", Port: 8080}}; !reflect.DeepEqual(sp.Ports, want) {
		t.Errorf("ports = %+v", sp.Ports)
	}
	if !strings.Contains(strings.Join(sp.Env, " "), "PORT_API=3000 PORT_WEB=8080") {
		t.Errorf("env = %q", sp.Env)
	}
	if sp.Limits.Memory != 1<<30 || sp.Limits.Pids != 100 || sp.Limits.Log != provider.DefaultLog || sp.Network != provider.NetworkIsolated || sp.Name != "litterbox-repo-x" {
		t.Errorf("sp = %+v", sp)
	}
	// The in-memory file systems are sized from the configured limit.
	if sizes := []int64{sp.Tmpfs[0].Size, sp.Tmpfs[1].Size, sp.Tmpfs[2].Size}; !reflect.DeepEqual(sizes, []int64{512 << 20, 256 << 20, 64 << 20}) {
		t.Errorf("tmpfs = %+v", sp.Tmpfs)
	}
	if sp.Image != api.DefaultImage || sp.Labels[api.LabelImage] != api.DefaultImage || sp.HostPorts != (provider.PortRange{}) {
		t.Errorf("image %q (label %q), host ports %+v; want the service's image and no range", sp.Image, sp.Labels[api.LabelImage], sp.HostPorts)
	}
	// The configuration's image and host port range go into the sp.
	img, _ := config.Parse([]byte("image = \"litterbox-test/x:1\"\n[ports]\nweb = 80\nrange = \"20000-20001\"\n"), nil)
	if sp := For(o, r, "x", "base", img); sp.Image != "litterbox-test/x:1" || sp.Labels[api.LabelImage] != "litterbox-test/x:1" || sp.HostPorts != (provider.PortRange{First: 20000, Last: 20001}) {
		t.Errorf("sp = %+v", sp)
	}
	none, _ := config.Parse([]byte(`network = "none"`), nil)
	if sp := For(o, r, "x", "base", none); sp.Network != provider.NetworkNone {
		t.Errorf("network = %q", sp.Network)
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
	o := api.Options{Image: api.DefaultImage}
	r := &api.Repo{Slug: "repo", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	if sp := For(o, r, "x", "base", config.Default()); sp.Tmpfs[0].Size != 1<<30 || sp.Tmpfs[0].Owner != api.User {
		t.Errorf("default /src = %+v, want half of %s, owned by %s", sp.Tmpfs[0], DefaultMemory, api.User)
	}
}

func TestVolumeMasks(t *testing.T) {
	got := VolumeMasks([]string{"/data", "/src", "/tmp/", "/var/lib/db/"})
	want := []provider.Tmpfs{{Path: "/data", Mode: 0o755, Size: 4096, ReadOnly: true}, {Path: "/var/lib/db", Mode: 0o755, Size: 4096, ReadOnly: true}}
	if !slices.Equal(got, want) {
		t.Errorf("VolumeMasks = %+v, want %+v", got, want)
	}
}
