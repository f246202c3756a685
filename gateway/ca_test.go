package gateway

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

// TestAuthority: the gateway's CA signs a certificate for each bound host
// (a name, or an address) that a client trusting only the CA accepts for
// that host and no other; its PEM holds the certificate alone.
func TestAuthority(t *testing.T) {
	a, err := newAuthority("alpha")
	if err != nil {
		t.Fatal(err)
	}
	caPEM := a.PEM()
	if strings.Contains(string(caPEM), "PRIVATE") {
		t.Fatal("the CA's PEM holds a key")
	}
	blk, _ := pem.Decode(caPEM)
	ca, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.IsCA || ca.MaxPathLen != 0 || !ca.MaxPathLenZero || !strings.Contains(ca.Subject.CommonName, "alpha") {
		t.Errorf("the CA: IsCA %v, MaxPathLen %d, CN %q", ca.IsCA, ca.MaxPathLen, ca.Subject.CommonName)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	for _, host := range []string{"github.com", "198.18.0.10", "2001:db8::1"} {
		c, err := a.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: pool}); err == nil {
			t.Errorf("%s: its certificate is good for other.example", host)
		}
		if again, _ := a.leaf(host); again != c {
			t.Errorf("%s: a second certificate, not the one kept", host)
		}
		if leaf.NotAfter.Before(time.Now().Add(24 * time.Hour)) {
			t.Errorf("%s: expires %v", host, leaf.NotAfter)
		}
	}
}
