package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// PortSocket is the socket of the sandbox's port in dir.
func PortSocket(dir string, port int) string {
	return filepath.Join(dir, control.PortsDir, strconv.Itoa(port)+".sock")
}

// Relay is the gateway's half that runs inside the sandbox, which has no
// network but its loopback: it listens on the sandbox's 127.0.0.1 for the
// proxy (ProxyAddr) and the resolver (DNSAddr, UDP and TCP) and carries each
// connection to the gateway's sockets in Dir; and it listens on
// Dir/ports/PORT.sock for each named port, carrying the host's connections
// (which the gateway accepts on the port it publishes) to 127.0.0.1:PORT.
type Relay struct {
	// carry is set once the kernel refused to pass a socket (gVisor's):
	// the relay carries every connection's bytes from then on.
	carry     atomic.Bool
	Dir       string
	ProxyAddr string // 127.0.0.1:3128
	DNSAddr   string // 127.0.0.1:53
	Ports     []int
	Logf      func(format string, args ...any)
	// Ready, when set, is called once: with nil when every listener is
	// up, else with the error.
	Ready func(error)
}

// Run listens and relays until a listener fails.
func (r *Relay) Run() error {
	// The gateway, in the group, connects to the ports' sockets.
	syscall.Umask(0o007)
	start, err := r.listen()
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(filepath.Join(r.Dir, control.ReadyFile), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o660); err == nil {
			err = f.Close()
		}
	}
	if r.Ready != nil {
		r.Ready(err)
	}
	if err != nil {
		return err
	}
	return start()
}

// listen opens every listener, and returns what serves them.
func (r *Relay) listen() (func() error, error) {
	pl, err := net.Listen("tcp", r.ProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("relay: listen for the proxy: %w", err)
	}
	dl, err := net.Listen("tcp", r.DNSAddr)
	if err != nil {
		return nil, fmt.Errorf("relay: listen for DNS over TCP: %w", err)
	}
	du, err := net.ListenPacket("udp", r.DNSAddr)
	if err != nil {
		return nil, fmt.Errorf("relay: listen for DNS: %w", err)
	}
	dnsTCP, dnsUDP := []net.Listener{dl}, []net.PacketConn{du}
	// A sandbox without /etc/resolv.conf (Podman makes none for a
	// container without a network) asks 127.0.0.1 and ::1: answer on the
	// IPv6 loopback too, where there is one.
	if host, port, err := net.SplitHostPort(r.DNSAddr); err == nil && host == "127.0.0.1" {
		if l6, err := net.Listen("tcp6", "[::1]:"+port); err == nil {
			dnsTCP = append(dnsTCP, l6)
		}
		if u6, err := net.ListenPacket("udp6", "[::1]:"+port); err == nil {
			dnsUDP = append(dnsUDP, u6)
		}
	}
	var portLs []net.Listener
	if len(r.Ports) > 0 {
		// The relay may start before the gateway has made the directory.
		if err := os.MkdirAll(filepath.Join(r.Dir, control.PortsDir), 0o770); err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
	}
	for _, p := range r.Ports {
		path := PortSocket(r.Dir, p)
		_ = os.Remove(path)
		l, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("relay: listen for port %d: %w", p, err)
		}
		portLs = append(portLs, l)
	}
	return func() error {
		errc := make(chan error, 5+len(r.Ports))
		go func() { errc <- r.acceptPass(pl, filepath.Join(r.Dir, control.ProxySocket)) }()
		for _, l := range dnsTCP {
			go func() { errc <- r.acceptTo(l, "unix", filepath.Join(r.Dir, control.DNSSocket)) }()
		}
		for _, u := range dnsUDP {
			go func() { errc <- r.serveDNSPackets(u) }()
		}
		for i, p := range r.Ports {
			go func() { errc <- r.acceptTo(portLs[i], "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))) }()
		}
		return <-errc
	}, nil
}

func (r *Relay) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// acceptTo carries every connection accepted on l to network/addr.
func (r *Relay) acceptTo(l net.Listener, network, addr string) error {
	return serve(l, nil, nil, func(c net.Conn) {
		defer c.Close()
		o, err := net.DialTimeout(network, addr, 10*time.Second)
		if err != nil {
			r.logf("relay: %v", err)
			return
		}
		defer o.Close()
		Pipe(c, o)
	})
}

// acceptPass hands every connection accepted on l to the gateway at the
// unix socket path (sendConn). When the gateway is not there, the client is
// told so in HTTP.
func (r *Relay) acceptPass(l net.Listener, path string) error {
	return serve(l, nil, nil, func(c net.Conn) {
		defer c.Close()
		u, err := net.DialTimeout("unix", path, 10*time.Second)
		if err == nil {
			defer u.Close()
			if !r.carry.Load() {
				err = sendConn(u.(*net.UnixConn), c.(*net.TCPConn))
				if err != nil && errNoPass(err) {
					r.logf("relay: this kernel passes no sockets to the gateway (%v): the relay carries the bytes", err)
					r.carry.Store(true)
				}
			}
			if r.carry.Load() {
				if _, err = u.Write([]byte{passStream}); err == nil {
					Pipe(c, u)
					return
				}
			}
		}
		if err != nil {
			writeSimple(c, 502, "Bad Gateway: the sandbox's gateway is not running",
				"litterbox: the sandbox's gateway does not answer; the user can restart the sandbox (litterbox resume)\n")
			r.logf("relay: %v", err)
		}
	})
}

// serveDNSPackets relays each UDP query over a stream to the gateway and its
// answer back.
func (r *Relay) serveDNSPackets(pc net.PacketConn) error {
	sem := make(chan struct{}, 64)
	return eachPacket(pc, func(m []byte, from net.Addr) {
		q := append([]byte(nil), m...)
		select {
		case sem <- struct{}{}:
		default:
			return // too many queries at once: drop, as a busy resolver would
		}
		go func() {
			defer func() { <-sem }()
			ans, err := exchangeStream(filepath.Join(r.Dir, control.DNSSocket), q)
			if err != nil {
				r.logf("relay: dns: %v", err)
				return
			}
			_, _ = pc.WriteTo(ans, from)
		}()
	})
}

// eachPacket calls serve with each packet read from pc (m is the read
// buffer's until serve returns), until pc is closed.
func eachPacket(pc net.PacketConn, serve func(m []byte, from net.Addr)) error {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		serve(buf[:n], from)
	}
}

// exchangeStream sends one DNS message over a new stream connection to the
// unix socket path, framed with its length, and reads one answer.
func exchangeStream(path string, q []byte) ([]byte, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := writeFrame(c, q); err != nil {
		return nil, err
	}
	return readFrame(c)
}

func writeFrame(w io.Writer, m []byte) error {
	if len(m) > 65535 {
		return errors.New("a DNS message longer than 65535 bytes")
	}
	b := make([]byte, 2+len(m))
	binary.BigEndian.PutUint16(b, uint16(len(m)))
	copy(b[2:], m)
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	m := make([]byte, binary.BigEndian.Uint16(n[:]))
	_, err := io.ReadFull(r, m)
	return m, err
}

// ServeDNS serves the resolver on l: DNS messages framed as over TCP (the
// relay frames UDP queries the same way). Every query is answered REFUSED
// and recorded.
func (g *Gateway) ServeDNS(l net.Listener) error {
	return serve(l, make(chan struct{}, 256), nil, func(c net.Conn) {
		defer c.Close()
		for {
			_ = c.SetDeadline(time.Now().Add(30 * time.Second))
			m, err := readFrame(c)
			if err != nil {
				return
			}
			ans, ok := g.answerDNS(m)
			if !ok || writeFrame(c, ans) != nil {
				return
			}
		}
	})
}

// ServeDNSPackets serves the resolver on a UDP socket: a sandbox that
// reaches its gateway over the network asks it there. Every query is
// answered REFUSED and recorded, as ServeDNS does.
func (g *Gateway) ServeDNSPackets(pc net.PacketConn) error {
	return eachPacket(pc, func(m []byte, from net.Addr) {
		if ans, ok := g.answerDNS(m); ok {
			_, _ = pc.WriteTo(ans, from)
		}
	})
}

// answerDNS records a query and answers it REFUSED; ok is false for a
// message that is no query, which gets no answer.
func (g *Gateway) answerDNS(m []byte) ([]byte, bool) {
	q, err := ParseQuery(m)
	rec := control.Record{Kind: "dns", Host: printableName(q.Name), Method: typeName(q.Type), Port: 53}
	if err != nil {
		rec.Reason = "a malformed DNS query: " + err.Error()
		g.Audit.Add(rec)
		return nil, false
	}
	rec.Reason = "the sandbox resolves no names: clients reach the network through the proxy (HTTP_PROXY, HTTPS_PROXY), which resolves them"
	if sec := g.secrets.Load().carried(q.Name, nil); sec != nil {
		rec.Secret = sec.Name
		rec.Reason = "exfiltration attempt: the placeholder of secret " + sec.Name + " in a DNS query; " + rec.Reason
	}
	g.Audit.Add(rec)
	return Refusal(m, q), true
}
