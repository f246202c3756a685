package scanner

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The isolation probe: litterbox checks that an engine keeps sandboxes apart
// by starting two probe sandboxes on networks of their own, one listening and
// one connecting. Both sides run this program, so the probe works in any
// image litterbox can snapshot.

// probeMain runs `probe listen PORT WAIT` or `probe connect PORT WAIT IP...`.
func probeMain(args []string, stdout io.Writer) error {
	if len(args) < 3 || (args[0] != "listen" && args[0] != "connect") {
		return errors.New("litterbox-scan: usage: probe listen|connect PORT WAIT [IP...]")
	}
	port, err := strconv.Atoi(args[1])
	if err != nil {
		return fmt.Errorf("litterbox-scan probe: port: %w", err)
	}
	wait, err := time.ParseDuration(args[2])
	if err != nil {
		return fmt.Errorf("litterbox-scan probe: wait: %w", err)
	}
	if args[0] == "listen" {
		return ProbeListen(stdout, port, wait)
	}
	return ProbeConnect(stdout, port, wait, args[3:])
}

// ProbeListen is the listening side of the isolation probe, run in a probe
// sandbox (litterbox-scan probe listen): it listens on port, connects to
// itself on each of its addresses to prove the listener works, prints
// "ready ADDR..." and accepts connections until wait has passed.
func ProbeListen(w io.Writer, port int, wait time.Duration) error {
	l, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var ips []string
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.To4() == nil {
			continue
		}
		addr := net.JoinHostPort(ipn.IP.String(), strconv.Itoa(port))
		c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			return fmt.Errorf("the listener does not answer on its own address %s: %w", addr, err)
		}
		c.Close()
		ips = append(ips, ipn.IP.String())
	}
	if len(ips) == 0 {
		return errors.New("the probe sandbox has no IPv4 address")
	}
	fmt.Fprintf(w, "ready %s\n", strings.Join(ips, " "))
	time.Sleep(wait)
	return nil
}

// ProbeConnect is the connecting side (litterbox-scan probe connect): it
// tries each address until one accepts or wait has passed, and prints
// "reached ADDR" or "unreached: WHY". A refused connection is tried again:
// only an accepted one proves a way through.
func ProbeConnect(w io.Writer, port int, wait time.Duration, ips []string) error {
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		for _, ip := range ips {
			addr := net.JoinHostPort(ip, strconv.Itoa(port))
			c, err := net.DialTimeout("tcp4", addr, max(time.Until(deadline), time.Millisecond))
			if err == nil {
				c.Close()
				fmt.Fprintf(w, "reached %s\n", addr)
				return nil
			}
			last = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(w, "unreached: no connection to %s within %s (%v)\n", strings.Join(ips, ", "), wait, last)
	return nil
}
