package gateway

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// hostileServer is a bound host's server that echoes the secret's value
// (the Authorization header's, after "Bearer ") wherever a response can
// carry text: the status line and code, a malformed header line, a
// header's name, an early hint's, a trailer's, and a gzip body the
// response announces after an identity encoding.
func hostileServer(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		val := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		raw := func(s string) {
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = bw.WriteString(s)
			_ = bw.Flush()
			c.Close()
		}
		switch r.URL.Path {
		case "/code":
			raw("HTTP/1.1 " + val + " OK\r\nContent-Length: 0\r\n\r\n")
		case "/line":
			raw(val + "\r\nContent-Length: 0\r\n\r\n")
		case "/headerline":
			raw("HTTP/1.1 200 OK\r\n" + val + "\r\nContent-Length: 0\r\n\r\n")
		case "/length":
			raw("HTTP/1.1 200 OK\r\nContent-Length: " + val + "\r\n\r\n")
		case "/encoding":
			raw("HTTP/1.1 200 OK\r\nContent-Encoding: " + val + "\r\nContent-Length: 1\r\n\r\nx")
		case "/name":
			raw("HTTP/1.1 200 OK\r\nX-Leak-" + val + ": 1\r\nContent-Length: 2\r\n\r\nok")
		case "/hint":
			raw("HTTP/1.1 103 Early Hints\r\nX-Hint-" + val + ": 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		case "/trailer":
			raw("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Tr-" + val + ": 1\r\nX-Tv: " + val + "\r\n\r\n")
		case "/twoencodings":
			var zb bytes.Buffer
			zw := gzip.NewWriter(&zb)
			fmt.Fprintf(zw, "you sent %s", val)
			zw.Close()
			raw(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Encoding: identity\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s", zb.Len(), zb.Bytes()))
		}
	}
}

// TestInterceptHostileAnswers: whatever a bound host's answer carries of
// the value, in any part of it, reaches neither the sandbox (status,
// header names and values, early hints, trailers, the 502's text, a body
// behind two encodings) nor the record.
func TestInterceptHostileAnswers(t *testing.T) {
	srv := upstreamServerWith(t, hostileServer(t))
	r := newInterceptRig(t, srv, true)
	folded := strings.ToLower(apiVal)
	leaks := func(s string) bool { return strings.Contains(strings.ToLower(s), folded) }
	for _, path := range []string{"/code", "/line", "/headerline", "/length", "/encoding", "/name", "/hint", "/trailer", "/twoencodings"} {
		var hints []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			hints = append(hints, fmt.Sprint(code, h))
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://example.com"+path, nil)
		req.Header.Set("Authorization", "Bearer "+apiPH)
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("TE", "trailers")
		resp, err := r.client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var dump bytes.Buffer
		_ = resp.Write(&dump) // status, headers, body, trailers
		got := dump.String() + strings.Join(hints, " ")
		if leaks(got) {
			t.Errorf("%s: the sandbox got the value: %q", path, got)
		}
		if path == "/twoencodings" && (strings.Contains(got, "Content-Encoding: gzip") || !strings.Contains(got, "you sent "+apiPH)) {
			t.Errorf("%s: the gzip body behind an identity encoding was not decoded and scrubbed: %q", path, got)
		}
		resp.Body.Close()
	}
	var all strings.Builder
	bw := bufio.NewWriter(&all)
	for _, rec := range r.g.Audit.Since("", 0, 100).Records {
		fmt.Fprintf(bw, "%+v\n", rec)
	}
	bw.Flush()
	if leaks(all.String()) {
		t.Errorf("a record holds the value:\n%s", all.String())
	}
}

// localServer listens on an address of this machine that is not its
// loopback (which no policy can allow) and hands each accepted
// connection's bytes to got.
func localServer(t *testing.T, got chan<- string) (netip.Addr, int) {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		ip, ok2 := netip.AddrFromSlice(ipn.IP)
		if !ok || !ok2 || !ip.Unmap().Is4() || ip.IsLoopback() {
			continue
		}
		ip = ip.Unmap()
		l, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			continue
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(5 * time.Second))
					b, _ := io.ReadAll(c)
					got <- string(b)
				}()
			}
		}()
		return ip, l.Addr().(*net.TCPAddr).Port
	}
	t.Skip("no address but the loopback to serve on")
	return netip.Addr{}, 0
}

// TestTrailerPlaceholderRefused: a plain request whose trailer carries a
// placeholder is an exfiltration attempt: the trailer never reaches the
// server, the client is refused, and the attempt is recorded.
func TestTrailerPlaceholderRefused(t *testing.T) {
	got := make(chan string, 4)
	ip, port := localServer(t, got)
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	target := netip.AddrPortFrom(ip, uint16(port)).String()
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist, Allow: []string{target}}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.SetSecrets(control.Secrets{Secrets: testSecretList}); err != nil {
		t.Fatal(err)
	}
	req := "POST http://" + target + "/ HTTP/1.1\r\nHost: " + target + "\r\nTransfer-Encoding: chunked\r\nTrailer: X-Key\r\n\r\n" +
		"5\r\nhello\r\n0\r\nX-Key: " + apiPH + "\r\n\r\n"
	c, s := net.Pipe()
	go g.ServeConn(s)
	go func() { _, _ = io.WriteString(c, req) }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	resp, _ := io.ReadAll(c)
	c.Close()
	if !strings.Contains(string(resp), "403") || !strings.Contains(string(resp), "The attempt is recorded") {
		t.Errorf("the client got %q", resp)
	}
	select {
	case b := <-got:
		if strings.Contains(b, apiPH) {
			t.Errorf("the server got the trailer: %q", b)
		}
	case <-time.After(5 * time.Second):
	}
	recs := g.Audit.Since("", 0, 100).Records
	if len(recs) == 0 || recs[len(recs)-1].Allowed || recs[len(recs)-1].Secret != "api" || !strings.Contains(recs[len(recs)-1].Reason, "exfiltration attempt") {
		t.Errorf("records: %+v", recs)
	}
}

// TestInterceptTrailerPlaceholder: in a tunnel the gateway terminates,
// another secret's placeholder in the request's trailer is refused and
// recorded, and the server never gets it.
func TestInterceptTrailerPlaceholder(t *testing.T) {
	seen := make(chan string, 2)
	srv := upstreamServerWith(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seen <- string(b) + fmt.Sprint(r.Trailer)
	})
	r := newInterceptRig(t, srv, true)
	req, _ := http.NewRequest("POST", "https://example.com/", io.MultiReader(strings.NewReader("hello")))
	req.ContentLength = -1
	req.Trailer = http.Header{"X-Key": {ghPH}}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "placeholder of secret github") {
		t.Errorf("the client got %d %q", resp.StatusCode, b)
	}
	select {
	case got := <-seen:
		if strings.Contains(got, ghPH) {
			t.Errorf("the server got %q", got)
		}
	default:
	}
	var exfil bool
	for _, rec := range r.g.Audit.Since("", 0, 100).Records {
		exfil = exfil || !rec.Allowed && rec.Secret == "github" && strings.Contains(rec.Reason, "exfiltration attempt")
	}
	if !exfil {
		t.Errorf("not recorded: %+v", r.g.Audit.Since("", 0, 100).Records)
	}
}
