package e2e

import (
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// listenIn listens on addr in the network namespace at path (a stand-in
// of what lies outside a cluster): the socket stays in that namespace
// when the thread that made it goes back to the test's own. It needs
// root (CAP_SYS_ADMIN).
func listenIn(path, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// A thread that cannot go back stays locked, and ends with the
		// goroutine: no other goroutine runs in the wrong namespace.
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer own.Close()
		ns, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("the network namespace of the cluster's outside stand-in: %w", err)}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("enter %s (root only): %w", path, err)}
			return
		}
		l, err := net.Listen("tcp4", addr)
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}
