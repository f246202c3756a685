// Package flock takes exclusive file locks that the kernel releases when the
// process dies, so a lock never outlives a kill -9.
package flock

import (
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path (made if missing), waiting for it, and
// returns what releases it.
func Lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
