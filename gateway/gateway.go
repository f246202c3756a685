// Package gateway is a sandbox's one way out: an HTTP proxy (CONNECT for
// TLS, plain HTTP forwarded) and a resolver that refuses every query,
// judged by a policy only the host can change, with a record of every
// connection attempt. It runs as litterbox-gateway (cmd/litterbox-gateway)
// in a hardened container of its own beside the sandbox, which has no
// network at all: inside the sandbox, a relay (the same program) carries
// the proxy's and the resolver's connections to the gateway over unix
// sockets on a volume the two containers share, and the host's connections
// to the sandbox's named ports the other way. docs/egress.md says why.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// Resolver looks names up: net.Resolver does.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Gateway judges and carries one sandbox's connections.
type Gateway struct {
	// Audit records every attempt.
	Audit *Audit
	// Resolver resolves the names the sandbox asks for, once per
	// connection: the gateway connects to an address it checked.
	Resolver Resolver
	// Dialer connects to the checked addresses.
	Dialer net.Dialer
	// Base is what the gateway found of its own networks (its addresses,
	// its networks, its route out); the policy's Host and Engine are
	// added to it.
	Base policy.Classifier
	// Logf reports the gateway's own troubles (not connections).
	Logf func(format string, args ...any)
	// MaxClients bounds the connections the proxy carries at once (0:
	// maxClients).
	MaxClients int
	// OnReady is called when the host says the gateway holds what it
	// should (`ctl ready`): serve opens the sandbox's sockets then.
	OnReady func()
	ready   atomic.Bool
	// NameFile is where a sandbox claimed from the warm pool has its
	// name (sandboxName): the shared volume's control.NameFile, which its
	// setup writes, or on an engine that links the two by network the
	// file the engine writes at the claim (serve's -name-file).
	NameFile string

	policy atomic.Pointer[policy.Compiled]
	mu     sync.Mutex
	active map[*tunnel]struct{}

	// secrets are the credentials the gateway adds for the hosts they are
	// bound to (SetSecrets); ca is its own CA, made with the first.
	secrets atomic.Pointer[secretSet]
	caMu    sync.Mutex
	ca      *authority
}

// SetPolicy makes p the policy of the next connection, and closes the open
// tunnels it refuses (by name, and by the address they connected to: no name
// is resolved again).
func (g *Gateway) SetPolicy(p policy.Policy) error {
	c, err := policy.Compile(p)
	if err != nil {
		return err
	}
	c.Classifier = g.classifierFor(c)
	g.policy.Store(c)
	g.mu.Lock()
	open := make([]*tunnel, 0, len(g.active))
	for t := range g.active {
		open = append(open, t)
	}
	g.mu.Unlock()
	for _, t := range open {
		v := c.JudgeName(t.name, t.lit, t.port)
		reason := v.By
		if v.Allowed {
			if ok, why, _ := c.CheckAddr(t.addr, t.port); !ok {
				v.Allowed, reason = false, why
			}
		}
		if !v.Allowed {
			t.cut("closed when the policy changed: " + reason)
		}
	}
	return nil
}

// Policy is the policy in force.
func (g *Gateway) Policy() policy.Policy {
	if c := g.policy.Load(); c != nil {
		return c.Policy
	}
	return policy.Policy{Mode: policy.ModeNone}
}

func (g *Gateway) current() *policy.Compiled {
	if c := g.policy.Load(); c != nil {
		return c
	}
	c, _ := policy.Compile(policy.Policy{Mode: policy.ModeNone})
	c.Classifier = g.classifierFor(c)
	return c
}

func (g *Gateway) classifierFor(c *policy.Compiled) *policy.Classifier {
	k := &policy.Classifier{
		Self:   g.Base.Self,
		Engine: slices.Concat(g.Base.Engine, c.EnginePrefixes),
		Host:   slices.Concat(g.Base.Host, c.HostPrefixes),
	}
	return k
}

func (g *Gateway) logf(format string, args ...any) {
	if g.Logf != nil {
		g.Logf(format, args...)
	}
}

// decision is what the gateway decided of one target.
type decision struct {
	allowed bool
	reason  string
	// addrs are the checked addresses to connect to, in order.
	addrs []netip.Addr
	// addr is the address refused, when an address was.
	addr netip.Addr
	// suggest is what the user could allow (`litterbox net NAME allow
	// SUGGEST`); "" when nothing can allow it.
	suggest string
	// err is why an allowed name could not be resolved.
	err error
}

// decide judges a connection to host (a name, or an address: lit) on port:
// the name first, then the addresses it resolves to (once; the caller
// connects to those returned, never resolving again).
func (g *Gateway) decide(ctx context.Context, c *policy.Compiled, name string, lit netip.Addr, port int) decision {
	target := name
	if name == "" {
		target = lit.String()
	}
	withPort := target
	if !slices.Contains(policy.DefaultPorts, port) {
		withPort = net.JoinHostPort(target, strconv.Itoa(port))
	}
	v := c.JudgeName(name, lit, port)
	if !v.Allowed {
		d := decision{reason: v.By, suggest: withPort}
		if name == "" {
			// Say what the address is: listing 169.254.169.254 gives the
			// sandbox a cloud's metadata service, and the loopback
			// cannot be listed at all.
			d.addr = lit
			switch k := c.Classifier.Classify(lit); {
			case k.Always():
				return decision{reason: fmt.Sprintf("%s is %s, which a sandbox may never reach", lit, k), addr: lit}
			case k != policy.ClassPublic:
				d.reason = fmt.Sprintf("%s is %s, and %s", lit, k, v.By)
			}
		}
		if strings.HasPrefix(v.By, "denied by") {
			d.suggest = ""
		}
		return d
	}
	var addrs []netip.Addr
	if name == "" {
		addrs = []netip.Addr{lit}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		found, err := g.Resolver.LookupNetIP(rctx, "ip", name)
		cancel()
		if err != nil {
			return decision{allowed: true, reason: v.By, err: fmt.Errorf("resolve %s: %w", name, err)}
		}
		for _, a := range found {
			addrs = append(addrs, a.Unmap())
		}
		// IPv4 first: a gateway on an engine network seldom has IPv6.
		slices.SortStableFunc(addrs, func(a, b netip.Addr) int {
			switch {
			case a.Is4() && !b.Is4():
				return -1
			case !a.Is4() && b.Is4():
				return 1
			}
			return 0
		})
	}
	d := decision{allowed: true, reason: v.By}
	var first decision
	for _, a := range addrs {
		ok, why, listable := c.CheckAddr(a, port)
		if ok {
			d.addrs = append(d.addrs, a)
			continue
		}
		if first.reason == "" {
			first = decision{reason: why, addr: a}
			if listable {
				first.suggest = a.String()
				if name == "" {
					first.suggest = withPort
				}
			}
			if name != "" {
				first.reason = name + " resolves to " + strings.Replace(why, a.String()+" is ", a.String()+", which is ", 1)
			}
		}
	}
	if len(d.addrs) == 0 {
		if first.reason == "" {
			return decision{allowed: true, reason: v.By, err: fmt.Errorf("resolve %s: no address", name)}
		}
		return first
	}
	return d
}

// dial connects to the first of addrs that answers, within 10 s in all.
func (g *Gateway) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	for _, a := range addrs {
		conn, err := g.Dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, errors.Join(errs...)
}

// serve accepts connections on l and hands each to handle in a goroutine
// of its own, until l is closed (nil) or fails; a temporary failure (out of
// file descriptors) is waited out. With a non-nil sem, a connection beyond
// its capacity goes to busy instead, which closes it (nil: closed).
func serve(l net.Listener, sem chan struct{}, busy func(net.Conn), handle func(net.Conn)) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if isTimeout(err) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				if busy != nil {
					busy(c)
				} else {
					c.Close()
				}
				continue
			}
		}
		go func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			handle(c)
		}()
	}
}

// refusalText is what a refused client is told: the host, the sandbox (by
// name), why, and the command that would allow it.
func refusalText(sandbox, target string, port int, d decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "litterbox: sandbox %s may not connect to %s: %s.\n", sandbox, net.JoinHostPort(target, strconv.Itoa(port)), d.reason)
	switch {
	case d.suggest != "":
		fmt.Fprintf(&b, "The user can allow it with: litterbox net %s allow %s\n", sandbox, d.suggest)
	case strings.Contains(d.reason, "denied by"):
		fmt.Fprintf(&b, "The user denied it (litterbox net %s shows the policy).\n", sandbox)
	default:
		b.WriteString("No policy can allow it.\n")
	}
	return b.String()
}
