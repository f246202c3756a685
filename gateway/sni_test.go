package gateway

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// clientHello is the first flight of a real crypto/tls client for
// serverName (no SNI for an IP address or "").
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: serverName, InsecureSkipVerify: serverName == ""})
		_ = c.Handshake()
		a.Close()
	}()
	var buf bytes.Buffer
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	// One record header, then its body.
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	buf.Write(hdr)
	buf.Write(body)
	return buf.Bytes()
}

// refragment splits the handshake of one TLS record into records of at
// most n bytes each.
func refragment(rec []byte, n int) []byte {
	body := rec[5:]
	var out []byte
	for len(body) > 0 {
		k := min(n, len(body))
		out = append(out, 0x16, 3, 1, byte(k>>8), byte(k))
		out = append(out, body[:k]...)
		body = body[k:]
	}
	return out
}

// oneByteReader hands out one byte per Read, as a slow network might.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func peek(b []byte, slow bool) (Hello, *bufio.Reader, error) {
	var r io.Reader = bytes.NewReader(b)
	if slow {
		r = oneByteReader{r}
	}
	br := bufio.NewReaderSize(r, maxHello)
	h, err := PeekClientHello(br)
	return h, br, err
}

func TestPeekClientHello(t *testing.T) {
	hello := clientHello(t, "Registry.NPMJS.org")
	for _, tc := range []struct {
		name string
		in   []byte
		slow bool
	}{
		{"one record", hello, false},
		{"one byte at a time", hello, true},
		{"records of 7 bytes", refragment(hello, 7), false},
		{"records of 100 bytes, slowly", refragment(hello, 100), true},
	} {
		in := append(append([]byte(nil), tc.in...), "and then application data"...)
		h, br, err := peek(in, tc.slow)
		if err != nil || h.ServerName != "registry.npmjs.org" || h.ECH {
			t.Errorf("%s: %+v, %v", tc.name, h, err)
			continue
		}
		// Nothing was consumed: what is forwarded is what came.
		all, _ := io.ReadAll(br)
		if !bytes.Equal(all, in) {
			t.Errorf("%s: the peek consumed bytes", tc.name)
		}
	}
	if h, _, err := peek(clientHello(t, ""), false); err != nil || h.ServerName != "" {
		t.Errorf("no SNI: %+v, %v", h, err)
	}
	if h, _, err := peek(clientHello(t, "10.0.0.1"), false); err != nil || h.ServerName != "" {
		t.Errorf("an IP address sends no SNI: %+v, %v", h, err)
	}
}

func TestPeekClientHelloRefuses(t *testing.T) {
	hello := clientHello(t, "a.example")
	if _, _, err := peek([]byte("GET / HTTP/1.1\r\n\r\n"), false); !errors.Is(err, errNotTLS) {
		t.Errorf("plain HTTP: %v", err)
	}
	if _, _, err := peek([]byte("SSH-2.0-OpenSSH_9.2\r\n"), false); !errors.Is(err, errNotTLS) {
		t.Errorf("ssh: %v", err)
	}
	if _, _, err := peek([]byte{0x16, 2, 0, 0, 5, 1, 2, 3, 4, 5}, false); !errors.Is(err, errNotTLS) {
		t.Errorf("SSLv2-like: %v", err)
	}
	truncated := hello[:len(hello)-10]
	if _, _, err := peek(truncated, false); err == nil {
		t.Error("a truncated hello passed")
	}
	// A handshake interrupted by another record type.
	frag := refragment(hello, 50)
	bad := append(append([]byte(nil), frag[:55]...), 0x17, 3, 3, 0, 1, 0)
	if _, _, err := peek(bad, false); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("interrupted: %v", err)
	}
	// A ClientHello claiming to be larger than the gateway reads.
	huge := []byte{0x16, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff}
	if _, _, err := peek(huge, false); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("huge: %v", err)
	}
	// Not a ClientHello.
	if _, _, err := peek([]byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, false); err == nil {
		t.Error("a ServerHello passed")
	}
}

// buildHello builds a ClientHello record with the given extensions.
func buildHello(exts ...[]byte) []byte {
	var body []byte
	body = append(body, 3, 3)
	body = append(body, make([]byte, 32)...)
	body = append(body, 0)                // session id
	body = append(body, 0, 2, 0x13, 0x01) // one cipher suite
	body = append(body, 1, 0)             // compression
	var e []byte
	for _, x := range exts {
		e = append(e, x...)
	}
	body = append(body, byte(len(e)>>8), byte(len(e)))
	body = append(body, e...)
	msg := append([]byte{1, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{0x16, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

func ext(typ uint16, data []byte) []byte {
	return append([]byte{byte(typ >> 8), byte(typ), byte(len(data) >> 8), byte(len(data))}, data...)
}

func sniExt(names ...string) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0, byte(len(n)>>8), byte(len(n)))
		list = append(list, n...)
	}
	return ext(0, append([]byte{byte(len(list) >> 8), byte(len(list))}, list...))
}

func TestParseClientHelloCrafted(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  []byte
		sni  string
		ech  bool
		err  string
	}{
		{"sni", buildHello(sniExt("a.example.")), "a.example", false, ""},
		{"no extensions", buildHello(), "", false, ""},
		{"ech", buildHello(sniExt("public.example"), ext(0xfe0d, []byte{0})), "public.example", true, ""},
		{"esni", buildHello(ext(0xffce, []byte{0})), "", true, ""},
		{"two names", buildHello(sniExt("a.example", "b.example")), "", false, "two servers"},
		{"sni twice", buildHello(sniExt("a.example"), sniExt("b.example")), "", false, "twice"},
		{"a bad name", buildHello(sniExt("a\x00.example")), "", false, "no host name holds"},
		{"an address as name", buildHello(sniExt("127.0.0.1")), "", false, "neither"},
		{"short extension", buildHello([]byte{0, 0, 0, 9, 0}), "", false, "truncated"},
	} {
		h, err := PeekClientHello(bufio.NewReaderSize(bytes.NewReader(tc.rec), maxHello))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %+v, %v; want an error saying %q", tc.name, h, err, tc.err)
			}
		case err != nil || h.ServerName != tc.sni || h.ECH != tc.ech:
			t.Errorf("%s: %+v, %v", tc.name, h, err)
		}
	}
}

// FuzzPeekClientHello differentially: where crypto/tls's server reads a
// ClientHello and sees a server name, the gateway's parser must see the same
// one or refuse the hello (a server that saw another name than the one the
// gateway judged would be fronting); and it never consumes what it peeks.
func FuzzPeekClientHello(f *testing.F) {
	f.Add(clientHello(f, "a.example"))
	f.Add(refragment(clientHello(f, "b.example"), 40))
	f.Add(buildHello(sniExt("c.example"), ext(0xfe0d, nil)))
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		h, br, err := peek(in, false)
		all, _ := io.ReadAll(br)
		if !bytes.Equal(all, in) {
			t.Fatal("the peek consumed bytes")
		}
		tlsName, ok := tlsServerName(in)
		if !ok || err != nil || h.ECH {
			return
		}
		if tlsName != h.ServerName {
			t.Fatalf("crypto/tls sees %q, the gateway %q", tlsName, h.ServerName)
		}
	})
}

// tlsServerName feeds in to a crypto/tls server and returns the server name
// it read from the ClientHello, if it read one.
func tlsServerName(in []byte) (string, bool) {
	var name string
	var ok bool
	srv := tls.Server(&bytesConn{r: bytes.NewReader(in)}, &tls.Config{GetConfigForClient: func(hi *tls.ClientHelloInfo) (*tls.Config, error) {
		name, ok = hi.ServerName, true
		return nil, errors.New("stop")
	}})
	_ = srv.Handshake()
	return strings.TrimSuffix(strings.ToLower(name), "."), ok
}

// bytesConn is a connection that reads what it holds and discards what is
// written to it.
type bytesConn struct {
	r *bytes.Reader
}

func (c *bytesConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *bytesConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *bytesConn) Close() error                     { return nil }
func (c *bytesConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *bytesConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *bytesConn) SetDeadline(time.Time) error      { return nil }
func (c *bytesConn) SetReadDeadline(time.Time) error  { return nil }
func (c *bytesConn) SetWriteDeadline(time.Time) error { return nil }
