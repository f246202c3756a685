package egress_test

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
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests' own internet: a network namespace joined by a veth pair to the
// engine's namespace (this one for the local Docker, Podman's or the ssh
// engine's otherwise), holding on addresses of 198.18.N.0/24 an HTTP and
// HTTPS server (certificates of a test CA), and a DNS server that the
// gateway containers use. No mock: the gateway resolves through the engine's
// resolver to this server, and connects through the engine's NAT to these.

// inNetns runs f on a thread that is in the network namespace at path: a
// socket f makes there stays there. The thread is never reused (its
// goroutine ends locked), so no other goroutine finds itself in the wrong
// namespace.
func inNetns(path string, f func() error) error {
	if path == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

func sh(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// internet is the fixture.
type internet struct {
	ns     string // its name under /run/netns
	net    string // "198.18.N"
	hostIP string // the engine side of the veth: the engine's host, to the gateway
	dns    string // the DNS server's address
	caPEM  []byte
	names  map[string][]netip.Addr
}

// addr is the internet's address .n.
func (in *internet) addr(n int) string { return fmt.Sprintf("%s.%d", in.net, n) }

// newInternet makes the internet and joins it to the engine's namespace
// (engineNS, a path; "" for this one). Everything is removed at the end.
func newInternet(t *testing.T, engineNS string, names map[string][]string) *internet {
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
	in := &internet{ns: fmt.Sprintf("lbgw-inet-%d-%d", pid, n), net: fmt.Sprintf("198.18.%d", n)}
	in.hostIP, in.dns = in.addr(1), in.addr(2)
	hostIf, nsIf := fmt.Sprintf("lbgw%dh", n), fmt.Sprintf("lbgw%dn", n)
	sh(t, "ip", "netns", "add", in.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", in.ns).Run() })
	sh(t, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", hostIf).Run() })
	if engineNS != "" {
		sh(t, "ip", "link", "set", hostIf, "netns", filepath.Base(engineNS))
		t.Cleanup(func() { _ = exec.Command("ip", "-n", filepath.Base(engineNS), "link", "delete", hostIf).Run() })
	}
	sh(t, "ip", "link", "set", nsIf, "netns", in.ns)
	ipIn := func(ns string, args ...string) {
		if ns != "" {
			args = append([]string{"-n", filepath.Base(ns)}, args...)
		}
		sh(t, "ip", args...)
	}
	ipIn(engineNS, "addr", "add", in.hostIP+"/24", "dev", hostIf)
	ipIn(engineNS, "link", "set", hostIf, "up")
	ipIn(in.ns, "link", "set", "lo", "up")
	for _, a := range []int{2, 10, 11, 12} {
		ipIn(in.ns, "addr", "add", in.addr(a)+"/24", "dev", nsIf)
	}
	ipIn(in.ns, "link", "set", nsIf, "up")

	in.names = map[string][]netip.Addr{}
	for name, list := range names {
		for _, s := range list {
			s = strings.ReplaceAll(s, "NET", in.net)
			in.names[name] = append(in.names[name], netip.MustParseAddr(s))
		}
	}
	nsPath := "/run/netns/" + in.ns
	in.caPEM = in.serveWeb(t, nsPath)
	in.serveDNS(t, nsPath)
	return in
}

// serveWeb starts the web servers: HTTP on .10:80, HTTPS on .10:443 and
// .10:8443 and .11:443 (one certificate for every test name, from a CA of
// the test's own). It returns the CA's PEM.
func (in *internet) serveWeb(t *testing.T, ns string) []byte {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "litterbox egress test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var dnsNames []string
	for name := range in.names {
		dnsNames = append(dnsNames, name)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "test"}, DNSNames: dnsNames,
		IPAddresses: []net.IP{net.ParseIP(in.addr(10))},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})
	// /bytes?n=N sends N bytes; /slow sends a byte every 100 ms for 30 s.
	mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		buf := make([]byte, 256<<10)
		for n > 0 {
			k := min(n, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
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
	listen := func(addr string, tlsOn bool) {
		var l net.Listener
		if err := inNetns(ns, func() (err error) { l, err = net.Listen("tcp", addr); return }); err != nil {
			t.Fatal(err)
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
	listen(in.addr(10)+":80", false)
	listen(in.addr(10)+":443", true)
	listen(in.addr(10)+":8443", true)
	listen(in.addr(11)+":443", true)
	listen(in.addr(12)+":443", true)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// serveDNS answers A and AAAA queries for in.names on .2:53, UDP and TCP;
// NXDOMAIN for anything else.
func (in *internet) serveDNS(t *testing.T, ns string) {
	var pc net.PacketConn
	var l net.Listener
	if err := inNetns(ns, func() (err error) {
		if pc, err = net.ListenPacket("udp", in.dns+":53"); err != nil {
			return err
		}
		l, err = net.Listen("tcp", in.dns+":53")
		return err
	}); err != nil {
		t.Fatal(err)
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

func (in *internet) answer(m []byte) []byte {
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
	addrs, ok := in.names[name]
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

// hostService is a service of the engine's host bound to all its
// addresses (0.0.0.0), as a developer's database or web server would be.
// It returns its port.
func hostService(t *testing.T, engineNS string) int {
	var l net.Listener
	if err := inNetns(engineNS, func() (err error) { l, err = net.Listen("tcp4", "0.0.0.0:0"); return }); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host secret")
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// fetchIn fetches url from inside network namespace ns ("" for this one),
// there with nsenter and curl (an http.Client dials on threads of its own,
// which are not in the namespace).
func fetchIn(ns, url string) (string, error) {
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
