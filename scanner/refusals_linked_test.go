package scanner

import (
	"net"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// TestRunLinkedReadsOnlyItsOwnRefusals: a run linked to its gateway by
// network (Kubernetes) is told what the gateway refused during its command,
// and not what it refused just before (the last call's refusal, moments
// earlier), nor after a restart of the gateway, what the new run refused
// before the command: no clock decides it, so neither a busy machine nor
// two clocks apart can mix one call's refusals into the next.
func TestRunLinkedReadsOnlyItsOwnRefusals(t *testing.T) {
	g := &gateway.Gateway{Audit: gateway.NewAudit(100, nil)}
	via := serveLinked(t, func(c net.Conn) { g.ServeConn(c) })
	refuse := func(host string) {
		g.Audit.Add(control.Record{Kind: "connect", Host: host, Port: 443, Reason: "not in the allowlist"})
	}
	spec := &wire.RunSpec{Refusals: "http://" + control.RefusedHost + "/", RefusalsVia: via}

	refuse("before.test")
	refuse("again.test")
	m := markRefusals(spec)
	refuse("during.test")
	refuse("again.test")
	res := &wire.RunResult{}
	readRefusals(spec, m, res)
	if !res.RefusalsRead {
		t.Fatal("the run did not read its refusals")
	}
	if !strings.Contains(res.Refusals, `"during.test"`) || !strings.Contains(res.Refusals, `"again.test"`) {
		t.Errorf("the command's refusals are missing: %q", res.Refusals)
	}
	if strings.Contains(res.Refusals, `"before.test"`) {
		t.Errorf("a refusal from before the command was read as its own: %q", res.Refusals)
	}

	// Nothing refused during the command: nothing read.
	m = markRefusals(spec)
	res = &wire.RunResult{}
	readRefusals(spec, m, res)
	if !res.RefusalsRead || res.Refusals != "" {
		t.Errorf("a command refused nothing, and read %v %q", res.RefusalsRead, res.Refusals)
	}
}

// TestRunLinkedOlderGateway: a gateway made before the mark answers 400 to
// it (it served only ?within=D): the run reads nothing and leaves no mark,
// so the host asks the gateway for the call's time instead.
func TestRunLinkedOlderGateway(t *testing.T) {
	via := serveLinked(t, func(c net.Conn) {
		defer c.Close()
		_, _ = c.Read(make([]byte, 4<<10))
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	})
	spec := &wire.RunSpec{Refusals: "http://" + control.RefusedHost + "/", RefusalsVia: via}
	m := markRefusals(spec)
	res := &wire.RunResult{}
	readRefusals(spec, m, res)
	if res.RefusalsRead || res.RefusalsBoot != "" || res.RefusalsAfter != 0 {
		t.Errorf("an older gateway's 400: read %v %q, mark %q %d; want nothing, for the host to ask", res.RefusalsRead, res.Refusals, res.RefusalsBoot, res.RefusalsAfter)
	}
}

// serveLinked serves each connection to a local address with serve, as a
// sandbox's gateway's proxy, for the test's time; the sandbox's proxy
// settings point nowhere, so that a question that used them fails.
func serveLinked(t *testing.T, serve func(net.Conn)) (addr string) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveEach(t, l, serve)
	return l.Addr().String()
}

// serveEach serves each connection l accepts with serve, in a goroutine
// of its own, until the test ends and closes l.
func serveEach(t *testing.T, l net.Listener, serve func(net.Conn)) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}
