package mcp

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleFreesOnceAfterABurst: calls that follow one another closely (an
// agent's burst) pay no GC between them; the memory goes back once, after
// the last, when the server has been idle for a while.
func TestIdleFreesOnceAfterABurst(t *testing.T) {
	var freed atomic.Int32
	tr := &idleTracker{after: 100 * time.Millisecond, free: func() { freed.Add(1) }}
	for i := 0; i < 5; i++ {
		release := tr.begin()
		release()
		time.Sleep(10 * time.Millisecond)
	}
	if n := freed.Load(); n != 0 {
		t.Fatalf("freed %d times during the burst, want none", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for freed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := freed.Load(); n != 1 {
		t.Fatalf("freed %d times after the burst, want once", n)
	}
	// A call in flight when the wait ends: nothing is freed under it.
	release := tr.begin()
	time.Sleep(200 * time.Millisecond)
	if n := freed.Load(); n != 1 {
		t.Fatalf("freed under a call in flight (%d)", n)
	}
	release()
}
