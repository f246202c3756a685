// Package policy is the egress gateway's policy language: the modes, the
// allow and deny entries (a name, a wildcard, an address or CIDR, with a
// port), the classes of addresses a sandbox may never reach or reach only
// when listed, and the compiled policy's rules that judge a target. The
// host writes a Policy (from the user's configuration and `litterbox net`)
// and the gateway (package gateway) enforces it; both import this package,
// and the host links none of the program.
package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Mode is how much of the network a sandbox may reach.
type Mode string

// The modes of a policy.
const (
	// ModeNone refuses every connection (each is still recorded).
	ModeNone Mode = "none"
	// ModeAllowlist allows the names and addresses the policy lists (and
	// the registries preset when it is on), nothing else.
	ModeAllowlist Mode = "allowlist"
	// ModeOpen allows every name on every port. The address rules still
	// hold: private, loopback, link-local, the engine's host and networks
	// are refused unless listed by address.
	ModeOpen Mode = "open"
)

// Policy is everything the gateway of one sandbox decides with. The host
// writes it (at start, and through the control socket); nothing in the
// sandbox can. It travels as JSON.
type Policy struct {
	// Sandbox is the sandbox's name, used in what a refusal tells the
	// agent (the command the user can run).
	Sandbox string `json:"sandbox"`
	Mode    Mode   `json:"mode"`
	// Registries adds the built-in allowlist of package registries
	// (Registries) in allowlist mode.
	Registries bool `json:"registries"`
	// Allow and Deny are entries (ParseEntry): a name, `*.` and a name, or
	// an IP address or CIDR, each with an optional `:port`. Deny wins.
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// Host are the addresses of the engine's host (found by the host with
	// a probe of the engine): refused unless listed by address.
	Host []string `json:"host,omitempty"`
	// Engine are CIDRs of the engine's networks: always refused, so that
	// no sandbox reaches another's containers through its gateway. The
	// networks the gateway itself is on are added by the gateway.
	Engine []string `json:"engine,omitempty"`
}

// Registries is the built-in allowlist of package registries: what `go mod
// download`, `pip install`, `npm install`, `cargo fetch` and `apt-get
// install` on Debian and Ubuntu reach by default, on ports 443 and 80.
// docs/egress.md lists why each is there.
var Registries = []string{
	// Go: the module proxy, its checksum database, and Google Cloud
	// Storage, where the proxy redirects module zips
	// (https://github.com/golang/go/issues/52908).
	"proxy.golang.org", "sum.golang.org", "storage.googleapis.com",
	// Python: the index and the files it links to.
	"pypi.org", "files.pythonhosted.org",
	// npm.
	"registry.npmjs.org",
	// Rust: the sparse index, the download redirect and its target.
	"index.crates.io", "crates.io", "static.crates.io",
	// Debian and Ubuntu archives.
	"deb.debian.org", "security.debian.org",
	"archive.ubuntu.com", "security.ubuntu.com", "ports.ubuntu.com",
}

// Entry is one parsed allow or deny entry.
type Entry struct {
	// Text is the entry as written (normalized), for what is shown.
	Text string
	// Name is the host name, without its `*.` prefix, or "" for an
	// address entry.
	Name string
	// Wildcard makes Name match its subdomains (and not itself).
	Wildcard bool
	// Prefix is the address or CIDR of an address entry.
	Prefix netip.Prefix
	// Port is the one port allowed, or 0 for the default ports (80 and
	// 443) of a name entry, or any port of an address entry.
	Port int
}

// DefaultPorts are the ports a name entry without a port allows.
var DefaultPorts = []int{80, 443}

// ParseEntry parses an allow or deny entry: `example.com`,
// `*.example.com`, `example.com:8443`, `10.1.2.3`, `10.0.0.0/8:5432`,
// `[2001:db8::1]:443`, `2001:db8::/32`.
func ParseEntry(s string) (Entry, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return Entry{}, errors.New("empty entry")
	}
	hostPart, port, err := splitEntryPort(t)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %q: %w", s, err)
	}
	e := Entry{Port: port}
	if strings.Contains(hostPart, "/") {
		p, err := netip.ParsePrefix(hostPart)
		if err != nil || p.Addr().Zone() != "" {
			return Entry{}, fmt.Errorf("entry %q: %q is not a CIDR such as 10.0.0.0/8", s, hostPart)
		}
		e.Prefix = p.Masked()
	} else if a, err := netip.ParseAddr(hostPart); err == nil {
		if a.Zone() != "" {
			return Entry{}, fmt.Errorf("entry %q: an address with a zone cannot be reached through the gateway", s)
		}
		a = a.Unmap()
		e.Prefix = netip.PrefixFrom(a, a.BitLen())
	} else {
		name := hostPart
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			e.Wildcard, name = true, rest
		}
		if err := CheckName(name); err != nil {
			return Entry{}, fmt.Errorf("entry %q: %w", s, err)
		}
		if e.Wildcard && !strings.Contains(name, ".") {
			return Entry{}, fmt.Errorf("entry %q: a wildcard needs at least two labels after `*.` (`*.example.com`), not a top-level domain", s)
		}
		e.Name = name
	}
	e.Text = e.String()
	return e, nil
}

// String writes the entry in the form ParseEntry reads.
func (e Entry) String() string {
	var h string
	switch {
	case e.Name != "" && e.Wildcard:
		h = "*." + e.Name
	case e.Name != "":
		h = e.Name
	case e.Prefix.IsSingleIP():
		h = e.Prefix.Addr().String()
	default:
		h = e.Prefix.String()
	}
	if e.Port == 0 {
		return h
	}
	if e.Name == "" && e.Prefix.Addr().Is6() {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(e.Port)
}

// splitEntryPort splits an optional port off an entry.
func splitEntryPort(t string) (string, int, error) {
	var host, port string
	switch {
	case strings.HasPrefix(t, "["):
		end := strings.Index(t, "]")
		if end < 0 {
			return "", 0, errors.New("missing ]")
		}
		host = t[1:end]
		rest := t[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", 0, fmt.Errorf("unexpected %q after ]", rest)
			}
			port = p
		}
		if !strings.Contains(host, ":") {
			return "", 0, errors.New("brackets are for IPv6 addresses only")
		}
	case strings.Count(t, ":") == 1:
		host, port, _ = strings.Cut(t, ":")
		if port == "" {
			return "", 0, errors.New("empty port")
		}
	default: // a name, an IPv4 address, or a bare IPv6 address or CIDR ("2001:db8::" ends in a colon)
		host = t
	}
	if port == "" {
		if strings.HasSuffix(t, "]:") {
			return "", 0, errors.New("empty port")
		}
		return host, 0, nil
	}
	n, err := ParsePort(port)
	if err != nil {
		return "", 0, err
	}
	return host, n, nil
}

func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 || s[0] == '0' || s[0] == '+' {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return n, nil
}

// CheckName checks a host name: ASCII letters, digits, `-` and `_` in
// labels of 1 to 63, at most 253 in all, and a last label that is not all
// digits (so that `127.1` or `0x7f.1` is never taken for a name that a
// resolver might read as an address).
func CheckName(name string) error {
	if name == "" {
		return errors.New("empty host name")
	}
	if len(name) > 253 {
		return errors.New("host name longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return fmt.Errorf("host name %q has an empty label", name)
		}
		if len(l) > 63 {
			return fmt.Errorf("host name %q has a label longer than 63 characters", name)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c >= 0x80 {
				return fmt.Errorf("host name %q is not ASCII: write it in its xn-- (punycode) form", name)
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host name %q holds %q, which no host name holds", name, string(c))
			}
		}
	}
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return fmt.Errorf("%q is neither an IP address nor a host name", name)
	}
	return nil
}

// NormalizeHost lower-cases a host of a request, drops a trailing dot and
// checks it: it returns the name, or the address when the host is an IP
// address (IPv6 with or without brackets).
func NormalizeHost(h string) (name string, addr netip.Addr, err error) {
	h = strings.ToLower(h)
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("address %q has a zone", h)
		}
		return "", a.Unmap(), nil
	}
	h = strings.TrimSuffix(h, ".")
	if err := CheckName(h); err != nil {
		return "", netip.Addr{}, err
	}
	return h, netip.Addr{}, nil
}

// Compiled is a policy ready to judge with: its entries parsed.
type Compiled struct {
	Policy
	// AllowEntries, DenyEntries and RegistryEntries are Allow's, Deny's
	// and the registries preset's (when Registries is on) entries.
	AllowEntries    []Entry
	DenyEntries     []Entry
	RegistryEntries []Entry
	// HostPrefixes and EnginePrefixes are Host's and Engine's.
	HostPrefixes   []netip.Prefix
	EnginePrefixes []netip.Prefix
	// Classifier is set by the gateway that uses the policy.
	Classifier *Classifier
}

// Compile checks p and parses its entries.
func Compile(p Policy) (*Compiled, error) {
	switch p.Mode {
	case ModeNone, ModeAllowlist, ModeOpen:
	case "":
		return nil, errors.New("policy: no mode (none, allowlist or open)")
	default:
		return nil, fmt.Errorf("policy: mode %q is not none, allowlist or open", p.Mode)
	}
	c := &Compiled{Policy: p}
	var errs []error
	parse := func(list []string) []Entry {
		var out []Entry
		for _, s := range list {
			e, err := ParseEntry(s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, e)
		}
		return out
	}
	c.AllowEntries, c.DenyEntries = parse(p.Allow), parse(p.Deny)
	if p.Registries {
		c.RegistryEntries = parse(Registries)
	}
	prefixes := func(what string, list []string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range list {
			e, err := ParseEntry(s)
			if err != nil || e.Name != "" || e.Port != 0 {
				errs = append(errs, fmt.Errorf("policy: %s %q is not an address or CIDR", what, s))
				continue
			}
			out = append(out, e.Prefix)
		}
		return out
	}
	c.HostPrefixes, c.EnginePrefixes = prefixes("host address", p.Host), prefixes("engine network", p.Engine)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// ParsePolicy reads a policy from JSON and compiles it.
func ParsePolicy(b []byte) (Policy, error) {
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	_, err := Compile(p)
	return p, err
}

// PortMatches reports whether entry e allows port.
func (e Entry) PortMatches(port int) bool {
	if e.Port != 0 {
		return e.Port == port
	}
	if e.Name == "" {
		return true
	}
	return slices.Contains(DefaultPorts, port)
}

// MatchesName reports whether name entry e covers name on port.
func (e Entry) MatchesName(name string, port int) bool {
	if e.Name == "" || !e.PortMatches(port) {
		return false
	}
	if e.Wildcard {
		return strings.HasSuffix(name, "."+e.Name)
	}
	return name == e.Name
}

// MatchesAddr reports whether address entry e covers a on port.
func (e Entry) MatchesAddr(a netip.Addr, port int) bool {
	return e.Name == "" && e.PortMatches(port) && e.Prefix.Contains(a)
}

// NameVerdict is what the policy says of a name (or a literal address) on
// a port, before any address is known.
type NameVerdict struct {
	Allowed bool
	// By is the entry or rule that decided.
	By string
}

// JudgeName judges a request's target by its name (name != "") or its
// literal address.
func (c *Compiled) JudgeName(name string, addr netip.Addr, port int) NameVerdict {
	for _, e := range c.DenyEntries {
		if (name != "" && e.MatchesName(name, port)) || (name == "" && e.MatchesAddr(addr, port)) {
			return NameVerdict{By: "denied by " + e.Text}
		}
	}
	switch c.Mode {
	case ModeNone:
		return NameVerdict{By: "egress is none"}
	case ModeOpen:
		return NameVerdict{Allowed: true, By: "egress is open"}
	}
	if name == "" {
		for _, e := range c.AllowEntries {
			if e.MatchesAddr(addr, port) {
				return NameVerdict{Allowed: true, By: "allowed by " + e.Text}
			}
		}
		return NameVerdict{By: "this address is not in the allowlist"}
	}
	for _, e := range c.AllowEntries {
		if e.MatchesName(name, port) {
			return NameVerdict{Allowed: true, By: "allowed by " + e.Text}
		}
	}
	for _, e := range c.RegistryEntries {
		if e.MatchesName(name, port) {
			return NameVerdict{Allowed: true, By: "allowed by the registries preset (" + e.Text + ")"}
		}
	}
	for _, e := range slices.Concat(c.AllowEntries, c.RegistryEntries) {
		if e.Name != "" && (!e.Wildcard && e.Name == name || e.Wildcard && strings.HasSuffix(name, "."+e.Name)) {
			return NameVerdict{By: fmt.Sprintf("port %d is not allowed for this name (%s allows %s)", port, e.Text, e.PortsText())}
		}
	}
	return NameVerdict{By: "not in the allowlist"}
}

func (e Entry) PortsText() string {
	if e.Port != 0 {
		return "port " + strconv.Itoa(e.Port)
	}
	return "ports 80 and 443"
}

// ListedExactly reports whether an allow entry names a itself (not a
// network that holds it) on port.
func (c *Compiled) ListedExactly(a netip.Addr, port int) bool {
	for _, e := range c.AllowEntries {
		if e.MatchesAddr(a, port) && e.Prefix.IsSingleIP() {
			return true
		}
	}
	return false
}

// Listed reports whether a is allowed by address on port: an allow entry
// names it (or its network).
func (c *Compiled) Listed(a netip.Addr, port int) bool {
	for _, e := range c.AllowEntries {
		if e.MatchesAddr(a, port) {
			return true
		}
	}
	return false
}

// CheckAddr applies the address rules to a on port: the deny entries, the
// classes refused always, and those refused unless listed by address.
func (c *Compiled) CheckAddr(a netip.Addr, port int) (ok bool, reason string, listable bool) {
	for _, e := range c.DenyEntries {
		if e.MatchesAddr(a, port) {
			return false, fmt.Sprintf("%s is denied by %s", a, e.Text), false
		}
	}
	k := c.Classifier.Classify(a)
	switch {
	case k == ClassPublic:
		return true, "", false
	case k.Always():
		return false, fmt.Sprintf("%s is %s, which a sandbox may never reach", a, k), false
	case k == ClassHost:
		// The host answers on every address it has, its bridges' among
		// them: a network the user allows (10.0.0.0/8) is no consent to
		// reach it; its own address listed is.
		if c.ListedExactly(a, port) {
			return true, "", false
		}
		return false, fmt.Sprintf("%s is %s, refused unless listed by its own address (a network that holds it is not enough)", a, k), true
	case c.Listed(a, port):
		return true, "", false
	}
	return false, fmt.Sprintf("%s is %s, refused unless listed by address", a, k), true
}
