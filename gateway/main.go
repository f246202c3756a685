package gateway

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// Main runs litterbox-gateway with args (without the program name):
//
//	serve -dir DIR [-policy JSON] [-port PORT]...   the gateway, in its container
//	serve -listen ADDR -dns ADDR [-policy JSON]     the gateway as its sandbox's network peer
//	relay -dir DIR [-port PORT]...                  its half in the sandbox
//	ctl set < POLICY.json | get | log [-boot B] [-after N] [-max M] | refused -within D
//	ctl secrets [< SECRETS.json]
//	ctl ready | state
//
// ctl talks to the gateway running in the same container and prints its
// answer as JSON. `ctl secrets` reads the secrets, values and all, from
// stdin (never an argument, which the engine's and the host's process
// lists show), and prints what the gateway holds without them; with
// nothing on stdin, it sets nothing.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: litterbox-gateway serve|relay|ctl")
	}
	switch args[0] {
	case "serve":
		return serveMain(args[1:], stdout, stderr)
	case "relay":
		return relayMain(args[1:], stderr)
	case "ctl":
		return ctlMain(args[1:], stdin, stdout)
	}
	return fmt.Errorf("unknown command %q: serve, relay or ctl", args[0])
}

// portsFlag collects repeated -port flags.
type portsFlag []int

func (p *portsFlag) String() string { return fmt.Sprint(*p) }

func (p *portsFlag) Set(s string) error {
	n, err := policy.ParsePort(s)
	if err != nil {
		return err
	}
	*p = append(*p, n)
	return nil
}

func serveMain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	dir := fs.String("dir", "/gw", "the directory shared with the sandbox's relay")
	policyJSON := fs.String("policy", `{"mode":"none"}`, "the policy at start, JSON")
	ctlAddr := fs.String("ctl", control.CtlSocket, "the control socket")
	var ports portsFlag
	fs.Var(&ports, "port", "a named port of the sandbox to publish (repeat)")
	listen := fs.String("listen", "", "serve the proxy on this TCP address, not on the shared directory (an engine that links the sandbox to its gateway by network)")
	dnsAddr := fs.String("dns", "", "with -listen: serve the resolver on this address, UDP and TCP")
	openSum := fs.String("open-sum", "", "open the sockets, without `ctl ready`, once the shared directory's "+control.OpenFile+" holds the token of this SHA-256 (hex); once per start")
	nameFile := fs.String("name-file", "", "where to read the sandbox's name when the policy names none (default: the shared directory's "+control.NameFile+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*listen == "") != (*dnsAddr == "") || *listen != "" && len(ports) > 0 {
		return errors.New("serve: -listen and -dns go together, without -port")
	}
	p, err := policy.ParsePolicy([]byte(*policyJSON))
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "litterbox-gateway: "+format+"\n", args...)
	}
	g := &Gateway{
		Audit:    NewAudit(DefaultAuditSize, stdout),
		Resolver: &net.Resolver{PreferGo: true},
		Base:     DetectBase(),
		Logf:     logf,
		NameFile: cmp.Or(*nameFile, filepath.Join(*dir, control.NameFile)),
	}
	g.Dialer.Timeout = 10 * time.Second
	if err := g.SetPolicy(p); err != nil {
		return err
	}
	// What the gateway makes on the volume is its group's (the sandbox
	// user's): the relay, which runs as that user, connects to its sockets
	// and makes its own in ports/. The mask sets the modes as the files
	// are made; a chmod after would follow whatever the sandbox put in a
	// socket's place.
	syscall.Umask(0o007)
	if *listen == "" {
		if err := os.MkdirAll(filepath.Join(*dir, control.PortsDir), 0o770); err != nil {
			return err
		}
	}
	// The proxy's and the resolver's sockets are made only once the host
	// says the gateway holds what it should (`ctl ready`: the policy the
	// user set and the secrets' values): a gateway the engine started
	// again by itself (docker restart, a restart policy) holds its
	// create's policy and no secret, and the sandbox, whose relay finds
	// no socket, reaches nothing until `litterbox resume` gives it them.
	// Those of an earlier run go first, so that no one takes them for
	// this one's.
	for _, name := range []string{control.ProxySocket, control.DNSSocket} {
		_ = os.Remove(filepath.Join(*dir, name))
	}
	cl, err := net.Listen("unix", *ctlAddr)
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	errc := make(chan error, 4+len(ports))
	opened := make(chan struct{})
	var once sync.Once
	g.OnReady = func() { once.Do(func() { close(opened) }) }
	go func() { errc <- g.ServeCtl(cl) }()
	if *openSum != "" && *listen == "" {
		go g.openOnToken(filepath.Join(*dir, control.OpenFile), *openSum, opened, logf)
	}
	if *listen != "" {
		go func() {
			<-opened
			errc <- g.serveNetwork(*listen, *dnsAddr)
		}()
	} else {
		go func() {
			<-opened
			errc <- g.serveShared(*dir, logf)
		}()
	}
	// The engine forwards a published port to the gateway from the host's
	// side of the gateway's network (its route out): a connection from
	// anywhere else (another gateway on the shared network, where the engine
	// does not keep containers apart) is not the user's, and is closed.
	hosts := defaultGateways()
	for _, port := range ports {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return fmt.Errorf("publish port %d: %w", port, err)
		}
		r := &Relay{Dir: *dir, Logf: logf}
		ol := &onlyFrom{Listener: l, ok: func(a netip.Addr) bool { return slices.Contains(hosts, a) }, logf: logf}
		go func() { errc <- r.acceptTo(ol, "unix", PortSocket(*dir, port)) }()
	}
	go func() {
		for range time.Tick(time.Second) {
			g.Audit.Flush()
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
		g.Audit.Flush()
		return nil
	case err := <-errc:
		return err
	}
}

func relayMain(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	r := &Relay{}
	fs.StringVar(&r.Dir, "dir", "/gw", "the directory shared with the gateway")
	fs.StringVar(&r.ProxyAddr, "proxy", "127.0.0.1:3128", "where the sandbox's clients find the proxy")
	fs.StringVar(&r.DNSAddr, "dns", "127.0.0.1:53", "where the sandbox's resolver is")
	var ports portsFlag
	fs.Var(&ports, "port", "a named port of the sandbox (repeat)")
	detach := fs.Bool("detach", false, "start the relay in a session of its own and return once it listens")
	readyFD := fs.Int("ready-fd", -1, "a file descriptor to write \"ok\" (or the error) to once listening")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *readyFD >= 0 {
		ready := os.NewFile(uintptr(*readyFD), "ready")
		r.Ready = func(err error) {
			if err != nil {
				fmt.Fprintln(ready, err)
			} else {
				fmt.Fprintln(ready, "ok")
			}
			ready.Close()
		}
	}
	if *detach {
		return startDetached(slices.DeleteFunc(slices.Clone(args), func(a string) bool {
			return a == "-detach" || a == "--detach" || a == "-detach=true" || a == "--detach=true"
		}))
	}
	r.Ports = ports
	r.Logf = func(format string, args ...any) {
		fmt.Fprintf(stderr, "litterbox-gateway relay: "+format+"\n", args...)
	}
	return r.Run()
}

// startDetached starts this program's relay with args in a new session,
// its output discarded, and returns: the exec that started it (docker exec,
// which has no detached form in the provider) ends, and the relay stays.
func startDetached(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	// The relay says on its fd 3 whether it listens: the exec returns once
	// it does, so the first client finds it.
	rd, wr, err := os.Pipe()
	if err != nil {
		return err
	}
	defer rd.Close()
	p, err := os.StartProcess(self, append([]string{self, "relay", "-ready-fd", "3"}, args...), &os.ProcAttr{
		Dir:   "/",
		Files: []*os.File{null, null, null, wr},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	wr.Close()
	if err != nil {
		return err
	}
	_ = p.Release()
	_ = rd.SetReadDeadline(time.Now().Add(10 * time.Second))
	msg, _ := io.ReadAll(io.LimitReader(rd, 4096))
	if string(msg) != "ok\n" {
		return fmt.Errorf("the relay did not start: %s", strings.TrimSpace(string(msg)))
	}
	return nil
}

func ctlMain(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: litterbox-gateway ctl set|get|log|refused")
	}
	fs := flag.NewFlagSet("ctl "+args[0], flag.ContinueOnError)
	addr := fs.String("ctl", control.CtlSocket, "the control socket")
	boot := fs.String("boot", "", "log: the run the cursor belongs to; refused: the run of the mark")
	after := fs.Uint64("after", 0, "log: the last sequence number already collected; refused: the mark's count of refusals")
	maxN := fs.Int("max", maxBatch, "log: at most this many records")
	within := fs.String("within", "", "refused: the window, such as 30s (or -boot and -after: since that mark)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	req := control.CtlRequest{Op: args[0], Boot: *boot, After: *after, Max: *maxN, Within: *within}
	if req.Op == "secrets" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxCtlRequest))
		if err != nil {
			return err
		}
		if len(strings.TrimSpace(string(b))) > 0 {
			var s control.Secrets
			if err := json.Unmarshal(b, &s); err != nil {
				return fmt.Errorf("ctl secrets: %s", jsonError(err))
			}
			req.Secrets = &s
		}
	}
	if req.Op == "set" {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			return err
		}
		p, err := policy.ParsePolicy(b)
		if err != nil {
			return err
		}
		req.Policy = &p
	}
	resp, err := control.Ctl(*addr, req)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	switch {
	case resp.Policy != nil:
		return enc.Encode(resp.Policy)
	case resp.Batch != nil:
		return enc.Encode(resp.Batch)
	case resp.Secrets != nil:
		return enc.Encode(resp.Secrets)
	case resp.State != nil:
		return enc.Encode(resp.State)
	}
	if resp.Refused == nil {
		resp.Refused = []control.Record{}
	}
	return enc.Encode(resp.Refused)
}

// onlyFrom accepts connections from the addresses ok allows, and closes
// the others.
type onlyFrom struct {
	net.Listener
	ok   func(netip.Addr) bool
	logf func(format string, args ...any)
}

func (o *onlyFrom) Accept() (net.Conn, error) {
	for {
		c, err := o.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			if a, ok := netip.AddrFromSlice(ta.IP); ok && o.ok(a.Unmap()) {
				return c, nil
			}
		}
		o.logf("a named port: closed a connection from %s, which is not the engine's host", c.RemoteAddr())
		c.Close()
	}
}

// DetectBase finds what the gateway knows of its networks: its addresses,
// the networks they are on (where the engine's other containers are), and
// its default routes' next hops (the engine's host).
func DetectBase() policy.Classifier {
	var k policy.Classifier
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		ones, _ := ipn.Mask.Size()
		if ip.IsLoopback() {
			continue
		}
		k.Self = append(k.Self, ip)
		if !ip.IsLinkLocalUnicast() {
			k.Engine = append(k.Engine, netip.PrefixFrom(ip, ones).Masked())
		}
	}
	for _, gw := range defaultGateways() {
		k.Host = append(k.Host, netip.PrefixFrom(gw, gw.BitLen()))
	}
	return k
}

// defaultGateways reads the next hops of the default routes from /proc.
func defaultGateways() []netip.Addr {
	var out []netip.Addr
	if f, err := os.Open("/proc/net/route"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 3 || fields[1] != "00000000" {
				continue
			}
			b, err := hex.DecodeString(fields[2])
			if err != nil || len(b) != 4 {
				continue
			}
			v := binary.LittleEndian.Uint32(b)
			var a [4]byte
			binary.BigEndian.PutUint32(a[:], v)
			if ip := netip.AddrFrom4(a); !ip.IsUnspecified() {
				out = append(out, ip)
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/net/ipv6_route"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) < 5 || fields[1] != "00" || strings.Trim(fields[0], "0") != "" {
				continue
			}
			b, err := hex.DecodeString(fields[4])
			if err != nil || len(b) != 16 {
				continue
			}
			if ip := netip.AddrFrom16([16]byte(b)); !ip.IsUnspecified() {
				out = append(out, ip)
			}
		}
		f.Close()
	}
	return out
}

// serveShared serves the proxy and the resolver on unix sockets in dir, the
// volume the sandbox's relay shares, once the host said the gateway is
// ready.
func (g *Gateway) serveShared(dir string, logf func(string, ...any)) error {
	// Before the sockets: once the relay can reach the proxy, every
	// refusal is written to the file a bash call reads.
	if rl, err := OpenRefusalLog(dir); err != nil {
		logf("%v: a bash call asks the gateway what it refused instead", err)
	} else {
		g.Audit.SetRefusals(rl)
	}
	listenUnix := func(name string) (net.Listener, error) {
		path := filepath.Join(dir, name)
		_ = os.Remove(path)
		return net.Listen("unix", path)
	}
	pl, err := listenUnix(control.ProxySocket)
	if err != nil {
		return err
	}
	dl, err := listenUnix(control.DNSSocket)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- g.ServeProxy(pl) }()
	go func() { errc <- g.ServeDNS(dl) }()
	return <-errc
}

// serveNetwork serves the proxy on TCP address proxy and the resolver on
// address dns (UDP and TCP): for a sandbox that reaches its gateway over
// the engine's network, which lets nothing else reach it (a Kubernetes
// NetworkPolicy). No refusal log is kept: the sandbox shares no volume to
// read it from, and a bash call asks the gateway instead.
func (g *Gateway) serveNetwork(proxy, dns string) error {
	pl, err := net.Listen("tcp", proxy)
	if err != nil {
		return fmt.Errorf("listen for the proxy: %w", err)
	}
	dl, err := net.Listen("tcp", dns)
	if err != nil {
		return fmt.Errorf("listen for DNS over TCP: %w", err)
	}
	du, err := net.ListenPacket("udp", dns)
	if err != nil {
		return fmt.Errorf("listen for DNS: %w", err)
	}
	errc := make(chan error, 3)
	go func() { errc <- g.ServeProxy(pl) }()
	go func() { errc <- g.ServeDNS(dl) }()
	go func() { errc <- g.ServeDNSPackets(du) }()
	return <-errc
}
