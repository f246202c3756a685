package main

import (
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

func egressScripts(s *scriptSet) {
	s.cmd("hostserve", cmdHostServe)
}

// hostserve
//
// Serves HTTP on the host, on every address (0.0.0.0) at a port the
// kernel picks, for the rest of the script: every answer is "hello from
// the host". It sets HOSTADDR to the host's address on the engine's
// default bridge (docker0), where a container reaches the host, and
// HOSTPORT to the port: a host service a sandbox must not reach unless the
// user allows it.
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
