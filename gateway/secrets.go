package gateway

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// secretSet is Secrets compiled.
type secretSet struct {
	list  []*secret
	roots *x509.CertPool
	// pairs turn every form of a value the gateway sends into the
	// placeholder's form: what a bound host's answers are scrubbed of.
	pairs []string
}

type secret struct {
	control.Secret
	hosts []policy.Entry
	// header and headerValue are the header the gateway sets ("" for
	// none): Header's, or Authorization for Basic.
	header, headerValue string
	// lower is the placeholder as the gateway looks for it, in any case.
	lower string
}

// Limits of a secret.
const (
	maxSecretValue = 16 << 10
	maxSecrets     = 64
)

var (
	placeholderRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{23,127}$`)
	headerNameRE  = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	secretNameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
)

// headersNotSet are the headers a secret may not set: they frame the
// request, or name where it goes.
var headersNotSet = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Upgrade", "Te", "Trailer", "Proxy-Authorization", "Expect"}

// controlChar reports whether s holds a control character: a value goes in
// a header, where one would end it or start another.
func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// compileSecrets checks what the host sent. Its errors name the secret,
// never its value.
func compileSecrets(in control.Secrets) (*secretSet, error) {
	if len(in.Secrets) > maxSecrets {
		return nil, fmt.Errorf("%d secrets: at most %d", len(in.Secrets), maxSecrets)
	}
	s := &secretSet{}
	names, placeholders := map[string]bool{}, map[string]bool{}
	for i := range in.Secrets {
		sec := &secret{Secret: in.Secrets[i]}
		sec.Hosts = slices.Clone(sec.Hosts)
		if err := sec.check(); err != nil {
			if sec.Name == "" || !secretNameRE.MatchString(sec.Name) {
				return nil, fmt.Errorf("secret %d: %w", i+1, err)
			}
			return nil, fmt.Errorf("secret %s: %w", sec.Name, err)
		}
		if names[sec.Name] {
			return nil, fmt.Errorf("secret %s: named twice", sec.Name)
		}
		if placeholders[sec.Placeholder] {
			return nil, fmt.Errorf("secret %s: its placeholder is another's", sec.Name)
		}
		names[sec.Name], placeholders[sec.Placeholder] = true, true
		s.list = append(s.list, sec)
	}
	for i, a := range s.list {
		for _, b := range s.list[:i] {
			if strings.Contains(a.Value, b.Placeholder) {
				return nil, fmt.Errorf("secret %s: its value holds the placeholder of secret %s", a.Name, b.Name)
			}
			if strings.Contains(b.Value, a.Placeholder) {
				return nil, fmt.Errorf("secret %s: its value holds the placeholder of secret %s", b.Name, a.Name)
			}
			if a.header == "" || a.header != b.header {
				continue
			}
			for _, h := range a.hosts {
				if slices.ContainsFunc(b.hosts, func(e policy.Entry) bool { return e.Text == h.Text }) {
					return nil, fmt.Errorf("secrets %s and %s both set %s for %s: bind them to different hosts", b.Name, a.Name, a.header, h.Text)
				}
			}
		}
	}
	// Forms the gateway makes (Basic credentials) first: at one position,
	// of patterns as long, the first pair wins.
	for _, sec := range s.list {
		if sec.Basic != "" {
			s.pairs = append(s.pairs, basicCred(sec.Basic, sec.Value), basicCred(sec.Basic, sec.Placeholder))
		}
	}
	for _, sec := range s.list {
		s.pairs = append(s.pairs, sec.Value, sec.Placeholder)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for i, r := range in.Roots {
		n := 0
		for rest := []byte(r); ; {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				break
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("root %d: %w", i+1, err)
			}
			pool.AddCert(c)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("root %d is not a PEM certificate", i+1)
		}
	}
	s.roots = pool
	return s, nil
}

func (sec *secret) check() error {
	switch {
	case sec.Name == "":
		return errors.New("no name")
	case !secretNameRE.MatchString(sec.Name):
		return fmt.Errorf("the name %q is not lower-case letters, digits, - and _", printableName(sec.Name))
	case !placeholderRE.MatchString(sec.Placeholder):
		return errors.New("its placeholder is not 24 to 128 of a-z, 0-9, - and _")
	case len(sec.Value) < control.MinSecretValue:
		return fmt.Errorf("its value is shorter than %d bytes: answers are scrubbed of it, and a short value is found where it is no secret", control.MinSecretValue)
	case len(sec.Value) > maxSecretValue:
		return fmt.Errorf("its value is longer than %d bytes", maxSecretValue)
	case controlChar(sec.Value):
		return errors.New("its value holds a control character (a line break?): it goes in a header, where that cannot be")
	case strings.Contains(sec.Value, sec.Placeholder):
		return errors.New("its value holds its placeholder")
	case len(sec.Hosts) == 0:
		return errors.New("no hosts: a secret goes only to the hosts it is bound to")
	case sec.Header != "" && sec.Basic != "":
		return errors.New("it sets both header and basic: choose one")
	}
	sec.lower = strings.ToLower(sec.Placeholder)
	for _, h := range sec.Hosts {
		e, err := policy.ParseEntry(h)
		if err != nil {
			return err
		}
		sec.hosts = append(sec.hosts, e)
	}
	if sec.Header != "" {
		name, tmpl, ok := strings.Cut(sec.Header, ":")
		name, tmpl = strings.TrimSpace(name), strings.TrimSpace(tmpl)
		if !ok || !headerNameRE.MatchString(name) {
			return fmt.Errorf("its header %q is not \"Name: value\"", printableName(sec.Header))
		}
		if !strings.Contains(tmpl, "{}") || controlChar(tmpl) {
			return fmt.Errorf("its header %q has no {} for the value", printableName(sec.Header))
		}
		sec.header = http.CanonicalHeaderKey(name)
		if slices.Contains(headersNotSet, sec.header) {
			return fmt.Errorf("it may not set %s", sec.header)
		}
		sec.headerValue = strings.ReplaceAll(tmpl, "{}", sec.Value)
	}
	if sec.Basic != "" {
		if !strings.Contains(sec.Basic, ":") || !strings.Contains(sec.Basic, "{}") || controlChar(sec.Basic) {
			return fmt.Errorf("its basic %q is not user:password with {} for the value (x-access-token:{})", printableName(sec.Basic))
		}
		sec.header = "Authorization"
		sec.headerValue = "Basic " + basicCred(sec.Basic, sec.Value)
	}
	return nil
}

// basicCred is the Basic credentials of template with v for {}.
func basicCred(template, v string) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(template, "{}", v)))
}

// info describes the set without its values.
func (s *secretSet) info() []control.BoundInfo {
	out := []control.BoundInfo{}
	for _, sec := range s.list {
		sent := "placeholder"
		switch {
		case sec.Basic != "":
			sent = "basic"
		case sec.Header != "":
			sent = "header " + sec.header
		}
		out = append(out, control.BoundInfo{Name: sec.Name, Placeholder: sec.Placeholder, Hosts: sec.Hosts, Sent: sent})
	}
	return out
}

// bound reports whether sec may go to name (or the address lit) on port.
func (sec *secret) bound(name string, lit netip.Addr, port int) bool {
	for _, e := range sec.hosts {
		if name != "" && e.MatchesName(name, port) || name == "" && lit.IsValid() && e.Name == "" && e.MatchesAddr(lit, port) {
			return true
		}
	}
	return false
}

// boundTo are the secrets bound to name (or lit) on port.
func (s *secretSet) boundTo(name string, lit netip.Addr, port int) []*secret {
	if s == nil {
		return nil
	}
	var out []*secret
	for _, sec := range s.list {
		if sec.bound(name, lit, port) {
			out = append(out, sec)
		}
	}
	return out
}

// carried is the first secret whose placeholder text holds, in any case.
func (s *secretSet) carried(text string, skip func(*secret) bool) *secret {
	if s == nil || text == "" {
		return nil
	}
	lower := strings.ToLower(text)
	for _, sec := range s.list {
		if strings.Contains(lower, sec.lower) && (skip == nil || !skip(sec)) {
			return sec
		}
	}
	return nil
}

// basicOf decodes the credentials of a Basic header value.
func basicOf(v string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// leak is the secret whose placeholder a plain HTTP request carries (in
// its target, a header's name or value, or Basic credentials), if any: it
// may carry none, not even to a bound host, where the value would travel
// unencrypted.
func (s *secretSet) leak(uri string, h http.Header) *secret {
	if sec := s.carried(uri, nil); sec != nil {
		return sec
	}
	return s.inHeader(h, nil)
}

// inHeader is the first secret whose placeholder h carries, in a name, a
// value or Basic credentials; skip leaves secrets out of the values.
func (s *secretSet) inHeader(h http.Header, skip func(*secret) bool) *secret {
	for k, vs := range h {
		if sec := s.carried(k, nil); sec != nil {
			return sec
		}
		for _, v := range vs {
			if sec := s.carried(v, skip); sec != nil {
				return sec
			}
			if d, ok := basicOf(v); ok {
				if sec := s.carried(d, skip); sec != nil {
					return sec
				}
			}
		}
	}
	return nil
}

// errTrailerLeak ends a request body whose trailer carries a placeholder
// (trailerGuard): the trailer, which follows the body, is never sent.
var errTrailerLeak = errors.New("a placeholder in the request's trailer")

// trailerGuard reads a request's body and, at its end (when the trailer
// has been read, and before it is forwarded), checks the trailer with
// check: a secret it finds there ends the body with errTrailerLeak
// instead, so that the request is cut off before its trailer goes.
type trailerGuard struct {
	io.ReadCloser
	trailer *http.Header
	check   func(http.Header) *secret
	found   *secret
}

func (t *trailerGuard) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && *t.trailer != nil {
		if t.found = t.check(*t.trailer); t.found != nil {
			return n, errTrailerLeak
		}
	}
	return n, err
}

// rewritten is what rewrite did to a request.
type rewritten struct {
	// used are the names of the secrets the request now carries.
	used []string
	// pairs are what the answer is scrubbed of (ReplaceAll, Scrubber).
	pairs []string
	// refused is a secret not bound to the host whose placeholder the
	// request carries: the request must not go.
	refused *secret
}

// rewrite readies a request for name (or lit) on port, to go over TLS:
// the header of each secret bound there that has one (Header, Basic) is
// set; the placeholder of each other secret bound there is replaced by its
// value in every header (in Basic credentials too, where a URL's userinfo
// ends up); a placeholder of a secret not bound there, in the target or a
// header, refuses the request. The request's target (path and query) and
// body are never rewritten: a bound host could keep them where others read
// them (an issue's title).
func (s *secretSet) rewrite(name string, lit netip.Addr, port int, uri string, h http.Header) rewritten {
	var rw rewritten
	bound := s.boundTo(name, lit, port)
	here := func(sec *secret) bool { return slices.Contains(bound, sec) }
	if rw.refused = s.carried(uri, here); rw.refused != nil {
		return rw
	}
	// Only a secret sent neither as a header nor as Basic is substituted:
	// the others' headers are set whatever the sandbox sends, and a value
	// put where the sandbox chose could land where a host keeps it.
	var subst []string
	for _, sec := range bound {
		if sec.header == "" {
			subst = append(subst, sec.Placeholder, sec.Value)
		}
	}
	used := map[string]bool{}
	for k, vs := range h {
		if rw.refused = s.carried(k, nil); rw.refused != nil {
			return rw
		}
		for i, v := range vs {
			if rw.refused = s.carried(v, here); rw.refused != nil {
				return rw
			}
			if d, ok := basicOf(v); ok {
				if rw.refused = s.carried(d, here); rw.refused != nil {
					return rw
				}
				if nd := ReplaceAll(d, subst...); nd != d {
					enc := base64.StdEncoding.EncodeToString([]byte(nd))
					rw.pairs = append(rw.pairs, enc, base64.StdEncoding.EncodeToString([]byte(d)))
					vs[i] = "Basic " + enc
					markUsed(used, bound, d)
					continue
				}
			}
			if nv := ReplaceAll(v, subst...); nv != v {
				vs[i] = nv
				markUsed(used, bound, v)
			}
		}
	}
	for _, sec := range bound {
		if sec.header != "" {
			h.Set(sec.header, sec.headerValue)
			used[sec.Name] = true
		}
	}
	for _, sec := range bound {
		if used[sec.Name] {
			rw.used = append(rw.used, sec.Name)
		}
	}
	rw.pairs = append(rw.pairs, s.pairs...)
	return rw
}

func markUsed(used map[string]bool, bound []*secret, text string) {
	for _, sec := range bound {
		if strings.Contains(text, sec.Placeholder) {
			used[sec.Name] = true
		}
	}
}

// secretNames joins the names of secrets.
func secretNames(secrets []*secret) string {
	names := make([]string, len(secrets))
	for i, sec := range secrets {
		names[i] = sec.Name
	}
	return strings.Join(names, ",")
}
