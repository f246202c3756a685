package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
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

// A hold older than MaxYield holds nothing back: a create that makes its
// own sandbox (an empty pool) or runs a long setup does not stop the
// refill the pool needs. The hold's age is set, not waited for.
func TestAHoldOlderThanMaxYieldHoldsNothingBack(t *testing.T) {
	g := NewGate()
	release := g.Hold()
	defer release()
	g.mu.Lock()
	g.until = time.Now().Add(-time.Millisecond)
	g.mu.Unlock()
	// Held back, it would wait for this context's end, then fail.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := (Exec{}).Run(YieldTo(ctx, g), New("true")); err != nil {
		t.Fatalf("the command was held back: %v", err)
	}
	if g.held != 1 {
		t.Errorf("the gate is held %d times, want the create's 1", g.held)
	}
}
