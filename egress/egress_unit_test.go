package egress

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/provider"
)

// TestConfine: the sandbox loses its network and its ports, which its
// gateway publishes; both mount the volume; the sandbox's clients are
// pointed at the proxy and its resolver at the relay.
func TestConfine(t *testing.T) {
	s := provider.Spec{Name: "litterbox-repo-x", Image: "busybox:latest", Network: provider.NetworkIsolated, User: "1000:1000", Cmd: []string{"sleep", "infinity"},
		Env: []string{"HOME=/tmp"}, Ports: []provider.PortSpec{{Name: "web", Port: 8080}}, HostPorts: provider.PortRange{First: 20000, Last: 20010}}
	p, err := Confine(s, "busybox:latest", policy.Policy{Sandbox: "x", Mode: policy.ModeAllowlist, Allow: []string{"a.example"}}, map[string]string{"k": "v"})
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
	// Bounded as a sandbox is: its memory, its CPU, its log on the host's
	// disk (issue 31: none had a CPU or log limit).
	if gw.Limits.Memory != 256<<20 || gw.Limits.CPUs != 1 || gw.Limits.Log != provider.DefaultLog || gw.Limits.Pids == 0 {
		t.Errorf("gateway limits %+v", gw.Limits)
	}
	if len(gw.Ports) != 1 || gw.HostPorts.First != 20000 || !slices.Equal(p.Ports, []int{8080}) {
		t.Errorf("gateway ports %v %v, relay ports %v", gw.Ports, gw.HostPorts, p.Ports)
	}
	want := provider.Volume{Name: "litterbox-repo-x-gw", Path: Dir}
	is := func(v provider.Volume) bool { return v.Name == want.Name && v.Path == want.Path }
	if !slices.ContainsFunc(sb.Volumes, is) || !slices.ContainsFunc(gw.Volumes, is) || p.Volume.Name != want.Name || p.Volume.Mode != 0o1770 || p.Volume.UID != UID || p.Volume.GID != 1000 {
		t.Errorf("volumes %v %v %+v", sb.Volumes, gw.Volumes, p.Volume)
	}
	cmd := strings.Join(gw.Cmd, " ")
	if !strings.Contains(cmd, `-policy {"sandbox":"x","mode":"allowlist","registries":false,"allow":["a.example"]}`) || !strings.Contains(cmd, "-port 8080") {
		t.Errorf("gateway cmd %q", cmd)
	}
	if got := strings.Join(sb.Cmd, " "); !strings.Contains(got, "do "+Dir+"/litterbox-relay relay -dir "+Dir+" -proxy 127.0.0.1:3128 -dns 127.0.0.1:53 -port 8080; rm -f "+Dir+"/relay.ready; sleep 1; done) & exec \"$@\" sh sleep infinity") || !strings.HasPrefix(got, "sh -c (rm -f "+Dir+"/relay.ready; until") {
		t.Errorf("sandbox cmd %q", got)
	}
	// From a gateway image: the main process copies the relay from the
	// image onto the volume, then becomes the image's program (not a copy
	// of it), with the same arguments.
	p.FromImage("litterbox-gateway:abc")
	img := strings.Join(p.Gateway.Cmd, " ")
	if p.Gateway.Image != "litterbox-gateway:abc" || strings.Contains(img, "cat ") || !strings.Contains(img, "cp "+ImageProgram+` "$r"`) ||
		!strings.Contains(img, "mv -f \"$r\" "+Dir+"/litterbox-relay") || !strings.Contains(img, "exec "+ImageProgram+` "$@" sh serve -dir `+Dir) || !strings.Contains(img, "-port 8080") {
		t.Errorf("gateway from its image: %q", img)
	}
	if _, err := Confine(s, "busybox", policy.Policy{Mode: "wide"}, nil); err == nil {
		t.Error("a bad policy was planned")
	}
}

// TestConfineLinked: on an engine that links the two by network the
// sandbox keeps its network and its ports (the engine forwards them to
// it), gets no volume, resolver or sysctl, and its clients are pointed at
// the gateway by the engine's name for it; both Specs carry one Link; the
// gateway serves on its own address, binds port 53, and may not reach the
// engine's networks.
func TestConfineLinked(t *testing.T) {
	s := provider.Spec{Name: "litterbox-repo-x", Image: "busybox:latest", Network: provider.NetworkIsolated, User: "1000:1000", Cmd: []string{"sleep", "infinity"},
		Ports: []provider.PortSpec{{Name: "web", Port: 8080}}}
	p, err := ConfineLinked(s, "busybox:latest", policy.Policy{Sandbox: "x", Mode: policy.ModeAllowlist, Engine: []string{"10.96.0.0/16"}}, nil, "litterbox-gateway", "/claim/..data/sandbox")
	if err != nil {
		t.Fatal(err)
	}
	sb, gw := p.Sandbox, p.Gateway
	if sb.Network != provider.NetworkIsolated || len(sb.Ports) != 1 || len(sb.Volumes) != 0 || len(sb.DNS) != 0 || len(sb.Sysctls) != 0 || !slices.Equal(sb.Cmd, s.Cmd) {
		t.Errorf("sandbox %+v", sb)
	}
	if !slices.Contains(sb.Env, "http_proxy=http://litterbox-gateway:3128") || !slices.Contains(sb.Env, "NO_PROXY=localhost,127.0.0.1,::1") {
		t.Errorf("sandbox env %q", sb.Env)
	}
	p.NameGateway("litterbox-repo-x-abc-gw")
	gw = p.Gateway
	l := sb.Link
	if l == nil || l != gw.Link || l.Sandbox != s.Name || l.Gateway != "litterbox-repo-x-abc-gw" || gw.Name != l.Gateway ||
		!slices.Equal(l.TCP, []int{3128, 53}) || !slices.Equal(l.UDP, []int{53}) || !slices.Equal(l.Closed, []string{"10.96.0.0/16"}) || !p.Linked() {
		t.Errorf("link %+v, gateway %q", l, gw.Name)
	}
	if gw.User != "65532:1000" || !gw.ReadOnlyRoot || !gw.DropCaps || gw.Sysctls["net.ipv4.ip_unprivileged_port_start"] != "0" || len(gw.Volumes) != 0 || len(gw.Ports) != 0 {
		t.Errorf("gateway %+v", gw)
	}
	if cmd := strings.Join(gw.Cmd, " "); !strings.Contains(cmd, "sh serve -dir "+ProgramDir+" -listen :3128 -dns :53 -name-file /claim/..data/sandbox -policy {") {
		t.Errorf("gateway cmd %q", cmd)
	}
}

// TestStore: records append after a note of what was lost, the cursor
// follows, and the files stay bounded.
func TestStore(t *testing.T) {
	s := Store{File: filepath.Join(t.TempDir(), "x", "net.jsonl"), Max: 2000}
	now := time.Unix(1000, 0).UTC()
	batch := func(boot string, lost int64, from, to uint64) control.Batch {
		b := control.Batch{Boot: boot, Now: now, Lost: lost, Last: to}
		for i := from; i <= to; i++ {
			b.Records = append(b.Records, control.Record{Seq: i, Time: now, Kind: "connect", Host: "h.example", Port: 443, Reason: "not in the allowlist"})
		}
		return b
	}
	if err := s.Append(batch("b1", 0, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Cursor(); c != (Cursor{"b1", 3}) {
		t.Errorf("cursor %+v", c)
	}
	if err := s.Append(control.Batch{Boot: "b1", Now: now, Last: 3}); err != nil {
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
	rs := []control.Record{
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

// TestBookKeepsTheAttempt is issue 31's erasure: an exfiltration attempt,
// then refusals made huge, then 17,000 allowed requests before the host
// collects. The record of connections loses the attempt (the ring moved
// on); the book, from the gateway's refusals table, keeps it, counted,
// and no number of refusals grows it past its room.
func TestBookKeepsTheAttempt(t *testing.T) {
	a := gateway.NewAudit(gateway.DefaultAuditSize, nil)
	s := Store{File: filepath.Join(t.TempDir(), "net.jsonl")}
	collect := func() int64 {
		t.Helper()
		var all int64
		for {
			c, _ := s.Cursor()
			b := a.Since(c.Boot, c.Seq, 4096)
			if err := s.Append(b); err != nil {
				t.Fatal(err)
			}
			if b.Refusals != nil {
				n, err := s.MergeRefusals(*b.Refusals)
				if err != nil {
					t.Fatal(err)
				}
				all += n
			}
			if len(b.Records) == 0 || b.Records[len(b.Records)-1].Seq >= b.Last {
				return all
			}
		}
	}
	a.Add(control.Record{Kind: "https", Host: "evil.example", Port: 443, Secret: "api", Reason: "exfiltration attempt: the placeholder of secret api sent to evil.example:443"})
	huge := strings.Repeat("x", 60<<10)
	for range 3 {
		a.Add(control.Record{Kind: "connect", Host: huge, Port: 443, Reason: "not in the allowlist " + huge})
	}
	for range 17000 {
		a.Add(control.Record{Kind: "http", Host: "allowed.example", Port: 80, Allowed: true})
	}
	if n := collect(); n != 4 {
		t.Errorf("collected %d refusals, want 4", n)
	}
	// (The record of connections says records were lost, the attempt
	// among them: 17,004 is past the ring.)
	if rs, _ := s.Records(0); !slices.ContainsFunc(rs, func(r control.Record) bool { return r.Kind == "lost" }) {
		t.Errorf("no loss recorded")
	}
	book, err := s.Book()
	if err != nil {
		t.Fatal(err)
	}
	if book.Total != 4 || len(book.Entries) != 2 || book.Entries[0].Host != "evil.example" || book.Entries[0].Secret != "api" {
		t.Fatalf("the book: %+v", book.Entries)
	}
	// Collected again, nothing new: nothing counted twice.
	a.Add(control.Record{Kind: "https", Host: "evil.example", Port: 443, Secret: "api"})
	if n := collect(); n != 1 {
		t.Errorf("collected %d, want 1", n)
	}
	// A flood of distinct refusals: the book keeps its room, counts the rest.
	for i := range 2000 {
		a.Add(control.Record{Kind: "connect", Host: fmt.Sprintf("h%d.example", i), Port: 443})
	}
	collect()
	if book, _ = s.Book(); book.Total != 2005 || len(book.Entries) != control.MaxRefusals+1 || book.Other != 2000-control.MaxRefusals+1 || book.Entries[0].Count != 2 {
		t.Errorf("after a flood: total %d, %d entries, other %d, first %+v", book.Total, len(book.Entries), book.Other, book.Entries[0])
	}
	if fi, err := os.Stat(s.BookFile()); err != nil || fi.Size() > 2<<20 {
		t.Errorf("the book's file: %v %v", fi, err)
	}
	// The gateway restarted: its new run's counts add to the book.
	b := gateway.NewAudit(10, nil)
	b.Add(control.Record{Kind: "https", Host: "evil.example", Port: 443, Secret: "api"})
	if _, err := s.MergeRefusals(*b.Since("", 0, 10).Refusals); err != nil {
		t.Fatal(err)
	}
	if book, _ = s.Book(); book.Entries[0].Count != 3 || book.Total != 2006 {
		t.Errorf("after a restart: %+v, total %d", book.Entries[0], book.Total)
	}
}
