package gateway

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// SetSecrets makes in the secrets of the next connections, and cuts the
// open tunnels it changes (those the gateway terminates, whose values may
// have changed, and plain ones to a host now bound). On the first secrets
// the gateway makes its CA; the answer holds the CA's certificate, for the
// sandbox to trust, and the secrets without their values.
func (g *Gateway) SetSecrets(in control.Secrets) (control.SecretsInfo, error) {
	s, err := compileSecrets(in)
	if err != nil {
		return control.SecretsInfo{}, err
	}
	ca, err := g.authority(len(s.list) > 0)
	if err != nil {
		return control.SecretsInfo{}, fmt.Errorf("make the gateway's CA: %w", err)
	}
	g.secrets.Store(s)
	for _, t := range g.openTunnels() {
		if t.intercepted || len(s.boundTo(t.name, t.lit, t.port)) > 0 {
			t.cut("closed when the secrets changed")
		}
	}
	return g.secretsInfo(ca), nil
}

// SecretsInfo is what the gateway holds, without values.
func (g *Gateway) SecretsInfo() control.SecretsInfo {
	ca, _ := g.authority(false)
	return g.secretsInfo(ca)
}

func (g *Gateway) secretsInfo(ca *authority) control.SecretsInfo {
	info := control.SecretsInfo{Bound: []control.BoundInfo{}}
	if s := g.secrets.Load(); s != nil {
		info.Bound = s.info()
	}
	if ca != nil {
		info.CA = string(ca.PEM())
	}
	return info
}

// authority is the gateway's CA, made when make is set and there is none.
func (g *Gateway) authority(make bool) (*authority, error) {
	g.caMu.Lock()
	defer g.caMu.Unlock()
	if g.ca == nil && make {
		ca, err := newAuthority(g.Policy().Sandbox)
		if err != nil {
			return nil, err
		}
		g.ca = ca
	}
	return g.ca, nil
}

func (g *Gateway) openTunnels() []*tunnel {
	g.mu.Lock()
	defer g.mu.Unlock()
	open := make([]*tunnel, 0, len(g.active))
	for t := range g.active {
		open = append(open, t)
	}
	return open
}

// refuseSecret answers a request that carries the placeholder of sec where
// it may not go with 403, and records it as an exfiltration attempt.
func (g *Gateway) refuseSecret(w io.Writer, rec control.Record, sec *secret, target string, why string) {
	where := net.JoinHostPort(target, strconv.Itoa(rec.Port))
	sandbox := g.sandboxName()
	rec.Allowed, rec.Secret = false, sec.Name
	rec.Reason = fmt.Sprintf("exfiltration attempt: the placeholder of secret %s sent to %s, %s", sec.Name, where, why)
	body := fmt.Sprintf("litterbox: sandbox %s may not send the placeholder of secret %s to %s: %s.\nThe secret goes only to %s, over https. The attempt is recorded.\n",
		sandbox, sec.Name, where, why, strings.Join(sec.Hosts, ", "))
	rec.DurationMS = msSince(rec.Time)
	g.Audit.Add(rec) // before the answer, as refuse's
	status := fmt.Sprintf("Forbidden: litterbox refused the placeholder of secret %s for %s", sec.Name, where)
	fmt.Fprintf(w, "HTTP/1.1 403 %s\r\nContent-Type: text/plain; charset=utf-8\r\nX-Litterbox-Refused: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		oneLine(status), oneLine(rec.Reason), len(body), body)
}

// leakWhy says why a placeholder may not go to a host over a plain
// request or tunnel.
func leakWhy(sec *secret, name string, lit netip.Addr, port int) string {
	if sec.bound(name, lit, port) {
		return "which would carry it unencrypted"
	}
	return "a host it is not bound to"
}

// bufferedConn reads what its reader holds first (a ClientHello the
// gateway peeked at), then the connection.
type bufferedConn struct {
	net.Conn
	r        io.Reader
	sent     atomic.Int64
	received atomic.Int64
}

func (c *bufferedConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.sent.Add(int64(n))
	return n, err
}

func (c *bufferedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.received.Add(int64(n))
	return n, err
}

// oneConn is a listener that accepts one connection, then waits until it
// is closed.
type oneConn struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	if c := l.c; c != nil {
		l.c = nil
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return dummyAddr{} }

type dummyAddr struct{}

func (dummyAddr) Network() string { return "tunnel" }
func (dummyAddr) String() string  { return "tunnel" }

// errorLog is a logger for net/http's complaints about the requests of an
// intercepted tunnel to host, into the gateway's log, scrubbed of pairs
// (ScrubText): a complaint may quote the server's answer, which may echo
// a value.
func (g *Gateway) errorLog(host string, pairs []string) *stdlog.Logger {
	return stdlog.New(logWriter(func(line string) { g.logf("the tunnel to %s: %s", host, ScrubText(line, pairs...)) }), "", 0)
}

// logWriter writes each line it is given to its function.
type logWriter func(line string)

func (f logWriter) Write(p []byte) (int, error) {
	f(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// interception serves the requests of one tunnel to a host secrets are
// bound to: the gateway is the TLS server the sandbox talks to (with a
// certificate of its CA), and a TLS client of the real server, whose
// certificate it verifies.
type interception struct {
	g      *Gateway
	t      *tunnel
	s      *secretSet
	target string // the name, or the address, as judged
	host   string // target:port for the URL and the Host header
	tr     *http.Transport
	// errorLog takes the server's complaints into the gateway's log,
	// scrubbed of every value of s.
	errorLog *stdlog.Logger
}

// intercept serves tunnel t, whose client's first bytes (a ClientHello for
// t's name, judged) are in br, to a host secrets of s are bound to. up is
// a connection to the checked address, made before the tunnel was
// answered; dial makes more (to the same address: no name is resolved
// again). It returns the bytes from and to the sandbox.
func (g *Gateway) intercept(t *tunnel, s *secretSet, br io.Reader, up net.Conn, dial func(context.Context) (net.Conn, error), rec *control.Record) (int64, int64) {
	ca, err := g.authority(true)
	if err != nil {
		up.Close()
		rec.Error = "the gateway's CA: " + err.Error()
		return 0, 0
	}
	target := targetText(t.name, t.lit)
	host := target
	if t.port != 443 {
		host = net.JoinHostPort(target, strconv.Itoa(t.port))
	} else if t.name == "" && t.lit.Is6() {
		host = "[" + target + "]"
	}
	client := &bufferedConn{Conn: t.client, r: br}
	defer func() { rec.Sent, rec.Received = client.sent.Load(), client.received.Load() }()
	tc := tls.Server(client, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.leaf(target) },
		// HTTP/1.1 only: the gateway reads and rewrites each request.
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		up.Close()
		rec.Error = "the sandbox's client did not finish TLS with the gateway (does it trust the gateway's CA, SSL_CERT_FILE?): " + err.Error()
		return 0, 0
	}
	_ = tc.SetDeadline(time.Time{})

	var first atomic.Pointer[net.Conn]
	first.Store(&up)
	ic := &interception{g: g, t: t, s: s, target: target, host: host, errorLog: g.errorLog(host, s.pairs)}
	ic.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c := first.Swap(nil); c != nil {
				return *c, nil
			}
			c, err := dial(ctx)
			if err == nil {
				t.add(c)
			}
			return c, err
		},
		TLSClientConfig:       &tls.Config{RootCAs: s.roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:    true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	defer func() {
		ic.tr.CloseIdleConnections()
		if c := first.Swap(nil); c != nil {
			(*c).Close()
		}
	}()
	l := &oneConn{c: tc, done: make(chan struct{})}
	srv := &http.Server{
		Handler:           ic,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeader,
		ErrorLog:          ic.errorLog,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				l.Close()
			}
		},
	}
	_ = srv.Serve(l)
	return 0, 0
}

// sameHost reports whether a request's Host names the tunnel's host:
// another would be fronting (a CDN's other site on the same address) with
// the secret's value.
func (ic *interception) sameHost(h string) bool {
	name, lit, port, err := splitTarget(h, 443)
	return err == nil && port == ic.t.port && name == ic.t.name && lit == ic.t.lit
}

// countReader counts what passes, and keeps the error that ended it
// (other than its end).
type countReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// ServeHTTP carries one request of the sandbox to the bound host.
func (ic *interception) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g := ic.g
	rec := control.Record{Kind: "https", Time: time.Now(), Host: ic.target, Port: ic.t.port, Method: r.Method, Addr: ic.t.addr.String(), Allowed: true}
	refuse := func(code int, reason, body string) {
		rec.Allowed, rec.Reason = false, reason
		rec.DurationMS = msSince(rec.Time)
		g.Audit.Add(rec) // before the answer, as Gateway.refuse's
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Litterbox-Refused", oneLine(reason))
		w.Header().Set("Connection", "close")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "litterbox: "+body+"\n")
	}
	// The sandbox's name is read (sandboxName: a file, for a pooled
	// gateway) only for a refusal's text, never for a request let through.
	switch {
	case !ic.sameHost(r.Host):
		refuse(http.StatusMisdirectedRequest, fmt.Sprintf("the request names host %s in a tunnel to %s", printableName(r.Host), ic.host),
			fmt.Sprintf("sandbox %s sent a request for %s through its tunnel to %s: a tunnel to a host a secret is bound to carries requests for that host only", g.sandboxName(), printableName(r.Host), ic.host))
		return
	case r.Method == http.MethodConnect:
		refuse(http.StatusMethodNotAllowed, "CONNECT inside a tunnel", "a CONNECT inside a tunnel is not carried")
		return
	case r.Header.Get("Upgrade") != "":
		refuse(http.StatusNotImplemented, "an upgrade (WebSocket) to a host a secret is bound to",
			fmt.Sprintf("an upgrade (%s) to %s is not carried: the gateway could not check what comes back for the secret's value", printableName(r.Header.Get("Upgrade")), ic.host))
		return
	}
	exfil := func(sec *secret) {
		rec.Secret = sec.Name
		where := net.JoinHostPort(ic.target, strconv.Itoa(ic.t.port))
		refuse(http.StatusForbidden, fmt.Sprintf("exfiltration attempt: the placeholder of secret %s sent to %s, a host it is not bound to", sec.Name, where),
			fmt.Sprintf("sandbox %s may not send the placeholder of secret %s to %s: it goes only to %s. The attempt is recorded.", g.sandboxName(), sec.Name, where, strings.Join(sec.Hosts, ", ")))
	}
	rw := ic.s.rewrite(ic.t.name, ic.t.lit, ic.t.port, r.RequestURI, r.Header)
	if rw.refused != nil {
		exfil(rw.refused)
		return
	}
	rec.Secret = strings.Join(rw.used, ",")
	rec.Reason = "TLS terminated by the gateway"
	if rec.Secret != "" {
		rec.Reason += "; secret " + rec.Secret + " added"
	}
	// The body and the answer go at the same time: without this, the
	// server would discard and close what it has not read of the body once
	// the answer's header goes out, under the proxy still reading it (to
	// its end, past the last byte the real server waited for), which
	// breaks the proxy's connection and cuts the answer off.
	_ = http.NewResponseController(w).EnableFullDuplex()
	// The answer must come as it is, so that the gateway can scrub it.
	r.Header.Del("Accept-Encoding")
	reqBody := &countReader{r: r.Body}
	var guard *trailerGuard
	if r.Body != nil && r.Body != http.NoBody {
		// A trailer comes after the body, past the check of the header:
		// another secret's placeholder there ends the request first.
		here := func(sec *secret) bool { return sec.bound(ic.t.name, ic.t.lit, ic.t.port) }
		guard = &trailerGuard{ReadCloser: r.Body, trailer: &r.Trailer, check: func(h http.Header) *secret { return ic.s.inHeader(h, here) }}
		reqBody.r = guard
		r.Body = readCloser{reqBody, r.Body}
	}
	respBody := &countReader{r: http.NoBody}
	var failure error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", ic.host
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = ""
		},
		Transport:     ic.tr,
		FlushInterval: -1,
		// Scrubbed of this request's forms of the values too.
		ErrorLog: ic.g.errorLog(ic.host, rw.pairs),
		ModifyResponse: func(resp *http.Response) error {
			scrubHeader(resp.Header, rw.pairs)
			resp.Trailer = nil
			if resp.Body == nil || resp.Body == http.NoBody || r.Method == http.MethodHead {
				return nil
			}
			var body io.Reader = resp.Body
			switch enc := contentCoding(resp.Header); enc {
			case "":
			case "gzip", "x-gzip":
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					return fmt.Errorf("the answer's gzip: %w", err)
				}
				body = zr
			default:
				// Scrubbed before it is escaped: escaped, a value would
				// no longer be found.
				return fmt.Errorf("the answer is encoded %s, which the gateway cannot check for a secret's value", printableName(ScrubText(enc, rw.pairs...)))
			}
			resp.Header.Del("Content-Encoding")
			sc, err := NewScrubber(body, rw.pairs...)
			if err != nil {
				return err
			}
			respBody.r = sc
			resp.Body = readCloser{respBody, resp.Body}
			resp.ContentLength = -1
			resp.Header.Del("Content-Length")
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if guard != nil && guard.found != nil {
				exfil(guard.found)
				return
			}
			failure = err
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			// The error may quote the server's answer, which may echo
			// the value: what it says is scrubbed like the answer.
			why := ScrubText(err.Error(), rw.pairs...)
			msg := fmt.Sprintf("litterbox gateway: %s: %s\n", ic.host, why)
			if certError(err) {
				msg = fmt.Sprintf("litterbox gateway: the certificate of %s is not valid, so the gateway did not send it the secret: %s\n", ic.host, why)
			}
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, msg)
		},
	}
	sw := &scrubHeaders{ResponseWriter: w, pairs: rw.pairs}
	defer func() {
		if p := recover(); p != nil {
			ic.failed(sw, r, rec, rw.pairs, reqBody, respBody, p)
		}
	}()
	proxy.ServeHTTP(sw, r)
	// The trailers, which the server sends once the handler returns: the
	// transport fills them in after the body, past ModifyResponse.
	sw.scrub()
	if guard != nil && guard.found != nil {
		return // recorded as it was refused
	}
	if failure != nil {
		var ue *url.Error
		if errors.As(failure, &ue) {
			failure = ue.Err
		}
		why := ScrubText(failure.Error(), rw.pairs...)
		if certError(failure) {
			rec.Allowed, rec.Reason = false, "the server's certificate is not valid: "+why
		} else {
			rec.Error = why
		}
	}
	rec.Sent, rec.Received = reqBody.n, respBody.n
	rec.DurationMS = msSince(rec.Time)
	g.Audit.Add(rec)
}

// failed records and logs a request whose handling panicked with p: the
// proxy does so with http.ErrAbortHandler when the answer, begun, could
// not be carried to its end (the server's connection broke, the client
// went away); anything else is a fault of the gateway's, logged with
// where it happened. A client with no answer yet gets a 502 that says
// so; one whose answer had begun has its connection closed, so that it
// sees the answer cut off rather than taking it for whole.
func (ic *interception) failed(sw *scrubHeaders, r *http.Request, rec control.Record, pairs []string, reqBody, respBody *countReader, p any) {
	var why string
	switch {
	case p != http.ErrAbortHandler:
		why = fmt.Sprintf("the gateway failed: %v", p)
		ic.g.logf("the tunnel to %s: %s: panic: %s\n%s", ic.host, r.Method, ScrubText(fmt.Sprint(p), pairs...), debug.Stack())
	case respBody.err != nil:
		why = "the answer was cut off: the server's side: " + respBody.err.Error()
	case sw.err != nil:
		why = "the answer was cut off: the client's side: " + sw.err.Error()
	case r.Context().Err() != nil:
		why = "the answer was cut off: the client went away"
	default:
		why = "the answer was cut off"
	}
	rec.Error = ScrubText(why, pairs...)
	rec.Sent, rec.Received = reqBody.n, respBody.n
	rec.DurationMS = msSince(rec.Time)
	ic.g.Audit.Add(rec)
	ic.g.logf("the tunnel to %s: %s: %s", ic.host, r.Method, rec.Error)
	if p != http.ErrAbortHandler && !sw.begun {
		clear(sw.Header()) // what the server's answer set there
		sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		sw.Header().Set("Connection", "close")
		sw.WriteHeader(http.StatusBadGateway)
		_, _ = fmt.Fprintf(sw, "litterbox gateway: %s: %s\n", ic.host, rec.Error)
		return
	}
	panic(http.ErrAbortHandler) // recorded and logged: the server closes the connection
}

// scrubHeaders scrubs the header of every answer it writes (the proxy
// passes an informational one, 103 Early Hints, on by itself, past
// ModifyResponse), and, once the proxy is done, the trailers. It notes
// whether the answer has begun, and the error that ended a write.
type scrubHeaders struct {
	http.ResponseWriter
	pairs []string
	begun bool
	err   error
}

func (s *scrubHeaders) WriteHeader(code int) {
	s.scrub()
	s.begun = s.begun || code >= 200
	s.ResponseWriter.WriteHeader(code)
}

func (s *scrubHeaders) Write(p []byte) (int, error) {
	s.begun = true
	n, err := s.ResponseWriter.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

func (s *scrubHeaders) scrub() { scrubHeader(s.Header(), s.pairs) }

// scrubHeader scrubs h's names and values of pairs (ScrubText).
func scrubHeader(h http.Header, pairs []string) {
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = ScrubText(v, pairs...)
		}
		if nk := ScrubText(k, pairs...); nk != k {
			delete(h, k)
			h[nk] = append(h[nk], vs...)
		}
	}
}

// contentCoding is the one content coding of an answer, from every
// Content-Encoding header and each of their comma-separated codings,
// identity left out: "" for none, the codings joined when there are more
// than one (which the gateway does not decode). A server that sends
// "identity" then "gzip" in two headers has its body decoded as the
// client would.
func contentCoding(h http.Header) string {
	var codings []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	return strings.Join(codings, ", ")
}

// Unwrap lets the proxy flush the writer under it.
func (s *scrubHeaders) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// certError reports whether err is the real server's certificate failing
// the gateway's verification.
func certError(err error) bool {
	var ve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
