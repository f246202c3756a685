package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
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
