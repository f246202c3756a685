package policy

import (
	"net/netip"
	"strings"
	"testing"
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
		e, err := ParseEntry(in)
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
		_, err := ParseEntry(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func mustCompile(t testing.TB, p Policy) *Compiled {
	t.Helper()
	c, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	c.Classifier = &Classifier{Host: c.HostPrefixes, Engine: c.EnginePrefixes}
	return c
}

func TestJudgeName(t *testing.T) {
	c := mustCompile(t, Policy{Mode: ModeAllowlist, Registries: true,
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
		name, lit, err := NormalizeHost(tc.host)
		if err != nil {
			t.Fatal(err)
		}
		v := c.JudgeName(name, lit, tc.port)
		if v.Allowed != tc.want || v.By != tc.by {
			t.Errorf("%s:%d = %v %q, want %v %q", tc.host, tc.port, v.Allowed, v.By, tc.want, tc.by)
		}
	}
	none := mustCompile(t, Policy{Mode: ModeNone, Allow: []string{"api.example.com"}})
	if v := none.JudgeName("api.example.com", netip.Addr{}, 443); v.Allowed || v.By != "egress is none" {
		t.Errorf("none: %+v", v)
	}
	open := mustCompile(t, Policy{Mode: ModeOpen, Deny: []string{"*.example.org"}})
	if v := open.JudgeName("anything.example.com", netip.Addr{}, 25); !v.Allowed {
		t.Errorf("open: %+v", v)
	}
	if v := open.JudgeName("x.example.org", netip.Addr{}, 443); v.Allowed {
		t.Errorf("open with deny: %+v", v)
	}
}

func TestCompileRefuses(t *testing.T) {
	for _, p := range []Policy{
		{},
		{Mode: "closed"},
		{Mode: ModeAllowlist, Allow: []string{"ok.example", "not ok"}},
		{Mode: ModeAllowlist, Host: []string{"example.com"}},
		{Mode: ModeAllowlist, Engine: []string{"10.0.0.0/8:80"}},
	} {
		if _, err := Compile(p); err == nil {
			t.Errorf("Compile(%+v) succeeded", p)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "[::1]": "::1", "::ffff:127.0.0.1": "127.0.0.1", "10.0.0.1": "10.0.0.1",
	} {
		name, lit, err := NormalizeHost(in)
		got := name
		if name == "" {
			got = lit.String()
		}
		if err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a b", "127.1", "fe80::1%eth0", "x..y", "bücher.de"} {
		if _, _, err := NormalizeHost(in); err == nil {
			t.Errorf("NormalizeHost(%q) accepted", in)
		}
	}
}

func TestClassify(t *testing.T) {
	k := &Classifier{
		Self:   []netip.Addr{netip.MustParseAddr("172.30.0.2")},
		Engine: []netip.Prefix{netip.MustParsePrefix("172.30.0.0/24"), netip.MustParsePrefix("10.213.0.0/16")},
		Host:   []netip.Prefix{netip.MustParsePrefix("172.30.0.1/32"), netip.MustParsePrefix("203.0.113.5/32")},
	}
	for s, want := range map[string]Class{
		"8.8.8.8":           ClassPublic,
		"198.18.0.10":       ClassPublic,
		"2606:4700::1111":   ClassPublic,
		"0.0.0.0":           ClassUnspecified,
		"::":                ClassUnspecified,
		"127.0.0.1":         ClassLoopback,
		"127.255.0.1":       ClassLoopback,
		"::1":               ClassLoopback,
		"::ffff:127.0.0.1":  ClassLoopback,
		"172.30.0.2":        ClassSelf,
		"172.30.0.9":        ClassEngine,
		"10.213.4.4":        ClassEngine,
		"172.30.0.1":        ClassHost,
		"203.0.113.5":       ClassHost,
		"203.0.113.6":       ClassReserved,
		"169.254.169.254":   ClassLinkLocal,
		"fe80::1":           ClassLinkLocal,
		"fd00:ec2::254":     ClassPrivate,
		"10.1.1.1":          ClassPrivate,
		"172.16.0.1":        ClassPrivate,
		"192.168.1.1":       ClassPrivate,
		"100.64.0.1":        ClassShared,
		"100.100.100.200":   ClassShared,
		"224.0.0.1":         ClassMulticast,
		"255.255.255.255":   ClassMulticast,
		"ff02::1":           ClassMulticast,
		"240.0.0.1":         ClassReserved,
		"0.1.2.3":           ClassReserved,
		"192.0.0.170":       ClassReserved,
		"2001:db8::1":       ClassReserved,
		"2001::1":           ClassReserved,
		"64:ff9b::808:808":  ClassPublic,
		"64:ff9b::a00:1":    ClassPrivate,
		"64:ff9b::7f00:1":   ClassLoopback,
		"2002:a9fe:a9fe::1": ClassLinkLocal,
		"2002:808:808::1":   ClassPublic,
		"::127.0.0.1":       ClassReserved,
		"64:ff9b:1::a00:1":  ClassReserved,
		// Issue 31: these were public. IPv4-translated (::ffff:0:0:0/96,
		// RFC 2765) by the address it embeds, as NAT64's; site-local
		// fec0::/10 (deprecated, still routed inside sites) as private;
		// the rest of fe00::/9 as reserved.
		"::ffff:0:7f00:1":    ClassLoopback,
		"::ffff:0:a9fe:a9fe": ClassLinkLocal,
		"::ffff:0:808:808":   ClassPublic,
		"::ffff:0:0":         ClassUnspecified,
		"fec0::1":            ClassPrivate,
		"fe00::1":            ClassReserved,
		"fe7f::1":            ClassReserved,
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
		e, err := ParseEntry(s)
		if err != nil {
			return
		}
		e2, err := ParseEntry(e.Text)
		if err != nil || e2 != e {
			t.Fatalf("%q -> %q -> %+v, %v", s, e.Text, e2, err)
		}
		name, lit, err := NormalizeHost(host)
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
		mode := ModeAllowlist
		if open {
			mode = ModeOpen
		}
		c, err := Compile(Policy{Mode: mode, Allow: []string{allow}, Deny: []string{deny}})
		if err != nil {
			return
		}
		c.Classifier = &Classifier{}
		name, lit, err := NormalizeHost(host)
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
