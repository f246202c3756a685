package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/egresstest"
)

// cmdHostServe is the script command hostserve (scriptcmds_test.go).
func cmdHostServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: hostserve")
	}
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		ts.Fatalf("hostserve: no docker0: %v", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		ts.Fatalf("hostserve: %v", err)
	}
	host := ""
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			host = ip.IP.String()
			break
		}
	}
	if host == "" {
		ts.Fatalf("hostserve: docker0 has no IPv4 address")
	}
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		ts.Fatalf("hostserve: %v", err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from the host")
	})}
	go srv.Serve(l)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("HOSTADDR", host)
	ts.Setenv("HOSTPORT", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// scriptTB is a script as egresstest's fixtures need a test: a failure
// fails the script, a cleanup runs when it ends.
type scriptTB struct{ ts *testscript.TestScript }

func (s scriptTB) Helper()                           {}
func (s scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }

func cmdTestInternet(ts *testscript.TestScript, neg bool, args []string) {
	modules := 0
	if len(args) == 2 && args[0] == "-goproxy" {
		modules, _ = strconv.Atoi(args[1])
		args = nil
	}
	if neg || len(args) != 0 || modules < 0 {
		ts.Fatalf("usage: testinternet [-goproxy N]")
	}
	in := egresstest.NewInternet(scriptTB{ts}, "", nil)
	ts.Setenv("INETADDR", in.Addr(10))
	if modules > 0 {
		p := egresstest.NewGoProxy(modules)
		in.Mux.Handle("/goproxy/", p.Handler("/goproxy/", ts.MkAbs("goproxy.log")))
		ts.Check(os.WriteFile(ts.MkAbs("go.mod.proxy"), []byte(p.GoMod()), 0o644))
		ts.Setenv("GOPROXYURL", "http://"+in.Addr(10)+"/goproxy")
	}
}
