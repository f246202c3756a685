//go:build !linux

package gateway

import (
	"errors"
	"net"
)

// Passing connections is Linux's only; the gateway and its relay run on
// Linux (litterbox on macOS drives them in a Linux engine).

func sendConn(*net.UnixConn, *net.TCPConn) error {
	return errors.New("the egress relay runs on Linux only")
}

func errNoPass(error) bool { return false }

const passStream = 'S'

func recvConn(*net.UnixConn) (net.Conn, error) {
	return nil, errors.New("the egress gateway runs on Linux only")
}
