package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The gateway opens once the shared directory holds the token its
// -open-sum names, and takes it away first; a wrong token, a fifo or a
// link in its place (what the sandbox could write) opens nothing and
// leaves the poller running.
func TestOpenOnToken(t *testing.T) {
	const token = "the-token"
	s := sha256.Sum256([]byte(token))
	sum := hex.EncodeToString(s[:])
	start := func(t *testing.T) (path string, g *Gateway, opened chan struct{}, done chan struct{}) {
		path = filepath.Join(t.TempDir(), "open")
		opened, done = make(chan struct{}), make(chan struct{})
		g = &Gateway{}
		g.OnReady = func() { close(opened) }
		go func() {
			defer close(done)
			g.openOnToken(path, sum, opened, t.Logf)
		}()
		return path, g, opened, done
	}
	isOpen := func(opened chan struct{}, within time.Duration) bool {
		select {
		case <-opened:
			return true
		case <-time.After(within):
			return false
		}
	}

	t.Run("token", func(t *testing.T) {
		path, g, opened, done := start(t)
		if err := os.WriteFile(path, []byte(token), 0o644); err != nil {
			t.Fatal(err)
		}
		if !isOpen(opened, 5*time.Second) {
			t.Fatal("the gateway did not open on its token")
		}
		<-done
		if !g.ready.Load() {
			t.Error("opened, but `ctl state` would not say ready")
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("the token is still there after the gateway took it: %v", err)
		}
	})
	t.Run("others", func(t *testing.T) {
		path, g, opened, done := start(t)
		dir := filepath.Dir(path)
		tok := filepath.Join(dir, "elsewhere")
		if err := os.WriteFile(tok, []byte(token), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, put := range []func() error{
			func() error { return os.WriteFile(path, []byte("not-the-token"), 0o644) },
			func() error { _ = os.Remove(path); return os.Symlink(tok, path) },
			func() error { _ = os.Remove(path); return syscall.Mkfifo(path, 0o644) },
		} {
			if err := put(); err != nil {
				t.Fatal(err)
			}
			if isOpen(opened, 300*time.Millisecond) {
				t.Fatal("the gateway opened on what is not its token")
			}
		}
		// ctl ready still opens it, and ends the polling.
		g.open()
		<-done
	})
}
