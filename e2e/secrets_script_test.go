package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// toolsImage has curl, git and python3-requests
// (scripts/ensure-debian-tools-image.sh).
const toolsImage = "litterbox-test/debian-tools:bookworm"

// cmdTLSServe is the script command tlsserve (scriptcmds_test.go).
func cmdTLSServe(ts *testscript.TestScript, neg bool, args []string) {
	netns := ""
	if len(args) > 2 && args[0] == "-netns" {
		netns, args = args[1], args[2:]
	}
	if neg || netns == "" && len(args) != 1 || netns != "" && len(args) < 2 {
		ts.Fatalf("usage: tlsserve TOKEN | tlsserve -netns NAME TOKEN ADDR...")
	}
	token, hosts := args[0], args[1:]
	var l net.Listener
	var err error
	if netns == "" {
		hosts = []string{docker0Addr(ts)}
		l, err = net.Listen("tcp4", "0.0.0.0:0")
	} else {
		l, err = listenIn("/run/netns/"+netns, "0.0.0.0:0")
	}
	ts.Check(err)
	cert := hostCert(ts, "tls-ca.pem", hosts...)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			auth := r.Header.Get("Authorization")
			// Basic credentials whose password is the token pass too,
			// as a git credential helper's or a URL's userinfo send it.
			if _, pass, basic := r.BasicAuth(); auth != "Bearer "+token && (!basic || pass != token) {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintf(w, "bad credentials; you sent: %s\n", auth)
				return
			}
			fmt.Fprintf(w, "hello octocat; you sent: %s\n", auth)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
	}
	go srv.ServeTLS(l, "", "")
	ts.Defer(func() { srv.Close() })
	ts.Setenv("TLSADDR", hosts[0])
	ts.Setenv("TLSPORT", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// hostCert is a certificate for hosts (addresses), signed by a CA of its
// own whose certificate is written to $WORK/caFile.
func hostCert(ts *testscript.TestScript, caFile string, hosts ...string) tls.Certificate {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "litterbox test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ts.Check(err)
	ca, err := x509.ParseCertificate(caDER)
	ts.Check(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ts.Check(err)
	var ips []net.IP
	for _, h := range hosts {
		ips = append(ips, net.ParseIP(h))
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: ips, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("WORK"), caFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644))
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: key}
}

// docker0Addr is the host's IPv4 address on the engine's default bridge,
// where a container (a gateway) reaches the host.
func docker0Addr(ts *testscript.TestScript) string {
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		ts.Fatalf("no docker0: %v", err)
	}
	addrs, err := ifc.Addrs()
	ts.Check(err)
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	ts.Fatalf("docker0 has no IPv4 address")
	return ""
}

// condDebianTools is the script condition debiantools (scriptcmds_test.go).
func condDebianTools() (bool, error) {
	return neededInCI(exec.Command("docker", "image", "inspect", toolsImage).Run() == nil, "CI=true but the image %s is missing: run scripts/ensure-debian-tools-image.sh", toolsImage)
}
