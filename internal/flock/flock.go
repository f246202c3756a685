// Package flock takes exclusive file locks that the kernel releases when the
// process dies, so a lock never outlives a kill -9.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive lock on path (made if missing), waiting for it, and
// returns what releases it.
func Lock(path string) (func(), error) {
	_, unlock, err := LockFile(path)
	return unlock, err
}

// LockFile is Lock that also gives the locked file, open to read and
// write, to a caller that keeps a few bytes there: every holder opens the
// lock file anyway, so they cost no open of their own. It stays open until
// the lock is released.
func LockFile(path string) (*os.File, func(), error) {
	f, err := open(path)
	if err != nil {
		return nil, nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, release(f), nil
}

// TryLock takes the lock on path if it is free; ok is false when another
// holds it.
func TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := open(path)
	if err != nil {
		return nil, false, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return release(f), true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, false, nil
	}
	f.Close()
	return nil, false, fmt.Errorf("lock %s: %w", path, err)
}

// Wait takes the lock on path, trying every poll until ctx is done.
func Wait(ctx context.Context, path string, poll time.Duration) (func(), error) {
	for {
		unlock, ok, err := TryLock(path)
		if err != nil || ok {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

func open(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

func release(f *os.File) func() {
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
