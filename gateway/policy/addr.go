package policy

import (
	"net/netip"
)

// Class is what an address is, for the rules of what a sandbox may reach.
type Class int

// The classes of addresses. Those before Public are refused; ClassSelf,
// ClassEngine, ClassUnspecified and ClassMulticast always, the others unless
// the address is listed by address in the policy.
const (
	// ClassPublic is an address anyone on the internet can reach.
	ClassPublic Class = iota
	// ClassUnspecified is 0.0.0.0 or ::, which means "this host".
	ClassUnspecified
	// ClassLoopback is 127.0.0.0/8 or ::1: from the gateway, the gateway.
	ClassLoopback
	// ClassSelf is an address of the gateway.
	ClassSelf
	// ClassEngine is a network of the engine: the gateway's own networks,
	// where other sandboxes' gateways are, and those the host names.
	ClassEngine
	// ClassHost is the engine's host: the gateway's route out, and the
	// addresses the host names.
	ClassHost
	// ClassLinkLocal is 169.254.0.0/16 (cloud metadata services among
	// them) or fe80::/10.
	ClassLinkLocal
	// ClassPrivate is RFC 1918 or a unique local IPv6 address (fc00::/7).
	ClassPrivate
	// ClassShared is carrier-grade NAT space, 100.64.0.0/10.
	ClassShared
	// ClassMulticast is multicast or broadcast.
	ClassMulticast
	// ClassReserved is any other range IANA says is not globally
	// reachable (documentation, benchmarking aside, the future-use
	// 240.0.0.0/4, IETF protocol assignments, NAT64 local use...).
	ClassReserved
)

var classNames = map[Class]string{
	ClassPublic:      "public",
	ClassUnspecified: "unspecified",
	ClassLoopback:    "loopback, the gateway itself",
	ClassSelf:        "the gateway itself",
	ClassEngine:      "a network of the container engine",
	ClassHost:        "the engine's host",
	ClassLinkLocal:   "link-local (cloud metadata services live there)",
	ClassPrivate:     "private",
	ClassShared:      "carrier-grade NAT space",
	ClassMulticast:   "multicast or broadcast",
	ClassReserved:    "reserved, not globally reachable",
}

func (c Class) String() string { return classNames[c] }

// Always reports whether addresses of class c are refused even when
// listed.
func (c Class) Always() bool {
	switch c {
	case ClassUnspecified, ClassLoopback, ClassSelf, ClassEngine, ClassMulticast:
		return true
	}
	return false
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

var (
	// fec0::/10, IPv6's site-local, is deprecated but still routed
	// inside the sites that used it: private.
	privateNets = mustPrefixes("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fec0::/10")
	sharedNets  = mustPrefixes("100.64.0.0/10")
	// reservedNets are IANA's special-purpose ranges that are not
	// globally reachable, less those classed above. 198.18.0.0/15
	// (benchmarking) is left out on purpose: proxies in "fake IP" mode
	// (Clash, Surge) answer every name with an address there and route it
	// out, so refusing it would refuse everything on such a host; the
	// tests' own "internet" lives there too.
	reservedNets = mustPrefixes(
		"0.0.0.0/8", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32",
		"3fff::/20", "5f00::/16",
		// fe00::/9 is the IETF's, unassigned but for link-local
		// (fe80::/10, classed above).
		"fe00::/9",
	)
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// translated is SIIT's IPv4-translated range (RFC 2765,
	// ::ffff:0:a.b.c.d), which a translator on the way maps to a.b.c.d.
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// Classifier classes addresses for one gateway: the fixed ranges, and what
// this gateway and its host know of the engine.
type Classifier struct {
	// Self are the gateway's own addresses.
	Self []netip.Addr
	// Engine are the engine's networks (those the gateway is on, and
	// those the host names).
	Engine []netip.Prefix
	// Host are the engine's host's addresses (the gateway's default
	// route, and those the host names).
	Host []netip.Prefix
}

// Classify says what a is. An address that embeds an IPv4 address
// (IPv4-mapped, IPv4-translated, NAT64, 6to4) is classed by the address it
// embeds: a
// gateway with IPv6 could otherwise reach 127.0.0.1 as ::ffff:127.0.0.1.
func (k *Classifier) Classify(a netip.Addr) Class {
	a = a.Unmap()
	if a.Is6() {
		if nat64.Contains(a) || translated.Contains(a) {
			b := a.As16()
			return k.Classify(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		if sixToFour.Contains(a) {
			b := a.As16()
			return k.Classify(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	switch {
	case a.IsUnspecified():
		return ClassUnspecified
	case a.IsLoopback():
		return ClassLoopback
	case a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return ClassMulticast
	}
	for _, s := range k.Self {
		if s == a {
			return ClassSelf
		}
	}
	// The host before the engine: the host's address on the gateway's
	// own network (its route out) is the host, which the user may list.
	if containsAny(k.Host, a) {
		return ClassHost
	}
	if containsAny(k.Engine, a) {
		return ClassEngine
	}
	switch {
	case a.IsLinkLocalUnicast():
		return ClassLinkLocal
	case containsAny(privateNets, a):
		return ClassPrivate
	case containsAny(sharedNets, a):
		return ClassShared
	case containsAny(reservedNets, a):
		return ClassReserved
	}
	return ClassPublic
}

func containsAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
