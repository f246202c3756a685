package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// Limits of what a client may send before it is judged.
const (
	maxHeader   = 64 << 10
	idleTimeout = 5 * time.Minute
	// maxClients bounds the connections one gateway carries at once.
	maxClients = 1024
)

// ServeProxy serves the HTTP proxy on l until l is closed: on a unix
// listener, the relay hands over each client's connection (recvConn); on
// any other, the connections are the clients'.
func (g *Gateway) ServeProxy(l net.Listener) error {
	// A connection over the limit is told so, on the client's own socket
	// (the relay's connection only brings it): a few at a time, each
	// quickly, the others closed.
	busying := make(chan struct{}, 16)
	busy := func(c net.Conn) {
		select {
		case busying <- struct{}{}:
		default:
			c.Close()
			return
		}
		go func() {
			defer func() { <-busying }()
			if c = g.clientOf(c, time.Second); c == nil {
				return
			}
			defer c.Close()
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			writeSimple(c, 503, "Service Unavailable: the gateway carries too many connections",
				"litterbox gateway: the sandbox has too many connections open through its gateway; close some and try again\n")
		}()
	}
	return serve(l, make(chan struct{}, cmpOrInt(g.MaxClients, maxClients)), busy, func(conn net.Conn) {
		if conn = g.clientOf(conn, 10*time.Second); conn != nil {
			g.ServeConn(conn)
		}
	})
}

// clientOf is the client's connection conn brings: on a unix socket, the
// relay passes the client's socket (recvConn), or carries its bytes, within
// wait; else conn itself. It is nil (conn closed) when none came.
func (g *Gateway) clientOf(conn net.Conn, wait time.Duration) net.Conn {
	u, ok := conn.(*net.UnixConn)
	if !ok {
		return conn
	}
	_ = u.SetReadDeadline(time.Now().Add(wait))
	c, err := recvConn(u)
	if err != nil {
		u.Close()
		g.logf("proxy: %v", err)
		return nil
	}
	if c == net.Conn(u) {
		_ = u.SetReadDeadline(time.Time{}) // the relay carries the client's bytes
	} else {
		u.Close()
	}
	return c
}

func cmpOrInt(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// limitReader fails reads past n bytes: it bounds a request's header.
type limitReader struct {
	r io.Reader
	n int64
}

var errHeaderTooLarge = errors.New("request header too large")

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeaderTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

// ServeConn serves one client connection: requests one after another until
// a CONNECT turns it into a tunnel, or either side closes.
func (g *Gateway) ServeConn(conn net.Conn) {
	defer conn.Close()
	lr := &limitReader{r: conn}
	br := bufio.NewReaderSize(lr, maxHello)
	var up *upstream
	defer func() {
		if up != nil {
			up.conn.Close()
		}
	}()
	for {
		lr.n = maxHeader
		_ = conn.SetReadDeadline(time.Now().Add(idleTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
				writeSimple(conn, 400, "Bad Request", "litterbox gateway: a malformed request: "+err.Error()+"\n")
			}
			return
		}
		lr.n = 1 << 62
		_ = conn.SetReadDeadline(time.Time{})
		if req.Method != http.MethodConnect && asksRefused(req) {
			g.answerRefused(conn, req)
			return
		}
		if req.Method == http.MethodConnect {
			g.tunnel(conn, br, req)
			return
		}
		var keep bool
		up, keep = g.forward(conn, br, req, up)
		if !keep {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeSimple writes a response with a text body and closes the exchange.
func writeSimple(w io.Writer, code int, status, body string) {
	status = oneLine(status)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, status, len(body), body)
}

// oneLine keeps a text fit for a status line or header.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// judge decides on a request's target, named on rec; a refusal is
// answered and recorded, and ok is false.
func (g *Gateway) judge(conn net.Conn, rec *control.Record, target, name string, lit netip.Addr, port int) (*policy.Compiled, decision, bool) {
	rec.Host, rec.Port = target, port
	c := g.current()
	d := g.decide(context.Background(), c, name, lit, port)
	if !d.allowed {
		g.refuse(conn, c, *rec, target, d)
		return c, d, false
	}
	return c, d, true
}

// refuse answers a refused request with 403, and records it.
func (g *Gateway) refuse(conn net.Conn, c *policy.Compiled, rec control.Record, target string, d decision) {
	body := refusalText(g.sandboxName(), target, rec.Port, d)
	rec.Allowed, rec.Reason = false, d.reason
	if d.addr.IsValid() {
		rec.Addr = d.addr.String()
	}
	// Recorded before the client is answered: the command that was
	// refused finds the record once it has the answer (RefusalLog).
	rec.DurationMS = msSince(rec.Time)
	g.Audit.Add(rec)
	status := "Forbidden: litterbox refused " + net.JoinHostPort(target, strconv.Itoa(rec.Port)) + " (" + d.reason + ")"
	fmt.Fprintf(conn, "HTTP/1.1 403 %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Litterbox-Refused: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		oneLine(status), oneLine(d.reason), len(body), body)
}

// failed answers an allowed request that could not be carried out (the
// name did not resolve, the server did not answer) with 502, and records
// it.
func (g *Gateway) failed(conn net.Conn, rec control.Record, err error) {
	rec.Error = err.Error()
	rec.DurationMS = msSince(rec.Time)
	g.Audit.Add(rec)
	writeSimple(conn, 502, "Bad Gateway", "litterbox gateway: "+err.Error()+"\n")
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}

// target reads a request's target: host and port.
func splitTarget(hostport string, defaultPort int) (name string, lit netip.Addr, port int, err error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 {
			return "", netip.Addr{}, 0, fmt.Errorf("%q is not HOST:PORT", hostport)
		}
		host, p = hostport, strconv.Itoa(defaultPort)
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
	}
	port, err = policy.ParsePort(p)
	if err != nil {
		return "", netip.Addr{}, 0, err
	}
	name, lit, err = policy.NormalizeHost(host)
	return name, lit, port, err
}

func targetText(name string, lit netip.Addr) string {
	if name != "" {
		return name
	}
	return lit.String()
}

// tunnel serves a CONNECT: judge the target, connect to a checked address,
// and carry bytes both ways once the ClientHello names the same server.
func (g *Gateway) tunnel(conn net.Conn, br *bufio.Reader, req *http.Request) {
	start := time.Now()
	rec := control.Record{Kind: "connect", Time: start}
	name, lit, port, err := splitTarget(req.RequestURI, 0)
	if err != nil {
		rec.Host, rec.Reason = printableName(req.RequestURI), "a malformed target: "+err.Error()
		g.Audit.Add(rec)
		writeSimple(conn, 400, "Bad Request", "litterbox gateway: CONNECT needs HOST:PORT: "+err.Error()+"\n")
		return
	}
	target := targetText(name, lit)
	secrets := g.secrets.Load()
	// A CONNECT's header goes no further than the gateway; its target
	// does (the name is the server's, in the ClientHello too).
	if sec := secrets.carried(req.RequestURI, nil); sec != nil {
		rec.Host, rec.Port = target, port
		g.refuseSecret(conn, rec, sec, target, "in the name of the host")
		return
	}
	c, d, ok := g.judge(conn, &rec, target, name, lit, port)
	if !ok {
		return
	}
	rec.Allowed, rec.Reason = true, d.reason
	if d.err != nil {
		g.failed(conn, rec, d.err)
		return
	}
	up, addr, err := g.dial(context.Background(), d.addrs, port)
	if err != nil {
		rec.Addr = d.addrs[0].String()
		g.failed(conn, rec, fmt.Errorf("connect to %s: %w", target, err))
		return
	}
	rec.Addr = addr.String()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		rec.Error = err.Error()
		rec.DurationMS = msSince(start)
		g.Audit.Add(rec)
		return
	}
	t := &tunnel{name: name, lit: lit, port: port, addr: addr, client: conn, up: up}
	g.track(t, true)
	defer g.track(t, false)
	if bound := secrets.boundTo(name, lit, port); len(bound) > 0 {
		// A host secrets are bound to: the gateway terminates TLS, and
		// carries the requests itself.
		t.intercepted = true
		_, refused, isTLS := g.judgeTunnel(t, c, br, &rec)
		switch {
		case refused:
			up.Close()
		case !isTLS:
			rec.Allowed, rec.Reason = false, fmt.Sprintf("the tunnel to %s, which secret %s is bound to, does not carry TLS", net.JoinHostPort(target, strconv.Itoa(port)), bound[0].Name)
			up.Close()
		default:
			rec.Reason += "; TLS terminated by the gateway for secret " + secretNames(bound)
			dial := func(ctx context.Context) (net.Conn, error) {
				c, _, err := g.dial(ctx, []netip.Addr{addr}, port)
				return c, err
			}
			g.intercept(t, secrets, br, up, dial, &rec)
		}
		rec.DurationMS = msSince(start)
		if why := t.cutReason(); why != "" {
			rec.Error = why
		}
		g.Audit.Add(rec)
		return
	}

	// The server's bytes flow from the start (a protocol where the server
	// speaks first works); the client's only once the first of them is
	// judged.
	sent, received, _ := carry(conn, up, br, func() bool {
		_, refused, _ := g.judgeTunnel(t, c, br, &rec)
		return refused
	})
	rec.Sent, rec.Received = sent, received
	rec.DurationMS = msSince(start)
	if why := t.cutReason(); why != "" {
		rec.Error = why
	}
	g.Audit.Add(rec)
}

// tlsAccessDenied is a TLS fatal alert, access_denied: a client that is cut
// off after its ClientHello says so ("tlsv1 alert access denied").
var tlsAccessDenied = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49}

// judgeTunnel peeks at the client's first bytes: a TLS ClientHello must name
// the server the CONNECT named; a tunnel on ports 80 and 443 must carry TLS.
// It returns refused (and records why in rec) when the tunnel must close,
// and isTLS when its first bytes are a ClientHello.
func (g *Gateway) judgeTunnel(t *tunnel, c *policy.Compiled, br *bufio.Reader, rec *control.Record) (sent int64, refused, isTLS bool) {
	h, err := PeekClientHello(br)
	deny := func(reason string, alert bool) (int64, bool, bool) {
		rec.Allowed, rec.Reason = false, reason
		if alert {
			_, _ = t.client.Write(tlsAccessDenied)
		}
		return 0, true, err == nil
	}
	switch {
	case errors.Is(err, errNotTLS):
		if slices.Contains(policy.DefaultPorts, t.port) {
			return deny(fmt.Sprintf("the tunnel to port %d does not carry TLS (send plain HTTP through the proxy, where it is judged by its Host)", t.port), false)
		}
		rec.Reason += "; not TLS"
		return 0, false, false
	case err != nil:
		if br.Buffered() == 0 {
			return 0, t.intercepted, false // the client sent nothing and closed
		}
		return deny("a malformed TLS ClientHello: "+err.Error(), true)
	}
	rec.SNI = h.ServerName
	switch {
	case h.ECH:
		return deny("the ClientHello is encrypted (ECH), which hides the server it is for", true)
	case t.name != "" && h.ServerName == "":
		return deny(fmt.Sprintf("the TLS ClientHello names no server; it must name %s", t.name), true)
	case t.name != "" && h.ServerName != t.name:
		return deny(fmt.Sprintf("the TLS ClientHello names %s, not %s", h.ServerName, t.name), true)
	case t.name == "" && h.ServerName != "":
		if v := c.JudgeName(h.ServerName, netip.Addr{}, t.port); !v.Allowed {
			return deny(fmt.Sprintf("the TLS ClientHello names %s, which is %s", h.ServerName, v.By), true)
		}
	}
	return 0, false, true
}

// tunnel is an open CONNECT tunnel, cut when the policy changes to refuse it.
type tunnel struct {
	name       string
	lit        netip.Addr
	port       int
	addr       netip.Addr
	client, up net.Conn
	// intercepted is set when the gateway terminates the tunnel's TLS: a
	// secret is bound to its host.
	intercepted bool

	mu  sync.Mutex
	why string
	// more are the connections to the server made after up (the gateway
	// makes them for a tunnel it terminates).
	more []net.Conn
}

func (t *tunnel) cut(why string) {
	t.mu.Lock()
	t.why = why
	more := t.more
	t.mu.Unlock()
	t.up.Close()
	t.client.Close()
	for _, c := range more {
		c.Close()
	}
}

// add makes c one of the connections cut closes.
func (t *tunnel) add(c net.Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.why != "" {
		c.Close()
		return
	}
	t.more = append(t.more, c)
}

func (t *tunnel) cutReason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.why
}

func (g *Gateway) track(t *tunnel, open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active == nil {
		g.active = map[*tunnel]struct{}{}
	}
	if open {
		g.active[t] = struct{}{}
	} else {
		delete(g.active, t)
	}
}

// upstream is the server connection of a client's plain HTTP requests,
// kept for the next request to the same server.
type upstream struct {
	key  string // host:port as judged
	addr netip.Addr
	conn net.Conn
	br   *bufio.Reader
}

// hopHeaders are the headers of one hop, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header, keepUpgrade bool) {
	for _, f := range h.Values("Connection") {
		for _, k := range strings.Split(f, ",") {
			if k = strings.TrimSpace(k); k != "" && !(keepUpgrade && strings.EqualFold(k, "upgrade")) {
				h.Del(k)
			}
		}
	}
	for _, k := range hopHeaders {
		if keepUpgrade && (k == "Connection" || k == "Upgrade") {
			continue
		}
		h.Del(k)
	}
}

// forward serves one plain HTTP request: judged by the host of its URL (or
// its Host header, for a request in origin form), sent to a checked address
// with that host as its Host header. It returns the server connection to
// keep for the next request, and whether the client connection stays open.
func (g *Gateway) forward(conn net.Conn, br *bufio.Reader, req *http.Request, up *upstream) (*upstream, bool) {
	start := time.Now()
	rec := control.Record{Kind: "http", Time: start, Method: req.Method}
	hostport := req.Host
	if req.URL.IsAbs() {
		if req.URL.Scheme != "http" {
			rec.Host, rec.Reason = printableName(req.URL.Host), "scheme "+req.URL.Scheme+" through a plain request"
			g.Audit.Add(rec)
			writeSimple(conn, 400, "Bad Request", "litterbox gateway: only http:// URLs are forwarded as they are; for https, clients use CONNECT\n")
			return up, false
		}
		hostport = req.URL.Host
	}
	name, lit, port, err := splitTarget(hostport, 80)
	if err != nil || hostport == "" {
		rec.Host, rec.Reason = printableName(hostport), "no valid host"
		g.Audit.Add(rec)
		writeSimple(conn, 400, "Bad Request", "litterbox gateway: the request names no valid host\n")
		return up, false
	}
	target := targetText(name, lit)
	if sec := g.secrets.Load().leak(req.RequestURI, req.Header); sec != nil {
		rec.Host, rec.Port = target, port
		g.refuseSecret(conn, rec, sec, target, leakWhy(sec, name, lit, port))
		return up, false
	}
	_, d, ok := g.judge(conn, &rec, target, name, lit, port)
	if !ok {
		return up, false
	}
	rec.Allowed, rec.Reason = true, d.reason
	fail := func(err error) (*upstream, bool) {
		g.failed(conn, rec, err)
		return up, false
	}
	if d.err != nil {
		return fail(d.err)
	}
	key := net.JoinHostPort(target, strconv.Itoa(port))
	if up != nil && (up.key != key || !slices.Contains(d.addrs, up.addr)) {
		up.conn.Close()
		up = nil
	}
	if up == nil {
		uc, addr, err := g.dial(context.Background(), d.addrs, port)
		if err != nil {
			return fail(fmt.Errorf("connect to %s: %w", target, err))
		}
		up = &upstream{key: key, addr: addr, conn: uc, br: bufio.NewReader(uc)}
	}
	rec.Addr = up.addr.String()

	upgrade := strings.EqualFold(req.Header.Get("Upgrade"), "websocket") && headerHas(req.Header, "Connection", "upgrade")
	removeHopHeaders(req.Header, upgrade)
	req.RequestURI = ""
	req.Host = target
	if port != 80 {
		req.Host = key
	}
	req.URL.Scheme, req.URL.Host = "", ""
	clientClose := req.Close
	req.Close = false
	var guard *trailerGuard
	if req.Body != nil && req.Body != http.NoBody {
		// A trailer comes after the body, past the check of the header.
		secrets := g.secrets.Load()
		guard = &trailerGuard{ReadCloser: req.Body, trailer: &req.Trailer, check: func(h http.Header) *secret { return secrets.leak("", h) }}
		req.Body = guard
	}
	sent := &countWriter{w: up.conn}
	bw := bufio.NewWriter(sent)
	err = req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		up.conn.Close()
		up = nil
		if guard != nil && guard.found != nil {
			rec.Sent = sent.n
			g.refuseSecret(conn, rec, guard.found, target, "in a trailer of the request (the server got the body, not the trailer)")
			return up, false
		}
		return fail(err)
	}
	received := &countWriter{w: conn}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(up.br, req)
		if err != nil {
			up.conn.Close()
			up = nil
			rec.Sent = sent.n
			return fail(fmt.Errorf("read the response of %s: %w", target, err))
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		_ = resp.Write(received) // 1xx: pass it on, read the real one
	}
	switching := resp.StatusCode == http.StatusSwitchingProtocols && upgrade
	removeHopHeaders(resp.Header, switching)
	closeAfter := clientClose || resp.Close || resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 && !switching && req.Method != http.MethodHead && resp.StatusCode != 204 && resp.StatusCode != 304
	resp.Close = closeAfter
	var werr error
	if resp.ContentLength > 0 && len(resp.TransferEncoding) == 0 && req.Method != http.MethodHead && !switching {
		// A body of known length: the header, what is buffered, then the
		// rest spliced from socket to socket (apt's downloads are plain
		// HTTP).
		werr = writeHeader(received, resp)
		if werr == nil {
			var n int64
			n, werr = copyBody(received, conn, up.conn, up.br, resp.ContentLength)
			if werr == nil && n < resp.ContentLength {
				werr = io.ErrUnexpectedEOF
			}
		}
	} else {
		werr = resp.Write(received)
		resp.Body.Close()
	}
	if switching && werr == nil {
		// A WebSocket: from now on, bytes both ways, what the server's
		// reader holds first.
		n, _ := writeBuffered(conn, up.br, math.MaxInt)
		fwd, back, _ := carry(conn, up.conn, br, nil)
		sent.n += fwd
		received.n += n + back
		closeAfter = true
	}
	rec.Sent, rec.Received = sent.n, received.n
	rec.DurationMS = msSince(start)
	g.Audit.Add(rec)
	if werr != nil || closeAfter || resp.Close {
		return up, false
	}
	return up, true
}

// writeHeader writes resp's status line and header, with its length.
func writeHeader(w io.Writer, resp *http.Response) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", oneLine(resp.Status))
	resp.Header.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	if resp.Close {
		resp.Header.Set("Connection", "close")
	}
	if err := resp.Header.Write(bw); err != nil {
		return err
	}
	bw.WriteString("\r\n")
	return bw.Flush()
}

func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
