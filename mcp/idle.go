package mcp

import (
	"runtime/debug"
	"sync"
)

// idle hands memory back to the system when no call is in flight. A call
// can need tens of MB for a moment (a 5 MB write, a snapshot's scan of a
// big tree); Go would keep that resident for minutes, and the server idles
// most of its life beside an agent that is thinking.
var idle idleTracker

type idleTracker struct {
	mu       sync.Mutex
	inFlight int
}

// begin marks a call in flight; the returned func ends it.
func (t *idleTracker) begin() func() {
	t.mu.Lock()
	t.inFlight++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		t.inFlight--
		last := t.inFlight == 0
		t.mu.Unlock()
		if last {
			// A GC of what is live after a call: milliseconds, off the
			// caller's path.
			go debug.FreeOSMemory()
		}
	}
}
