package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// open makes the gateway serve its sandbox: the host said it holds what
// it should (`ctl ready`), or the sandbox's first copy step handed it the
// token it was started for (openOnToken).
func (g *Gateway) open() {
	g.ready.Store(true)
	if g.OnReady != nil {
		g.OnReady()
	}
}

// openWindow is how long openOnToken looks for the token after the
// gateway's start: a create's copy step writes it seconds after, even on
// a loaded machine; past it only `ctl ready` opens the gateway.
const openWindow = 5 * time.Minute

// openOnToken opens the gateway once path holds the token whose SHA-256
// is sum (hex), which it removes first: a create's copy step writes it
// (control.OpenFile), sparing the host an exec of `ctl ready` on the
// create's path. It looks every 10 ms for the first 10 s, then every
// 100 ms, until the gateway is open (by `ctl ready` too) or openWindow
// passed. A file that is not the token is left alone: the sandbox may
// write there, and only the token opens.
func (g *Gateway) openOnToken(path, sum string, opened <-chan struct{}, logf func(string, ...any)) {
	want, err := hex.DecodeString(sum)
	if err != nil || len(want) != sha256.Size {
		logf("-open-sum %q is no SHA-256: the gateway opens on `ctl ready` alone", sum)
		return
	}
	start := time.Now()
	for wait := 10 * time.Millisecond; time.Since(start) < openWindow; {
		if tokenIs(path, want) {
			// Taken once: removed before anything opens, or nothing
			// opens (a start that found it again would open too).
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				logf("could not remove the open token (%v): the gateway opens on `ctl ready` alone", err)
				return
			}
			g.open()
			return
		}
		if time.Since(start) > 10*time.Second {
			wait = 100 * time.Millisecond
		}
		select {
		case <-opened:
			return
		case <-time.After(wait):
		}
	}
}

// tokenIs says whether path, a regular file, holds the token whose
// SHA-256 is want. A link or a fifo the sandbox put there is not read.
func tokenIs(path string, want []byte) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return false
	}
	got := sha256.Sum256(b)
	return subtle.ConstantTimeCompare(got[:], want) == 1
}
