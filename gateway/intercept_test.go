package gateway

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// upstreamServer is the real server of a bound host (example.com, the
// name httptest's certificate is for): it answers what it was sent, so a
// test sees what the gateway added, and echoes the secret's value back,
// so it sees what the gateway scrubbed.
func upstreamServer(t *testing.T, seen chan<- http.Header) *httptest.Server {
	return upstreamServerWith(t, func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen <- r.Header.Clone()
		}
		auth := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", auth)
		switch r.URL.Path {
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprintf(zw, "you sent %s", auth)
			zw.Close()
		case "/trailer":
			w.Header().Set("Trailer", "X-Trailer-Echo")
			fmt.Fprintf(w, "a body, then a trailer")
			w.(http.Flusher).Flush()
			w.Header().Set("X-Trailer-Echo", auth)
		case "/early":
			w.Header().Set("Link", "</style.css?auth="+auth+">; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			fmt.Fprintf(w, "after the hints")
		case "/big":
			// The value at every offset from a read's edge: 32 KiB reads.
			for i := 0; i < 64; i++ {
				_, _ = w.Write(bytes.Repeat([]byte("x"), 32<<10-i))
				_, _ = io.WriteString(w, auth)
			}
		default:
			fmt.Fprintf(w, "you sent %s", auth)
		}
	})
}

// upstreamServerWith is a bound host's real server (example.com) that
// answers with h.
func upstreamServerWith(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = discardLog // the refused and unused connections' complaints
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

var discardLog = stdlog.New(io.Discard, "", 0)

func pemOf(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// interceptRig is a gateway terminating one tunnel to example.com, whose
// real server is srv, and a client of it that trusts the gateway's CA.
type interceptRig struct {
	g      *Gateway
	client *http.Client
	recs   chan control.Record
	done   chan struct{}
}

func newInterceptRig(t *testing.T, srv *httptest.Server, trustServer bool) *interceptRig {
	t.Helper()
	g := &Gateway{Audit: NewAudit(100, nil)}
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeOpen}); err != nil {
		t.Fatal(err)
	}
	in := control.Secrets{Secrets: []control.Secret{
		{Name: "api", Placeholder: apiPH, Value: apiVal, Hosts: []string{"example.com"}},
		{Name: "github", Placeholder: ghPH, Value: ghValue, Hosts: []string{"github.com"}, Basic: "x-access-token:{}"},
	}}
	if trustServer {
		in.Roots = []string{pemOf(srv.Certificate())}
	}
	info, err := g.SetSecrets(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fmt.Sprint(info), apiVal) || strings.Contains(fmt.Sprint(info), ghValue) {
		t.Fatal("the answer to secrets holds a value")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(info.CA)) {
		t.Fatalf("the CA: %q", info.CA)
	}
	addr := srv.Listener.Addr().(*net.TCPAddr)
	dial := func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr.String())
	}
	up, err := dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gwSide, clientSide := net.Pipe()
	tun := &tunnel{name: "example.com", port: 443, addr: netip.MustParseAddr("127.0.0.1"), client: gwSide, up: up}
	r := &interceptRig{g: g, recs: make(chan control.Record, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var rec control.Record
		g.intercept(tun, g.secrets.Load(), gwSide, up, dial, &rec)
		gwSide.Close()
	}()
	used := false
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, fmt.Errorf("a second connection")
			}
			used = true
			return clientSide, nil
		},
		// The client offers h2 too: the gateway takes http/1.1 only.
		TLSClientConfig:    &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}},
		DisableCompression: true,
		MaxConnsPerHost:    1,
	}}
	t.Cleanup(func() {
		r.client.CloseIdleConnections()
		clientSide.Close()
		<-r.done
	})
	return r
}

func (r *interceptRig) do(t *testing.T, path string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "https://example.com"+path, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("%s: read: %v", path, err)
	}
	return resp, string(b)
}

// TestIntercept: through a tunnel the gateway terminates, the bound
// secret's placeholder reaches the server as the value, and whatever the
// server echoes of it reaches the client as the placeholder: in a header,
// a body, a gzip body, a long streamed body; another secret's placeholder
// is refused and recorded, as is a request for another host.
func TestIntercept(t *testing.T) {
	seen := make(chan http.Header, 10)
	srv := upstreamServer(t, seen)
	r := newInterceptRig(t, srv, true)
	bearer := http.Header{"Authorization": {"Bearer " + apiPH}}

	resp, body := r.do(t, "/", bearer)
	if got := (<-seen).Get("Authorization"); got != "Bearer "+apiVal {
		t.Errorf("the server got %q", got)
	}
	if resp.StatusCode != 200 || body != "you sent Bearer "+apiPH || resp.Header.Get("X-Echo") != "Bearer "+apiPH {
		t.Errorf("the client got %d %q, X-Echo %q", resp.StatusCode, body, resp.Header.Get("X-Echo"))
	}
	if resp.ProtoMajor != 1 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" {
		t.Errorf("protocol %s, ALPN %v", resp.Proto, resp.TLS)
	}

	_, body = r.do(t, "/gzip", bearer)
	<-seen
	if body != "you sent Bearer "+apiPH {
		t.Errorf("gzip: %q", body)
	}

	_, body = r.do(t, "/big", bearer)
	<-seen
	if n := strings.Count(body, apiPH); n != 64 || strings.Contains(body, apiVal) {
		t.Errorf("big: %d placeholders, value there: %v", n, strings.Contains(body, apiVal))
	}

	// So are trailers.
	req, _ := http.NewRequest("GET", "https://example.com/trailer", nil)
	req.Header.Set("Authorization", "Bearer "+apiPH)
	req.Header.Set("TE", "trailers")
	if resp, err := r.client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := fmt.Sprint(resp.Trailer); strings.Contains(got, apiVal) {
			t.Errorf("trailers: %s", got)
		}
	}
	<-seen

	// An informational answer's headers are scrubbed too.
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, h))
		return nil
	}}
	req, _ = http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://example.com/early", nil)
	req.Header.Set("Authorization", "Bearer "+apiPH)
	if resp, err := r.client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	<-seen
	if got := strings.Join(hints, " "); !strings.Contains(got, "103") || strings.Contains(got, apiVal) || !strings.Contains(got, apiPH) {
		t.Errorf("early hints: %q", got)
	}

	resp, body = r.do(t, "/", http.Header{"X-Steal": {ghPH}})
	if resp.StatusCode != 403 || !strings.Contains(body, "sandbox alpha may not send the placeholder of secret github to example.com:443") {
		t.Errorf("another secret's placeholder: %d %q", resp.StatusCode, body)
	}
	select {
	case h := <-seen:
		t.Errorf("the server got a refused request: %v", h)
	default:
	}

	recs := r.g.Audit.Since("", 0, 100).Records
	var used, exfil bool
	for _, rec := range recs {
		if strings.Contains(fmt.Sprint(rec), apiVal) || strings.Contains(fmt.Sprint(rec), ghValue) {
			t.Errorf("a record holds a value: %+v", rec)
		}
		used = used || rec.Kind == "https" && rec.Allowed && rec.Secret == "api" && strings.Contains(rec.Reason, "secret api added")
		exfil = exfil || rec.Kind == "https" && !rec.Allowed && rec.Secret == "github" && strings.Contains(rec.Reason, "exfiltration attempt")
	}
	if !used || !exfil {
		t.Errorf("records (used %v, exfil %v): %+v", used, exfil, recs)
	}
}

// TestInterceptFronting: a request naming another host inside the tunnel
// is refused before the secret is added.
func TestInterceptFronting(t *testing.T) {
	seen := make(chan http.Header, 1)
	r := newInterceptRig(t, upstreamServer(t, seen), true)
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	req.Host = "attacker.example"
	req.Header.Set("Authorization", "Bearer "+apiPH)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(b), "sandbox alpha sent a request for attacker.example") {
		t.Errorf("status %d: %q", resp.StatusCode, b)
	}
	if len(seen) != 0 {
		t.Error("the server got it")
	}
}

// TestInterceptBadCertificate: a bound host whose real certificate the
// gateway does not trust gets no request, and the client a 502 that says
// why.
func TestInterceptBadCertificate(t *testing.T) {
	seen := make(chan http.Header, 1)
	r := newInterceptRig(t, upstreamServer(t, seen), false)
	resp, body := r.do(t, "/", http.Header{"Authorization": {"Bearer " + apiPH}})
	if resp.StatusCode != 502 || !strings.Contains(body, "the certificate of example.com is not valid") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if len(seen) != 0 {
		t.Error("the server got the request")
	}
	var refused bool
	for _, rec := range r.g.Audit.Since("", 0, 100).Records {
		refused = refused || rec.Kind == "https" && !rec.Allowed && strings.Contains(rec.Reason, "certificate is not valid")
	}
	if !refused {
		t.Errorf("no refusal recorded: %+v", r.g.Audit.Since("", 0, 100).Records)
	}
}

// tlsConn is the client's own TLS connection through the rig's tunnel,
// for a test that writes its request byte by byte.
func (r *interceptRig) tlsConn(t *testing.T) *tls.Conn {
	t.Helper()
	tr := r.client.Transport.(*http.Transport)
	c, err := tr.DialContext(context.Background(), "tcp", "example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "example.com", NextProtos: []string{"http/1.1"}})
	t.Cleanup(func() { tc.Close() })
	return tc
}

// TestInterceptFullDuplex: the gateway carries a request's body and its
// answer at the same time. A server whose answer starts before the
// gateway has read the end of the body (a model API streaming its answer,
// or only the gateway's own client not yet past the body's last read)
// used to have the gateway's server discard and close the request body
// as the answer's header went out, under the proxy still reading it: the
// proxy's connection to the server broke, and the client got the answer
// cut off before its end, with no record of it (run_gemini's CI failure,
// "SocketError: other side closed": the answer whole but its last chunk).
func TestInterceptFullDuplex(t *testing.T) {
	srv := upstreamServerWith(t, func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "data: got %d bytes, %v\n\n", n, err)
	})
	r := newInterceptRig(t, srv, true)
	conn := r.tlsConn(t)
	body := strings.Repeat("x", 48<<10)
	// All of the body but its last byte, which goes once the answer has
	// begun.
	if _, err := fmt.Fprintf(conn, "POST /v1beta/models/m:streamGenerateContent HTTP/1.1\r\nHost: example.com\r\nX-Goog-Api-Key: %s\r\nContent-Length: %d\r\n\r\n%s", apiPH, len(body), body[:len(body)-1]); err != nil {
		t.Fatal(err)
	}
	first := make(chan string, 1)
	rest := make(chan string, 1)
	go func() {
		defer close(rest)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			first <- err.Error()
			return
		}
		defer resp.Body.Close()
		b := make([]byte, len("data: first\n\n"))
		_, err = io.ReadFull(resp.Body, b)
		first <- fmt.Sprintf("%d %s %v", resp.StatusCode, b, err)
		all, err := io.ReadAll(resp.Body)
		rest <- fmt.Sprintf("%s, %v", all, err)
	}()
	select {
	case got := <-first:
		if got != "200 data: first\n\n <nil>" {
			t.Errorf("the answer's start: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the answer did not start before the body's end was sent")
	}
	if _, err := io.WriteString(conn, body[len(body)-1:]); err != nil {
		t.Fatal(err)
	}
	if got, want := <-rest, fmt.Sprintf("data: got %d bytes, <nil>\n\n, <nil>", len(body)); got != want {
		t.Errorf("the answer's end: %q, want %q", got, want)
	}
	var recorded bool
	for _, rec := range r.g.Audit.Since("", 0, 100).Records {
		recorded = recorded || rec.Kind == "https" && rec.Allowed && rec.Error == "" && rec.Sent == int64(len(body))
	}
	if !recorded {
		t.Errorf("the request is not recorded whole: %+v", r.g.Audit.Since("", 0, 100).Records)
	}
}

// TestInterceptAnswerCutOff: a server that breaks its connection in the
// middle of an answer. The client sees the answer cut off, not a whole
// one; the gateway records the request with why, and logs it (it used to
// keep no record of it: the proxy's abort skipped the record, and the
// server's complaint went nowhere).
func TestInterceptAnswerCutOff(t *testing.T) {
	srv := upstreamServerWith(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	})
	r := newInterceptRig(t, srv, true)
	logged := r.captureLog()
	req, _ := http.NewRequest("POST", "https://example.com/stream", strings.NewReader(`{"contents":[]}`))
	req.Header.Set("X-Goog-Api-Key", apiPH)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(b) != "data: first\n\n" {
		t.Errorf("the client got %q, %v: want the first event, then the answer cut off", b, err)
	}
	var rec control.Record
	for _, x := range r.g.Audit.Since("", 0, 100).Records {
		if x.Kind == "https" {
			rec = x
		}
	}
	if !strings.Contains(rec.Error, "the answer was cut off: the server's side") || rec.Received != int64(len(b)) || rec.Secret != "api" {
		t.Errorf("the request's record: %+v", rec)
	}
	if got := logged(); !strings.Contains(got, "the tunnel to example.com: POST: the answer was cut off") {
		t.Errorf("the gateway's log: %q", got)
	}
}

// TestInterceptLogHoldsNoValue: what net/http says of a failed answer goes
// into the gateway's log scrubbed, as the record is: a server whose
// trailer echoes the value, malformed (net/http quotes the line in its
// error), leaves neither the value in the log nor the record.
func TestInterceptLogHoldsNoValue(t *testing.T) {
	srv := upstreamServerWith(t, func(w http.ResponseWriter, r *http.Request) {
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n5\r\nfirst\r\n0\r\necho %s\r\n\r\n", r.Header.Get("X-Goog-Api-Key"))
		bw.Flush()
	})
	r := newInterceptRig(t, srv, true)
	logged := r.captureLog()
	req, _ := http.NewRequest("GET", "https://example.com/echo", nil)
	req.Header.Set("X-Goog-Api-Key", apiPH)
	if resp, err := r.client.Do(req); err == nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	var rec control.Record
	for _, x := range r.g.Audit.Since("", 0, 100).Records {
		if x.Kind == "https" {
			rec = x
		}
	}
	if rec.Error == "" || strings.Contains(fmt.Sprint(rec), apiVal) {
		t.Errorf("the request's record: %+v", rec)
	}
	got := logged()
	if !strings.Contains(got, "echo "+apiPH) || strings.Contains(got, apiVal) {
		t.Errorf("the gateway's log holds the value, or not the failure with the placeholder: %q", got)
	}
}

// captureLog takes the gateway's log: what it returns gives the lines
// logged so far.
func (r *interceptRig) captureLog() func() string {
	var mu sync.Mutex
	var logged []string
	r.g.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(logged, "\n")
	}
}
