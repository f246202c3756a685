package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A background command (a warm pool's refill) waits to start while a
// create holds the gate it yields to, and runs once the create is done;
// other commands run meanwhile.
func TestBackgroundCommandsYieldWhileTheGateIsHeld(t *testing.T) {
	var r Exec
	ctx := context.Background()
	mark := filepath.Join(t.TempDir(), "ran")
	g := NewGate()
	release := g.Hold()
	ran := make(chan error, 1)
	go func() {
		_, err := r.Run(YieldTo(ctx, g), New("touch", mark))
		ran <- err
	}()
	// The create's own commands are not held back.
	if _, err := r.Run(ctx, New("true")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the background command ran while the gate was held")
	}
	release()
	release() // a second release is no release
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the background command did not run once the gate was released: %v", err)
	}
	// Released, the gate holds nothing back.
	if _, err := r.Run(YieldTo(ctx, g), New("true")); err != nil {
		t.Fatal(err)
	}
	if g.held != 0 {
		t.Errorf("the gate is held %d times after every hold was released", g.held)
	}
}
