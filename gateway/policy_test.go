package gateway

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// resolverMap answers names from a map.
type resolverMap map[string][]string

func (m resolverMap) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := m[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// TestDecide: the addresses an allowed name resolves to are checked, and
// only those that pass are dialled; what is refused says why and what the
// user could allow.
func TestDecide(t *testing.T) {
	g := &Gateway{
		Resolver: resolverMap{
			"ok.example.net":        {"2001:4860::1", "198.18.0.10"},
			"loop.example.net":      {"127.0.0.1"},
			"host.example.net":      {"198.18.0.1"},
			"meta.example.net":      {"169.254.169.254"},
			"mixed.example.net":     {"10.0.0.5", "198.18.0.11"},
			"private.example.net":   {"10.0.0.5"},
			"mapped.example.net":    {"::ffff:127.0.0.1"},
			"nat64.example.net":     {"64:ff9b::a9fe:a9fe"},
			"engine.example.net":    {"172.30.0.9"},
			"gateway.example.net":   {"172.30.0.2"},
			"sixtofour.example.net": {"2002:7f00:1::1"},
			"listed.example.net":    {"10.9.9.9"},
		},
		Base: policy.Classifier{
			Self:   []netip.Addr{netip.MustParseAddr("172.30.0.2")},
			Engine: []netip.Prefix{netip.MustParsePrefix("172.30.0.0/24")},
			Host:   []netip.Prefix{netip.MustParsePrefix("172.30.0.1/32")},
		},
	}
	p := policy.Policy{Sandbox: "demo", Mode: policy.ModeAllowlist, Host: []string{"198.18.0.1"},
		Allow: []string{"*.example.net", "10.9.9.9", "172.30.0.1:8080"}}
	if err := g.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	c := g.current()
	cases := []struct {
		host    string
		port    int
		allowed bool
		addrs   string
		reason  string
		suggest string
	}{
		{"ok.example.net", 443, true, "198.18.0.10 2001:4860::1", "allowed by *.example.net", ""},
		{"loop.example.net", 443, false, "", "loop.example.net resolves to 127.0.0.1, which is loopback, the gateway itself, which a sandbox may never reach", ""},
		{"host.example.net", 443, false, "", "host.example.net resolves to 198.18.0.1, which is the engine's host, refused unless listed by its own address (a network that holds it is not enough)", "198.18.0.1"},
		{"meta.example.net", 80, false, "", "meta.example.net resolves to 169.254.169.254, which is link-local (cloud metadata services live there), refused unless listed by address", "169.254.169.254"},
		{"mixed.example.net", 443, true, "198.18.0.11", "allowed by *.example.net", ""},
		{"private.example.net", 443, false, "", "private.example.net resolves to 10.0.0.5, which is private, refused unless listed by address", "10.0.0.5"},
		{"mapped.example.net", 443, false, "", "mapped.example.net resolves to 127.0.0.1, which is loopback, the gateway itself, which a sandbox may never reach", ""},
		{"nat64.example.net", 443, false, "", "nat64.example.net resolves to 64:ff9b::a9fe:a9fe, which is link-local (cloud metadata services live there), refused unless listed by address", "64:ff9b::a9fe:a9fe"},
		{"engine.example.net", 443, false, "", "engine.example.net resolves to 172.30.0.9, which is a network of the container engine, which a sandbox may never reach", ""},
		{"gateway.example.net", 443, false, "", "gateway.example.net resolves to 172.30.0.2, which is the gateway itself, which a sandbox may never reach", ""},
		{"sixtofour.example.net", 443, false, "", "sixtofour.example.net resolves to 2002:7f00:1::1, which is loopback, the gateway itself, which a sandbox may never reach", ""},
		{"listed.example.net", 443, true, "10.9.9.9", "allowed by *.example.net", ""},
		{"172.30.0.1", 8080, true, "172.30.0.1", "allowed by 172.30.0.1:8080", ""},
		{"172.30.0.1", 80, false, "", "172.30.0.1 is the engine's host, and this address is not in the allowlist", "172.30.0.1"},
		{"169.254.169.254", 80, false, "", "169.254.169.254 is link-local (cloud metadata services live there), and this address is not in the allowlist", "169.254.169.254"},
		{"127.0.0.1", 3128, false, "", "127.0.0.1 is loopback, the gateway itself, which a sandbox may never reach", ""},
		{"198.18.0.10", 443, false, "", "this address is not in the allowlist", "198.18.0.10"},
		{"other.test", 443, false, "", "not in the allowlist", "other.test"},
		{"other.test", 8443, false, "", "not in the allowlist", "other.test:8443"},
	}
	for _, tc := range cases {
		name, lit, err := policy.NormalizeHost(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		d := g.decide(context.Background(), c, name, lit, tc.port)
		var addrs []string
		for _, a := range d.addrs {
			addrs = append(addrs, a.String())
		}
		if d.allowed != tc.allowed || strings.Join(addrs, " ") != tc.addrs || d.reason != tc.reason || d.suggest != tc.suggest || d.err != nil {
			t.Errorf("%s:%d = allowed %v addrs %q reason %q suggest %q err %v\nwant allowed %v addrs %q reason %q suggest %q",
				tc.host, tc.port, d.allowed, addrs, d.reason, d.suggest, d.err, tc.allowed, tc.addrs, tc.reason, tc.suggest)
		}
	}
	// open: any name, but the address rules hold.
	p.Mode, p.Allow = policy.ModeOpen, nil
	if err := g.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if d := g.decide(context.Background(), g.current(), "private.example.net", netip.Addr{}, 443); d.allowed {
		t.Errorf("open mode reached a private address: %+v", d)
	}
	if d := g.decide(context.Background(), g.current(), "ok.example.net", netip.Addr{}, 22); !d.allowed {
		t.Errorf("open mode refused a public address: %+v", d)
	}
	// A name that does not resolve is allowed, and fails.
	if d := g.decide(context.Background(), g.current(), "nx.example.net", netip.Addr{}, 443); !d.allowed || d.err == nil {
		t.Errorf("unresolved: %+v", d)
	}
}

// TestRefusalText: the agent is told the host, the sandbox, why, and what
// the user can run.
func TestRefusalText(t *testing.T) {
	got := refusalText("demo", "api.example.com", 8443, decision{reason: "not in the allowlist", suggest: "api.example.com:8443"})
	want := "litterbox: sandbox demo may not connect to api.example.com:8443: not in the allowlist.\nThe user can allow it with: litterbox net demo allow api.example.com:8443\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = refusalText("demo", "127.0.0.1", 80, decision{reason: "127.0.0.1 is loopback"})
	if !strings.Contains(got, "No policy can allow it.") {
		t.Errorf("got %q", got)
	}
}

// TestHostOnlyListedExactly: a CIDR the user allows does not open the
// engine's host, which answers on every address it has (its bridges'
// among them: `net allow 10.0.0.0/8` reached a host service on 0.0.0.0 at
// 10.213.0.1 and 10.213.0.65); only the host's own address listed does.
func TestHostOnlyListedExactly(t *testing.T) {
	g := &Gateway{
		Resolver: resolverMap{"hosty.example.net": {"10.213.0.65"}},
		Base:     policy.Classifier{Host: []netip.Prefix{netip.MustParsePrefix("10.213.0.65/32")}},
	}
	p := policy.Policy{Sandbox: "demo", Mode: policy.ModeAllowlist, Host: []string{"10.213.0.1"}, Engine: []string{"10.88.0.0/16"},
		Allow: []string{"10.0.0.0/8", "hosty.example.net", "10.213.0.1:8080", "10.88.0.5"}}
	if err := g.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	c := g.current()
	for _, tc := range []struct {
		host    string
		port    int
		allowed bool
	}{
		{"10.213.0.1", 80, false},
		{"10.213.0.65", 80, false},
		{"hosty.example.net", 80, false},
		{"10.213.0.1", 8080, true},
		{"10.1.2.3", 80, true},   // private, in the CIDR: the user's to open
		{"10.88.0.5", 80, false}, // an engine network's (Policy.Engine): never
	} {
		name, lit, _ := policy.NormalizeHost(tc.host)
		d := g.decide(context.Background(), c, name, lit, tc.port)
		if d.allowed != tc.allowed {
			t.Errorf("%s:%d: allowed %v (%s), want %v", tc.host, tc.port, d.allowed, d.reason, tc.allowed)
		}
		if !tc.allowed && !strings.Contains(d.reason, "listed by its own address") && !strings.Contains(d.reason, "a network of the container engine, which a sandbox may never reach") {
			t.Errorf("%s:%d: reason %q", tc.host, tc.port, d.reason)
		}
	}
}

// TestSandboxNameFromFile: a gateway whose policy names no sandbox (made for
// the warm pool) names it as its setup wrote, and only a slug in a regular
// file: not a link (which could point at the gateway's own files), not a
// FIFO (which would hold the refusal up), not text that is no name.
func TestSandboxNameFromFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sandbox.name")
	g := &Gateway{NameFile: path}
	if err := g.SetPolicy(policy.Policy{Mode: policy.ModeNone}); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("no file: %q", got)
	}
	if err := os.WriteFile(path, []byte("fix-login\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "fix-login" {
		t.Errorf("the file's name: %q", got)
	}
	for what, text := range map[string]string{"spaces": "a b", "upper case": "Fix", "a line break": "a\nb", "too long": strings.Repeat("a", 64)} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := g.sandboxName(); got != "NAME" {
			t.Errorf("%s: %q", what, got)
		}
	}
	secret := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secret, []byte("gatewaykey"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("through a link: %q", got)
	}
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("a FIFO: %q", got)
	}
	os.Remove(path)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("a directory: %q", got)
	}
	os.Remove(path)
	// A big file is read no further than a name's length: a slug past
	// what is read is not taken.
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("a big file: %q", got)
	}
	// The policy's name, once the host sets one, wins.
	if err := g.SetPolicy(policy.Policy{Sandbox: "demo", Mode: policy.ModeNone}); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "demo" {
		t.Errorf("the policy's: %q", got)
	}
}

// TestSandboxNameFromKubelet: on Kubernetes the name is the gateway pod's
// claim annotation, which the kubelet writes to a downwardAPI volume as
// links to a directory it swaps at each change (DIR/sandbox ->
// ..data/sandbox, ..data -> ..TIMESTAMP): read through ..data, the file
// itself is no link, and a claim's new name is seen once the kubelet
// swapped ..data.
func TestSandboxNameFromKubelet(t *testing.T) {
	dir := t.TempDir()
	write := func(stamp, name string) {
		t.Helper()
		if err := os.Mkdir(filepath.Join(dir, stamp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stamp, "sandbox"), []byte(name), 0o444); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "..data"))
		if err := os.Symlink(stamp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("..2026_01_01_00_00_00.1", "") // a member: not claimed yet
	if err := os.Symlink("..data/sandbox", filepath.Join(dir, "sandbox")); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{NameFile: filepath.Join(dir, "..data", "sandbox")}
	if err := g.SetPolicy(policy.Policy{Mode: policy.ModeNone}); err != nil {
		t.Fatal(err)
	}
	if got := g.sandboxName(); got != "NAME" {
		t.Errorf("before the claim: %q", got)
	}
	write("..2026_01_01_00_00_01.2", "fix-login")
	if got := g.sandboxName(); got != "fix-login" {
		t.Errorf("after the claim: %q", got)
	}
}
