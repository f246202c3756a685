package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// Egress modes: how a sandbox reaches the network (docs/egress.md).
const (
	// EgressAllowlist: only through the sandbox's gateway, to the names and
	// addresses allow lists and the package registries; the default.
	EgressAllowlist = "allowlist"
	// EgressNone: through the gateway, which refuses everything (and
	// records it); named ports still work.
	EgressNone = "none"
	// EgressOpen: no gateway; the sandbox is on the network as
	// `network` says (bridge or own), as before egress existed.
	EgressOpen = "open"
)

// Egress is the [network] table's policy: what a sandbox's gateway lets
// out. The committed file may set it (it is read from a commit of the
// user's, never an agent's branch); LocalFile wins, key by key.
type Egress struct {
	// Mode is EgressAllowlist, EgressNone or EgressOpen; "" when no file
	// sets it (then EgressAllowlist, where the engine runs gateways).
	Mode string
	// Allow and Deny are the gateway's entries: names, "*." names,
	// addresses and CIDRs, each with an optional ":port" (deny wins).
	Allow, Deny []string
	// Registries adds the built-in package registries to the allowlist.
	Registries bool
}

// EgressMode is the mode in force: Mode, or EgressAllowlist when unset.
func (c *Config) EgressMode() string {
	if c.Network == NetworkNone {
		return ""
	}
	if c.Egress.Mode == "" {
		return EgressAllowlist
	}
	return c.Egress.Mode
}

// Confined says the sandbox goes out only through a gateway: egress none
// or allowlist, and a network.
func (c *Config) Confined() bool {
	m := c.EgressMode()
	return m == EgressAllowlist || m == EgressNone
}

// rawEgress is the [network] table as written.
type rawEgress struct {
	Mode       *string
	Allow      []string
	Deny       []string
	Registries *bool
}

// splitNetwork reads `network`, a string (the mode: bridge, own, none) or
// a table ([network]: mode, egress, allow, deny, registries), into
// NetworkMode and Egress.
func (c *rawConfig) splitNetwork(file string) error {
	switch v := c.Network.(type) {
	case nil:
		return nil
	case string:
		c.NetworkMode = &v
	case map[string]any:
		e := &rawEgress{}
		var errs []string
		bad := func(key, format string, args ...any) {
			errs = append(errs, c.at("network."+key)+"network."+key+": "+fmt.Sprintf(format, args...))
		}
		strs := func(key string, x any) []string {
			list, ok := x.([]any)
			if !ok {
				bad(key, "must be a list of strings, e.g. [\"api.example.com\", \"*.example.org:8443\"]")
				return nil
			}
			out := []string{}
			for _, s := range list {
				str, ok := s.(string)
				if !ok {
					bad(key, "%v is not a string", s)
					continue
				}
				out = append(out, str)
			}
			return out
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			x := v[k]
			switch k {
			case "mode":
				s, ok := x.(string)
				if !ok {
					bad(k, "must be a string: \"bridge\", \"own\" or \"none\"")
					continue
				}
				c.NetworkMode = &s
			case "egress":
				s, ok := x.(string)
				if !ok {
					bad(k, "must be a string: \"allowlist\", \"none\" or \"open\"")
					continue
				}
				e.Mode = &s
			case "allow":
				e.Allow = strs(k, x)
			case "deny":
				e.Deny = strs(k, x)
			case "registries":
				b, ok := x.(bool)
				if !ok {
					bad(k, "must be true or false")
					continue
				}
				e.Registries = &b
			default:
				errs = append(errs, fmt.Sprintf("%s:%s: unknown key %q", file, lineOf(c.where["network."+k]), "network."+k))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w: %s (see docs/config.md)", ErrInvalid, joinErrs(errs))
		}
		c.Egress = e
	default:
		return fmt.Errorf("%w: %snetwork: must be \"bridge\", \"own\" or \"none\", or a [network] table (see docs/config.md)", ErrInvalid, c.at("network"))
	}
	c.Network = nil
	return nil
}

// lineOf is the line of a where value, "FILE:LINE".
func lineOf(where string) string {
	for i := len(where) - 1; i >= 0; i-- {
		if where[i] == ':' {
			return where[i+1:]
		}
	}
	return "?"
}

func joinErrs(errs []string) string {
	out := ""
	for i, e := range errs {
		if i > 0 {
			out += "; "
		}
		out += e
	}
	return out
}

// mergeEgress lays o over c, key by key.
func mergeEgress(c, o *rawEgress) *rawEgress {
	if o == nil {
		return c
	}
	if c == nil {
		c = &rawEgress{}
	}
	setIf(&c.Mode, o.Mode)
	setIf(&c.Registries, o.Registries)
	if o.Allow != nil {
		c.Allow = o.Allow
	}
	if o.Deny != nil {
		c.Deny = o.Deny
	}
	return c
}

// validateEgress checks the [network] table into cfg.
func (c *rawConfig) validateEgress(cfg *Config, bad func(key, format string, args ...any)) {
	cfg.Egress.Registries = true
	e := c.Egress
	if e == nil {
		return
	}
	if e.Mode != nil {
		switch *e.Mode {
		case EgressAllowlist, EgressNone, EgressOpen:
			cfg.Egress.Mode = *e.Mode
		default:
			bad("network.egress", "%q is not \"allowlist\", \"none\" or \"open\"", *e.Mode)
		}
	}
	if e.Registries != nil {
		cfg.Egress.Registries = *e.Registries
	}
	check := func(key string, list []string) []string {
		for _, s := range list {
			if _, err := policy.ParseEntry(s); err != nil {
				bad(key, "%v (entries are a name such as \"api.example.com\", \"*.example.org\" or \"git.example.net:443\", or an address or CIDR such as \"10.1.2.3\" or \"10.0.0.0/8:5432\")", err)
			}
		}
		return list
	}
	cfg.Egress.Allow = check("network.allow", e.Allow)
	cfg.Egress.Deny = check("network.deny", e.Deny)
}
