package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// A refusal is in the refusals file by the time the client reads the
// answer (the command that was refused finds it once it ends), and only
// refusals are.
func TestRefusalWrittenBeforeTheAnswer(t *testing.T) {
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log, err := OpenRefusalLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer log.f.Close()
	g.Audit.SetRefusals(log)
	refusals := func() string {
		b, _ := os.ReadFile(filepath.Join(dir, control.RefusalsFile))
		return string(b)
	}
	g.Audit.Add(control.Record{Kind: "http", Host: "allowed.test", Allowed: true})
	for i, req := range []string{
		"GET http://refused.test/ HTTP/1.1\r\nHost: refused.test\r\n\r\n",
		"CONNECT refused.test:443 HTTP/1.1\r\nHost: refused.test\r\n\r\n",
	} {
		c, s := net.Pipe()
		go g.ServeConn(s)
		go func() { _, _ = io.WriteString(c, req) }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		status, err := bufio.NewReader(c).ReadString('\n')
		seen := refusals()
		c.Close()
		if err != nil || !strings.Contains(status, "403") {
			t.Fatalf("%q: %q, %v", req, status, err)
		}
		// One line per refusal: this request's is there already.
		if n := strings.Count(seen, `"host":"refused.test"`); n != i+1 {
			t.Errorf("%q: the refusals file held %d refusals once the client had the answer, want %d: %q", req, n, i+1, seen)
		}
	}
	if strings.Contains(refusals(), "allowed.test") {
		t.Errorf("an allowed connection was written as a refusal: %q", refusals())
	}
}

// The file is the gateway's own, whatever the sandbox left at its name,
// group-readable only, and starts again past its limit with whole lines.
func TestRefusalLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, control.RefusalsFile)
	if err := os.Symlink("/etc/passwd", path); err != nil {
		t.Fatal(err)
	}
	l, err := OpenRefusalLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.f.Close()
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the refusals file is %v (%v), want a regular file, mode 0640", fi.Mode(), err)
	}
	l.max = 600
	line, _ := json.Marshal(control.Record{Kind: "http", Host: "refused.test", Reason: "not in the allowlist"})
	line = append(line, '\n')
	for range 5 {
		if _, err := l.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Emptied once, and then it says so first: a run that read it from
	// the start knows it may have lost lines.
	if int64(len(b)) > l.max || !bytes.HasPrefix(b, cutLine) || (len(b)-len(cutLine))%len(line) != 0 {
		t.Errorf("after 5 writes of %d bytes with a limit of %d the file holds %q", len(line), l.max, b)
	}
	var cut control.Record
	if err := json.Unmarshal(cutLine, &cut); err != nil || cut.Kind != control.KindCut || cut.Allowed {
		t.Errorf("the cut line %q: %+v, %v", cutLine, cut, err)
	}
}

// Where the kernel passes no sockets (gVisor), the relay carries the
// client's bytes to the gateway over the unix socket: a request still gets
// the gateway's answer.
func TestRelayCarriesBytes(t *testing.T) {
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	addr := relayTo(t, g, true)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET http://refused.test/ HTTP/1.1\r\nHost: refused.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(status, "403 Forbidden: litterbox refused refused.test:80") {
		t.Fatalf("through a relay that carries bytes: %q, %v", status, err)
	}
}

// TestBusyAnswersTheClient: a connection over the gateway's limit gets
// its 503 on the client's own socket, which the relay passed, not on the
// relay's connection (where the client saw a reset).
func TestBusyAnswersTheClient(t *testing.T) {
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}, MaxClients: 1}
	addr := relayTo(t, g, false)
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	time.Sleep(200 * time.Millisecond) // the gateway holds it, idle
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = io.WriteString(c, "GET http://x.test/ HTTP/1.1\r\nHost: x.test\r\n\r\n")
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(status, "503") {
		t.Errorf("over the limit: %q, %v", status, err)
	}
}

// relayTo serves g's proxy on a unix socket and a relay in front of it
// (passing sockets, or carrying bytes), with the policy of a sandbox that
// may reach nothing; it returns the relay's address.
func relayTo(t *testing.T, g *Gateway, carry bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist}); err != nil {
		t.Fatal(err)
	}
	ul, err := net.Listen("unix", filepath.Join(dir, control.ProxySocket))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() { _ = g.ServeProxy(ul) }()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close() })
	r := &Relay{Dir: dir}
	r.carry.Store(carry)
	go func() { _ = r.acceptPass(tl, filepath.Join(dir, control.ProxySocket)) }()
	return tl.Addr().String()
}

// TestRefusedAnswered: a sandbox with no shared volume asks its gateway's
// proxy what it refused (control.RefusedHost): the proxy answers itself,
// with a mark of where its refusals stand, and with the refusals after a
// mark, one JSON line each as in the refusals file (all of its run's for
// another run's mark); anything else at that name gets a 400, a CONNECT to
// it is judged as any other target, and the question is never a record.
func TestRefusedAnswered(t *testing.T) {
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	if err := g.SetPolicy(policy.Policy{Sandbox: "alpha", Mode: policy.ModeAllowlist}); err != nil {
		t.Fatal(err)
	}
	ask := func(req string) (status, body string) {
		t.Helper()
		c, s := net.Pipe()
		go g.ServeConn(s)
		go func() { _, _ = io.WriteString(c, req) }()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		status, body, _ = strings.Cut(string(b), "\r\n\r\n")
		status, _, _ = strings.Cut(status, "\r\n")
		return status, body
	}
	get := func(path string) (status, body string) {
		t.Helper()
		return ask("GET http://" + control.RefusedHost + path + " HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n")
	}
	hosts := func(body string) []string {
		t.Helper()
		var hosts []string
		for _, line := range strings.SplitAfter(body, "\n") {
			if line == "" {
				continue
			}
			var r control.Record
			if !strings.HasSuffix(line, "\n") || json.Unmarshal([]byte(line), &r) != nil {
				t.Fatalf("not a JSON line: %q", line)
			}
			hosts = append(hosts, r.Host)
		}
		return hosts
	}
	g.Audit.Add(control.Record{Kind: "http", Host: "allowed.test", Allowed: true})
	g.Audit.Add(control.Record{Kind: "connect", Host: "old.test", Port: 443, Reason: "not in the allowlist"})
	st, body := get("/mark")
	var m control.RefusalMark
	if st != "HTTP/1.1 200 OK" || json.Unmarshal([]byte(body), &m) != nil || m.Boot != g.Audit.Boot() || m.After != 1 {
		t.Fatalf("the mark was answered %q: %q, want this run's and 1 refusal", st, body)
	}
	if st, _ := ask("GET http://refused.test/ HTTP/1.1\r\nHost: refused.test\r\n\r\n"); !strings.Contains(st, "403") {
		t.Fatalf("refused.test: %q", st)
	}
	st, body = get(fmt.Sprintf("/?boot=%s&after=%d", m.Boot, m.After))
	if st != "HTTP/1.1 200 OK" {
		t.Fatalf("the question was answered %q: %q", st, body)
	}
	if h := hosts(body); len(h) != 1 || h[0] != "refused.test" {
		t.Errorf("the refusals after the mark are %q, want only refused.test (not old.test, not allowed.test)", h)
	}
	if _, body := get("/?boot=another&after=1"); len(hosts(body)) != 2 {
		t.Errorf("another run's mark got %q, want both of this run's refusals", hosts(body))
	}
	// The host asks the control socket the same, when the run could not.
	if resp := g.ctl(control.CtlRequest{Op: "refused", Boot: m.Boot, After: m.After}); resp.Error != "" || len(resp.Refused) != 1 || resp.Refused[0].Host != "refused.test" {
		t.Errorf("ctl refused after the mark: %+v, want only refused.test", resp)
	}
	for _, req := range []string{
		"GET http://" + control.RefusedHost + "/other?boot=x&after=0 HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
		"GET http://" + control.RefusedHost + "/ HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
		"GET http://" + control.RefusedHost + "/?within=1m HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
		"GET http://" + control.RefusedHost + "/mark?boot=x HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
		"POST http://" + control.RefusedHost + "/?boot=x&after=0 HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\nContent-Length: 0\r\n\r\n",
		"GET http://" + control.RefusedHost + ":8080/?boot=x&after=-1 HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
	} {
		if st, body := ask(req); !strings.Contains(st, " 400 ") || strings.Contains(body, "refused.test") {
			t.Errorf("%q was answered %q: %q", req, st, body)
		}
	}
	if st, body := ask("CONNECT " + control.RefusedHost + ":80 HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n"); !strings.Contains(st, "403") || strings.Contains(body, "refused.test") {
		t.Errorf("a CONNECT to %s was answered %q: %q", control.RefusedHost, st, body)
	}
	for _, r := range g.Audit.Since("", 0, 100).Records {
		if r.Host == control.RefusedHost && r.Kind != "connect" {
			t.Errorf("the question was recorded: %+v", r)
		}
	}
}

// TestRefusedAnswerToAClientThatNeverReads: a client that asks what was
// refused and never reads the answer does not hold the gateway's
// connection (and its goroutine) forever: the answer's write gives up.
func TestRefusedAnswerToAClientThatNeverReads(t *testing.T) {
	t.Parallel()
	g := &Gateway{Audit: NewAudit(100, nil), Resolver: failResolver{}}
	g.Audit.Add(control.Record{Kind: "connect", Host: "refused.test", Port: 443, Reason: "not in the allowlist"})
	for name, req := range map[string]string{
		"refusals": "GET http://" + control.RefusedHost + "/?boot=x&after=0 HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
		"400":      "GET http://" + control.RefusedHost + "/ HTTP/1.1\r\nHost: " + control.RefusedHost + "\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A pipe holds nothing: every write waits for a read that
			// never comes.
			c, s := net.Pipe()
			defer c.Close()
			done := make(chan struct{})
			go func() {
				g.ServeConn(s)
				close(done)
			}()
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(answerWriteTimeout + 10*time.Second):
				t.Fatalf("%q: the gateway still waits to write its answer to a client that never reads, %v on", req, answerWriteTimeout+10*time.Second)
			}
		})
	}
}
