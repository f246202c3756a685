package gateway

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

func TestParseEntry(t *testing.T) {
	good := map[string]string{
		"example.com":           "example.com",
		" Example.COM ":         "example.com",
		"*.example.org":         "*.example.org",
		"git.example.net:443":   "git.example.net:443",
		"10.1.2.3":              "10.1.2.3",
		"10.1.2.3:5432":         "10.1.2.3:5432",
		"10.0.0.0/8":            "10.0.0.0/8",
		"10.9.0.0/8:5432":       "10.0.0.0/8:5432",
		"2001:db8::1":           "2001:db8::1",
		"[2001:db8::1]:443":     "[2001:db8::1]:443",
		"2001:db8::/32":         "2001:db8::/32",
		"[2001:db8::/32]:443":   "[2001:db8::/32]:443",
		"::ffff:10.1.2.3":       "10.1.2.3",
		"_acme.example.com":     "_acme.example.com",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
	}
	for in, want := range good {
		e, err := policy.ParseEntry(in)
		if err != nil {
			t.Errorf("ParseEntry(%q): %v", in, err)
			continue
		}
		if e.Text != want {
			t.Errorf("ParseEntry(%q) = %q, want %q", in, e.Text, want)
		}
	}
	bad := map[string]string{
		"":                               "empty",
		"example.com:0":                  "port",
		"example.com:65536":              "port",
		"example.com:08":                 "port",
		"example.com:":                   "empty port",
		"example.com:+1":                 "port",
		"*":                              "holds",
		"*.com":                          "top-level",
		"a.*.example.com":                "holds",
		"exa mple.com":                   "holds",
		"bücher.example":                 "punycode",
		"127.1":                          "neither",
		"0x7f.1":                         "neither",
		"1.2.3.4.5":                      "neither",
		"example..com":                   "empty label",
		"[example.com]:443":              "IPv6",
		"[2001:db8::1":                   "missing ]",
		"fe80::1%eth0":                   "zone",
		"10.0.0.0/33":                    "CIDR",
		strings.Repeat("a", 64) + ".com": "63",
	}
	for in, want := range bad {
		_, err := policy.ParseEntry(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func mustCompile(t testing.TB, p policy.Policy) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	c.Classifier = &policy.Classifier{Host: c.HostPrefixes, Engine: c.EnginePrefixes}
	return c
}

func TestJudgeName(t *testing.T) {
	c := mustCompile(t, policy.Policy{Mode: policy.ModeAllowlist, Registries: true,
		Allow: []string{"api.example.com", "*.example.org", "git.example.net:8443", "10.1.2.3", "192.168.0.0/16:5432"},
		Deny:  []string{"bad.example.org", "pypi.org"}})
	cases := []struct {
		host string
		port int
		want bool
		by   string
	}{
		{"api.example.com", 443, true, "allowed by api.example.com"},
		{"api.example.com", 80, true, "allowed by api.example.com"},
		{"api.example.com", 8080, false, "port 8080 is not allowed for this name (api.example.com allows ports 80 and 443)"},
		{"www.api.example.com", 443, false, "not in the allowlist"},
		{"example.com", 443, false, "not in the allowlist"},
		{"a.example.org", 443, true, "allowed by *.example.org"},
		{"a.b.example.org", 443, true, "allowed by *.example.org"},
		{"example.org", 443, false, "not in the allowlist"},
		{"badexample.org", 443, false, "not in the allowlist"},
		{"bad.example.org", 443, false, "denied by bad.example.org"},
		{"git.example.net", 8443, true, "allowed by git.example.net:8443"},
		{"git.example.net", 443, false, "port 443 is not allowed for this name (git.example.net:8443 allows port 8443)"},
		{"proxy.golang.org", 443, true, "allowed by the registries preset (proxy.golang.org)"},
		{"pypi.org", 443, false, "denied by pypi.org"},
		{"10.1.2.3", 22, true, "allowed by 10.1.2.3"},
		{"10.1.2.4", 443, false, "this address is not in the allowlist"},
		{"192.168.7.7", 5432, true, "allowed by 192.168.0.0/16:5432"},
		{"192.168.7.7", 443, false, "this address is not in the allowlist"},
	}
	for _, tc := range cases {
		name, lit, err := policy.NormalizeHost(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		v := c.JudgeName(name, lit, tc.port)
		if v.Allowed != tc.want || v.By != tc.by {
			t.Errorf("%s:%d = %v %q, want %v %q", tc.host, tc.port, v.Allowed, v.By, tc.want, tc.by)
		}
	}
	none := mustCompile(t, policy.Policy{Mode: policy.ModeNone, Allow: []string{"api.example.com"}})
	if v := none.JudgeName("api.example.com", netip.Addr{}, 443); v.Allowed || v.By != "egress is none" {
		t.Errorf("none: %+v", v)
	}
	open := mustCompile(t, policy.Policy{Mode: policy.ModeOpen, Deny: []string{"*.example.org"}})
	if v := open.JudgeName("anything.example.com", netip.Addr{}, 25); !v.Allowed {
		t.Errorf("open: %+v", v)
	}
	if v := open.JudgeName("x.example.org", netip.Addr{}, 443); v.Allowed {
		t.Errorf("open with deny: %+v", v)
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, p := range []policy.Policy{
		{},
		{Mode: "closed"},
		{Mode: policy.ModeAllowlist, Allow: []string{"ok.example", "not ok"}},
		{Mode: policy.ModeAllowlist, Host: []string{"example.com"}},
		{Mode: policy.ModeAllowlist, Engine: []string{"10.0.0.0/8:80"}},
	} {
		if _, err := policy.Compile(p); err == nil {
			t.Errorf("Compile(%+v) succeeded", p)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "[::1]": "::1", "::ffff:127.0.0.1": "127.0.0.1", "10.0.0.1": "10.0.0.1",
	} {
		name, lit, err := policy.NormalizeHost(in)
		got := name
		if name == "" {
			got = lit.String()
		}
		if err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a b", "127.1", "fe80::1%eth0", "x..y", "bücher.de"} {
		if _, _, err := policy.NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) accepted", in)
		}
	}
}

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
	got := refusalText(policy.Policy{Sandbox: "demo"}, "api.example.com", 8443, decision{reason: "not in the allowlist", suggest: "api.example.com:8443"})
	want := "litterbox: sandbox demo may not connect to api.example.com:8443: not in the allowlist.\nThe user can allow it with: litterbox net demo allow api.example.com:8443\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = refusalText(policy.Policy{Sandbox: "demo"}, "127.0.0.1", 80, decision{reason: "127.0.0.1 is loopback"})
	if !strings.Contains(got, "No policy can allow it.") {
		t.Errorf("got %q", got)
	}
}

func TestClassify(t *testing.T) {
	k := &policy.Classifier{
		Self:   []netip.Addr{netip.MustParseAddr("172.30.0.2")},
		Engine: []netip.Prefix{netip.MustParsePrefix("172.30.0.0/24"), netip.MustParsePrefix("10.213.0.0/16")},
		Host:   []netip.Prefix{netip.MustParsePrefix("172.30.0.1/32"), netip.MustParsePrefix("203.0.113.5/32")},
	}
	for s, want := range map[string]policy.Class{
		"8.8.8.8":           policy.ClassPublic,
		"198.18.0.10":       policy.ClassPublic,
		"2606:4700::1111":   policy.ClassPublic,
		"0.0.0.0":           policy.ClassUnspecified,
		"::":                policy.ClassUnspecified,
		"127.0.0.1":         policy.ClassLoopback,
		"127.255.0.1":       policy.ClassLoopback,
		"::1":               policy.ClassLoopback,
		"::ffff:127.0.0.1":  policy.ClassLoopback,
		"172.30.0.2":        policy.ClassSelf,
		"172.30.0.9":        policy.ClassEngine,
		"10.213.4.4":        policy.ClassEngine,
		"172.30.0.1":        policy.ClassHost,
		"203.0.113.5":       policy.ClassHost,
		"203.0.113.6":       policy.ClassReserved,
		"169.254.169.254":   policy.ClassLinkLocal,
		"fe80::1":           policy.ClassLinkLocal,
		"fd00:ec2::254":     policy.ClassPrivate,
		"10.1.1.1":          policy.ClassPrivate,
		"172.16.0.1":        policy.ClassPrivate,
		"192.168.1.1":       policy.ClassPrivate,
		"100.64.0.1":        policy.ClassShared,
		"100.100.100.200":   policy.ClassShared,
		"224.0.0.1":         policy.ClassMulticast,
		"255.255.255.255":   policy.ClassMulticast,
		"ff02::1":           policy.ClassMulticast,
		"240.0.0.1":         policy.ClassReserved,
		"0.1.2.3":           policy.ClassReserved,
		"192.0.0.170":       policy.ClassReserved,
		"2001:db8::1":       policy.ClassReserved,
		"2001::1":           policy.ClassReserved,
		"64:ff9b::808:808":  policy.ClassPublic,
		"64:ff9b::a00:1":    policy.ClassPrivate,
		"64:ff9b::7f00:1":   policy.ClassLoopback,
		"2002:a9fe:a9fe::1": policy.ClassLinkLocal,
		"2002:808:808::1":   policy.ClassPublic,
		"::127.0.0.1":       policy.ClassReserved,
		"64:ff9b:1::a00:1":  policy.ClassReserved,
		// Issue 31: these were public. IPv4-translated (::ffff:0:0:0/96,
		// RFC 2765) by the address it embeds, as NAT64's; site-local
		// fec0::/10 (deprecated, still routed inside sites) as private;
		// the rest of fe00::/9 as reserved.
		"::ffff:0:7f00:1":    policy.ClassLoopback,
		"::ffff:0:a9fe:a9fe": policy.ClassLinkLocal,
		"::ffff:0:808:808":   policy.ClassPublic,
		"::ffff:0:0":         policy.ClassUnspecified,
		"fec0::1":            policy.ClassPrivate,
		"fe00::1":            policy.ClassReserved,
		"fe7f::1":            policy.ClassReserved,
	} {
		if got := k.Classify(netip.MustParseAddr(s)); got != want {
			t.Errorf("Classify(%s) = %v, want %v", s, got, want)
		}
	}
}

// FuzzParseEntry: what parses prints in a form that parses to the same
// entry, and a name entry matches exactly the names it says.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.org:8443", "10.0.0.0/8", "[2001:db8::1]:443", "a:b:c", "[::]:0"} {
		f.Add(s, "x.example.org", 443)
	}
	f.Fuzz(func(t *testing.T, s, host string, port int) {
		e, err := policy.ParseEntry(s)
		if err != nil {
			return
		}
		e2, err := policy.ParseEntry(e.Text)
		if err != nil || e2 != e {
			t.Fatalf("%q -> %q -> %+v, %v", s, e.Text, e2, err)
		}
		name, lit, err := policy.NormalizeHost(host)
		if err != nil || port < 1 || port > 65535 {
			return
		}
		if e.Name != "" && name != "" && e.MatchesName(name, port) {
			if e.Wildcard && (name == e.Name || !strings.HasSuffix(name, "."+e.Name)) {
				t.Fatalf("%q matched %q", e.Text, name)
			}
			if !e.Wildcard && name != e.Name {
				t.Fatalf("%q matched %q", e.Text, name)
			}
			if e.Port != 0 && e.Port != port || e.Port == 0 && port != 80 && port != 443 {
				t.Fatalf("%q matched port %d", e.Text, port)
			}
		}
		if lit.IsValid() && e.MatchesName(name, port) {
			t.Fatalf("a name entry matched address %s", lit)
		}
	})
}

// FuzzJudge: whatever the entries and the target, a deny entry that
// matches wins, and nothing panics.
func FuzzJudge(f *testing.F) {
	f.Add("a.example.com", "*.example.com", "a.example.com", 443, false)
	f.Add("10.0.0.0/8", "10.1.0.0/16", "10.1.2.3", 22, true)
	f.Fuzz(func(t *testing.T, allow, deny, host string, port int, open bool) {
		mode := policy.ModeAllowlist
		if open {
			mode = policy.ModeOpen
		}
		c, err := policy.Compile(policy.Policy{Mode: mode, Allow: []string{allow}, Deny: []string{deny}})
		if err != nil {
			return
		}
		c.Classifier = &policy.Classifier{}
		name, lit, err := policy.NormalizeHost(host)
		if err != nil || port < 1 || port > 65535 {
			return
		}
		v := c.JudgeName(name, lit, port)
		d := c.DenyEntries[0]
		if (name != "" && d.MatchesName(name, port) || name == "" && d.MatchesAddr(lit, port)) && v.Allowed {
			t.Fatalf("deny %q did not win for %s:%d", deny, host, port)
		}
		if !open && v.Allowed {
			a := c.AllowEntries[0]
			if !(name != "" && a.MatchesName(name, port) || name == "" && a.MatchesAddr(lit, port)) {
				t.Fatalf("allowed %s:%d without a matching entry (%q)", host, port, allow)
			}
		}
	})
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
