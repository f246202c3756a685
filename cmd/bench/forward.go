package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"
)

// The egress-download group's bound: a forwarder that does nothing but
// carry bytes both ways between two TCP connections, with io.Copy between
// the two *net.TCPConn themselves (splice on Linux), so that what it costs
// is the kernel's: no policy, no TLS, no relay, no fd passing. The bench
// runs itself in this mode (`bench -forward LISTEN=DEST ...`) in a
// container beside the open sandbox, in its network namespace, where the
// gateway's hop is for the confined one: the client on the loopback, the
// server across the bridge.

// forward is the -forward mode: it serves every LISTEN=DEST pair of args
// until it is killed; it returns only on a bad argument or a listen that
// fails.
func forward(args []string) int {
	pairs, err := parseForwards(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench -forward:", err)
		return 2
	}
	errs := make(chan error, len(pairs))
	for _, p := range pairs {
		l, err := net.Listen("tcp", p[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench -forward:", err)
			return 1
		}
		go func() { errs <- serveForward(l.(*net.TCPListener), p[1]) }()
	}
	fmt.Fprintln(os.Stderr, "bench -forward:", <-errs)
	return 1
}

// parseForwards reads LISTEN=DEST pairs, each a host:port.
func parseForwards(args []string) ([][2]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no LISTEN=DEST pair")
	}
	var pairs [][2]string
	for _, a := range args {
		listen, dest, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not LISTEN=DEST", a)
		}
		for _, hp := range []string{listen, dest} {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				return nil, fmt.Errorf("%q: %v", a, err)
			}
		}
		pairs = append(pairs, [2]string{listen, dest})
	}
	return pairs, nil
}

// serveForward carries each connection l accepts to dest.
func serveForward(l *net.TCPListener, dest string) error {
	addr, err := net.ResolveTCPAddr("tcp", dest)
	if err != nil {
		return err
	}
	for {
		c, err := l.AcceptTCP()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			up, err := net.DialTCP("tcp", nil, addr)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{})
			go func() {
				_, _ = io.Copy(c, up)
				_ = c.CloseWrite()
				close(done)
			}()
			_, _ = io.Copy(up, c)
			_ = up.CloseWrite()
			<-done
		}()
	}
}
