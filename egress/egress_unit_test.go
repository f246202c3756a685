package egress

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway"
	"github.com/litterbox-dev/litterbox/provider"
)

// TestConfine: the sandbox loses its network and its ports, which its
// gateway publishes; both mount the volume; the sandbox's clients are
// pointed at the proxy and its resolver at the relay.
func TestConfine(t *testing.T) {
	s := provider.Spec{Name: "litterbox-repo-x", Image: "busybox:latest", Network: provider.NetworkIsolated, User: "1000:1000", Cmd: []string{"sleep", "infinity"},
		Env: []string{"HOME=/tmp"}, Ports: []provider.PortSpec{{Name: "web", Port: 8080}}, HostPorts: provider.PortRange{First: 20000, Last: 20010}}
	p, err := Confine(s, "busybox:latest", gateway.Policy{Sandbox: "x", Mode: gateway.ModeAllowlist, Allow: []string{"a.example"}}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	sb, gw := p.Sandbox, p.Gateway
	if sb.Network != provider.NetworkNone || len(sb.Ports) != 0 || sb.HostPorts.First != 0 {
		t.Errorf("sandbox network %q ports %v %v", sb.Network, sb.Ports, sb.HostPorts)
	}
	if !slices.Contains(sb.Env, "HTTPS_PROXY=http://127.0.0.1:3128") || !slices.Contains(sb.Env, "no_proxy=localhost,127.0.0.1,::1") || !slices.Contains(sb.Env, "HOME=/tmp") {
		t.Errorf("sandbox env %q", sb.Env)
	}
	if !slices.Equal(sb.DNS, []string{"127.0.0.1"}) || sb.Sysctls["net.ipv4.ip_unprivileged_port_start"] != "0" {
		t.Errorf("sandbox dns %v sysctls %v", sb.DNS, sb.Sysctls)
	}
	if gw.Name != "litterbox-repo-x-gw" || gw.Network != provider.NetworkShared || gw.User != "65532:1000" ||
		!gw.ReadOnlyRoot || !gw.DropCaps || !gw.NoNewPrivileges || gw.Labels[LabelGatewayOf] != s.Name || gw.Labels["k"] != "v" {
		t.Errorf("gateway %+v", gw)
	}
	if len(gw.Ports) != 1 || gw.HostPorts.First != 20000 || !slices.Equal(p.Ports, []int{8080}) {
		t.Errorf("gateway ports %v %v, relay ports %v", gw.Ports, gw.HostPorts, p.Ports)
	}
	want := provider.Volume{Name: "litterbox-repo-x-gw", Path: Dir}
	is := func(v provider.Volume) bool { return v.Name == want.Name && v.Path == want.Path }
	if !slices.ContainsFunc(sb.Volumes, is) || !slices.ContainsFunc(gw.Volumes, is) || p.Volume.Name != want.Name || p.Volume.Mode != 0o770 || p.Volume.UID != UID || p.Volume.GID != 1000 {
		t.Errorf("volumes %v %v %+v", sb.Volumes, gw.Volumes, p.Volume)
	}
	cmd := strings.Join(gw.Cmd, " ")
	if !strings.Contains(cmd, `-policy {"sandbox":"x","mode":"allowlist","registries":false,"allow":["a.example"]}`) || !strings.Contains(cmd, "-port 8080") {
		t.Errorf("gateway cmd %q", cmd)
	}
	if got := strings.Join(sb.Cmd, " "); !strings.Contains(got, "do "+Dir+"/litterbox-relay relay -dir "+Dir+" -proxy 127.0.0.1:3128 -dns 127.0.0.1:53 -port 8080; rm -f "+Dir+"/relay.ready; sleep 1; done) & exec \"$@\" sh sleep infinity") || !strings.HasPrefix(got, "sh -c (rm -f "+Dir+"/relay.ready; until") {
		t.Errorf("sandbox cmd %q", got)
	}
	// From a gateway image: the main process installs the program the
	// image holds, then becomes it, with the same arguments.
	p.FromImage("litterbox-gateway:abc")
	img := strings.Join(p.Gateway.Cmd, " ")
	if p.Gateway.Image != "litterbox-gateway:abc" || !strings.Contains(img, "cat "+ImageProgram+` >"$t"`) ||
		!strings.Contains(img, "mv -f \"$r\" "+Dir+"/litterbox-relay") || !strings.Contains(img, "exec "+ProgramDir+`/litterbox-gateway "$@" sh serve -dir `+Dir) || !strings.Contains(img, "-port 8080") {
		t.Errorf("gateway from its image: %q", img)
	}
	if _, err := Confine(s, "busybox", gateway.Policy{Mode: "wide"}, nil); err == nil {
		t.Error("a bad policy was planned")
	}
}

func TestParseHostAddrs(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host \       valid_lft forever preferred_lft forever
2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\       valid_lft forever preferred_lft forever
2: eth0    inet6 fd00::2/64 scope global flags 02 \       valid_lft forever preferred_lft forever
2: eth0    inet6 fe80::fc:ff:fe00:1/64 scope link \       valid_lft forever preferred_lft forever
3: docker0    inet 172.17.0.1/16 brd 172.17.255.255 scope global docker0\       valid_lft forever preferred_lft forever
`
	if got := ParseHostAddrs([]byte(out)); !slices.Equal(got, []string{"192.0.2.2", "fd00::2", "172.17.0.1"}) {
		t.Errorf("got %q", got)
	}
}

// TestStore: records append after a note of what was lost, the cursor
// follows, and the files stay bounded.
func TestStore(t *testing.T) {
	s := Store{File: filepath.Join(t.TempDir(), "x", "net.jsonl"), Max: 2000}
	now := time.Unix(1000, 0).UTC()
	batch := func(boot string, lost int64, from, to uint64) gateway.Batch {
		b := gateway.Batch{Boot: boot, Now: now, Lost: lost, Last: to}
		for i := from; i <= to; i++ {
			b.Records = append(b.Records, gateway.Record{Seq: i, Time: now, Kind: "connect", Host: "h.example", Port: 443, Reason: "not in the allowlist"})
		}
		return b
	}
	if err := s.Append(batch("b1", 0, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Cursor(); c != (Cursor{"b1", 3}) {
		t.Errorf("cursor %+v", c)
	}
	if err := s.Append(gateway.Batch{Boot: "b1", Now: now, Last: 3}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Cursor(); c != (Cursor{"b1", 3}) {
		t.Errorf("cursor after an empty batch %+v", c)
	}
	if err := s.Append(batch("b2", -1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Records(0)
	if err != nil || len(rs) != 6 || rs[3].Kind != "lost" || !strings.Contains(rs[3].Reason, "restarted") {
		t.Fatalf("records %+v, %v", rs, err)
	}
	for i := uint64(3); i < 60; i++ {
		if err := s.Append(batch("b2", 0, i, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{s.File, s.File + ".1"} {
		if fi, err := os.Stat(f); err != nil || fi.Size() > s.Max {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
	rs, _ = s.Records(5)
	if len(rs) != 5 || rs[4].Seq != 59 {
		t.Errorf("last 5: %+v", rs)
	}
	// A line cut by a crash is skipped, not fatal.
	f, _ := os.OpenFile(s.File, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":60,"ti`)
	f.Close()
	if rs, err := s.Records(0); err != nil || rs[len(rs)-1].Seq != 59 {
		t.Errorf("after a cut line: %v", err)
	}
}

func TestRefusedHosts(t *testing.T) {
	rs := []gateway.Record{
		{Kind: "connect", Host: "a.example", Port: 443, Reason: "not in the allowlist"},
		{Kind: "connect", Host: "ok.example", Port: 443, Allowed: true},
		{Kind: "connect", Host: "a.example", Port: 443, Reason: "not in the allowlist"},
		{Kind: "dns", Host: "x.example", Port: 53, Reason: "the sandbox resolves no names"},
		{Kind: "suppressed", Suppressed: 9, Reason: "9 more"},
	}
	got := RefusedHosts(rs)
	want := []string{"a.example:443 (not in the allowlist)", "x.example:53 (the sandbox resolves no names)", "(more) (9 more)"}
	if !slices.Equal(got, want) {
		b, _ := json.Marshal(got)
		t.Errorf("got %s", b)
	}
}
