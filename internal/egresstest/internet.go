// Package egresstest is the egress tests' own internet, for the tests of
// package egress and for the benchmark: a network namespace joined by a veth
// pair to a container engine's namespace, holding HTTP and HTTPS servers
// (certificates of a test CA) and a DNS server on addresses of
// 198.18.N.0/24, and a service of the engine's host bound to 0.0.0.0. It
// needs root (it makes namespaces and links with ip).
package egresstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	stdlog "log"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TB is what the fixture needs of a test (testing.TB has it), so that a
// benchmark program can use it too.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// No mock: the gateway resolves through the engine's resolver to this
// internet's DNS server, and connects through the engine's NAT to its
// servers.

// Sh runs a command, and fails the test when it fails.
func Sh(t TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Internet is the fixture.
type Internet struct {
	// NS is its name under /run/netns.
	NS string
	// Net is its /24 without the last part, "198.18.N".
	Net string
	// HostIP is the engine's side of the veth: to a gateway, an address of
	// the engine's host.
	HostIP string
	// DNS is the DNS server's address.
	DNS string
	// CAPEM is the test CA's certificate, which clients trust.
	CAPEM []byte
	// Names are what the DNS server answers.
	Names map[string][]netip.Addr
	// Mux serves every web server but .14's: a test adds a host's
	// handlers to it ("git.test/").
	Mux *http.ServeMux
}

// Addr is the internet's address .n: .10 serves HTTP (80) and HTTPS (443,
// 8443), .11 and .12 HTTPS; .14 HTTPS with a certificate of a CA nobody
// trusts (for every name); .2 is the DNS server.
func (in *Internet) Addr(n int) string { return fmt.Sprintf("%s.%d", in.Net, n) }

// NewInternet makes the internet and joins it to the engine's namespace
// (engineNS, a path; "" for this one). Everything is removed at the end.
func NewInternet(t TB, engineNS string, names map[string][]string) *Internet {
	t.Helper()
	pid := os.Getpid()
	// A /24 no namespace here routes yet.
	var n int
	for n = pid % 200; ; n = (n + 1) % 250 {
		if n == 0 {
			continue
		}
		busy := false
		for _, ns := range []string{"", engineNS} {
			args := []string{"-o", "route", "show", fmt.Sprintf("198.18.%d.0/24", n)}
			if ns != "" {
				args = append([]string{"-n", filepath.Base(ns)}, args...)
			}
			out, _ := exec.Command("ip", args...).Output()
			busy = busy || strings.TrimSpace(string(out)) != ""
		}
		if !busy {
			break
		}
	}
	in := &Internet{NS: fmt.Sprintf("lbgw-inet-%d-%d", pid, n), Net: fmt.Sprintf("198.18.%d", n)}
	in.HostIP, in.DNS = in.Addr(1), in.Addr(2)
	hostIf, nsIf := fmt.Sprintf("lbgw%dh", n), fmt.Sprintf("lbgw%dn", n)
	Sh(t, "ip", "netns", "add", in.NS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", in.NS).Run() })
	Sh(t, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", hostIf).Run() })
	if engineNS != "" {
		Sh(t, "ip", "link", "set", hostIf, "netns", filepath.Base(engineNS))
		t.Cleanup(func() { _ = exec.Command("ip", "-n", filepath.Base(engineNS), "link", "delete", hostIf).Run() })
	}
	Sh(t, "ip", "link", "set", nsIf, "netns", in.NS)
	ipIn := func(ns string, args ...string) {
		if ns != "" {
			args = append([]string{"-n", filepath.Base(ns)}, args...)
		}
		Sh(t, "ip", args...)
	}
	ipIn(engineNS, "addr", "add", in.HostIP+"/24", "dev", hostIf)
	ipIn(engineNS, "link", "set", hostIf, "up")
	ipIn(in.NS, "link", "set", "lo", "up")
	for _, a := range []int{2, 10, 11, 12, 14} {
		ipIn(in.NS, "addr", "add", in.Addr(a)+"/24", "dev", nsIf)
	}
	ipIn(in.NS, "link", "set", nsIf, "up")

	in.Names = map[string][]netip.Addr{}
	for name, list := range names {
		for _, s := range list {
			s = strings.ReplaceAll(s, "NET", in.Net)
			in.Names[name] = append(in.Names[name], netip.MustParseAddr(s))
		}
	}
	nsPath := "/run/netns/" + in.NS
	in.CAPEM = in.serveWeb(t, nsPath)
	in.serveDNS(t, nsPath)
	return in
}

// testCA makes a CA and a certificate it signs for every test name and
// .10's address: the CA's DER and the certificate.
func (in *Internet) testCA(t TB, name string) ([]byte, tls.Certificate) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("%v", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var dnsNames []string
	for name := range in.Names {
		dnsNames = append(dnsNames, name)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test"}, DNSNames: dnsNames,
		IPAddresses: []net.IP{net.ParseIP(in.Addr(10))},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return caDER, tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
}

// serveWeb starts the web servers: HTTP on .10:80, HTTPS on .10:443 and
// .10:8443 and .11:443 and .12:443 (one certificate for every test name,
// from a CA of the test's own), and on .14:443 with a certificate of
// another CA, which nobody trusts. It returns the first CA's PEM.
func (in *Internet) serveWeb(t TB, ns string) []byte {
	caDER, cert := in.testCA(t, "litterbox egress test CA")
	_, untrusted := in.testCA(t, "a CA nobody trusts")

	mux := http.NewServeMux()
	in.Mux = mux
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})
	// /bytes?n=N sends N bytes, at most rate MB/s when rate is set (a link
	// of that speed); /slow sends a byte every 100 ms for 30 s.
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		rate, _ := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		buf := make([]byte, 256<<10)
		start, sent := time.Now(), int64(0)
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
			sent += k
			if rate > 0 {
				if ahead := time.Duration(float64(sent)/(rate*1e6)*float64(time.Second)) - time.Since(start); ahead > 0 {
					time.Sleep(ahead)
				}
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 300; i++ {
			if _, err := w.Write([]byte{'.'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	})
	listen := func(addr string, tlsOn bool, cert tls.Certificate) {
		var l net.Listener
		if err := InNetns(ns, func() (err error) { l, err = net.Listen("tcp", addr); return }); err != nil {
			t.Fatalf("%v", err)
		}
		// The gateway connects before it reads the ClientHello, and hangs
		// up on a refused one: the server's complaint is expected.
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: stdlog.New(io.Discard, "", 0)}
		if tlsOn {
			l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
		}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	listen(in.Addr(10)+":80", false, cert)
	listen(in.Addr(10)+":443", true, cert)
	listen(in.Addr(10)+":8443", true, cert)
	listen(in.Addr(11)+":443", true, cert)
	listen(in.Addr(12)+":443", true, cert)
	listen(in.Addr(14)+":443", true, untrusted)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// serveDNS answers A and AAAA queries for in.Names on .2:53, UDP and TCP;
// NXDOMAIN for anything else.
func (in *Internet) serveDNS(t TB, ns string) {
	var pc net.PacketConn
	var l net.Listener
	if err := InNetns(ns, func() (err error) {
		if pc, err = net.ListenPacket("udp", in.DNS+":53"); err != nil {
			return err
		}
		l, err = net.Listen("tcp", in.DNS+":53")
		return err
	}); err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { pc.Close(); l.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if ans := in.answer(buf[:n]); ans != nil {
				_, _ = pc.WriteTo(ans, from)
			}
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var hdr [2]byte
				if _, err := io.ReadFull(c, hdr[:]); err != nil {
					return
				}
				m := make([]byte, binary.BigEndian.Uint16(hdr[:]))
				if _, err := io.ReadFull(c, m); err != nil {
					return
				}
				if ans := in.answer(m); ans != nil {
					_, _ = c.Write(append([]byte{byte(len(ans) >> 8), byte(len(ans))}, ans...))
				}
			}()
		}
	}()
}

func (in *Internet) answer(m []byte) []byte {
	if len(m) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for i < len(m) && m[i] != 0 {
		n := int(m[i])
		if i+1+n > len(m) {
			return nil
		}
		labels = append(labels, string(m[i+1:i+1+n]))
		i += 1 + n
	}
	if i+5 > len(m) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(m[i+1:])
	end := i + 5
	name := strings.ToLower(strings.Join(labels, "."))
	out := append([]byte(nil), m[:end]...)
	out[2] = 0x84 | m[2]&0x01 // QR, AA, RD as asked
	out[3] = 0
	var answers [][]byte
	addrs, ok := in.Names[name]
	if !ok {
		out[3] = 3 // NXDOMAIN
	}
	for _, a := range addrs {
		if a.Is4() && qtype == 1 || a.Is6() && qtype == 28 {
			rr := []byte{0xc0, 12, 0, byte(qtype), 0, 1, 0, 0, 0, 5, 0, byte(len(a.AsSlice()))}
			answers = append(answers, append(rr, a.AsSlice()...))
		}
	}
	binary.BigEndian.PutUint16(out[6:], uint16(len(answers)))
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], 0)
	for _, rr := range answers {
		out = append(out, rr...)
	}
	return out
}

// HostService is a service of the engine's host bound to all its
// addresses (0.0.0.0), as a developer's database or web server would be.
// It returns its port.
func HostService(t TB, engineNS string) int {
	var l net.Listener
	if err := InNetns(engineNS, func() (err error) { l, err = net.Listen("tcp4", "0.0.0.0:0"); return }); err != nil {
		t.Fatalf("%v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host secret")
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// FetchIn fetches url from inside network namespace ns ("" for this one),
// there with nsenter and curl (an http.Client dials on threads of its own,
// which are not in the namespace).
func FetchIn(ns, url string) (string, error) {
	if ns == "" {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
		resp, err := c.Get(url)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return string(b), fmt.Errorf("%s", resp.Status)
		}
		return string(b), err
	}
	out, err := exec.Command("nsenter", "--net="+ns, "curl", "-sS", "--fail", "--max-time", "10", url).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%v: %s", err, out)
	}
	return string(out), nil
}
