//go:build !linux

package e2e

import (
	"errors"
	"net"
)

// listenIn needs Linux's network namespaces: elsewhere it says so.
func listenIn(path, addr string) (net.Listener, error) {
	return nil, errors.New("listening in another network namespace needs Linux")
}
