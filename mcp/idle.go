package mcp

import (
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// idle hands memory back to the system when no call has been in flight for
// idleAfter. A call can need tens of MB for a moment (a 5 MB write, a
// snapshot's scan of a big tree); Go would keep that resident for minutes,
// and the server idles most of its life beside an agent that is thinking.
// Not after every call: the GC costs milliseconds of CPU, which calls that
// follow one another closely (an agent's burst, on a busy machine) paid
// each time.
var idle = idleTracker{after: idleAfter, free: debug.FreeOSMemory}

// idleAfter is how long the server is idle before it hands memory back.
const idleAfter = 500 * time.Millisecond

type idleTracker struct {
	after time.Duration
	free  func()

	mu       sync.Mutex
	inFlight int
	timer    *time.Timer
}

// begin marks a call in flight; the returned func ends it.
func (t *idleTracker) begin() func() {
	t.mu.Lock()
	t.inFlight++
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.inFlight--; t.inFlight > 0 {
			return
		}
		if t.timer == nil {
			t.timer = time.AfterFunc(t.after, t.freeIfIdle)
		} else {
			t.timer.Reset(t.after)
		}
	}
}

// freeIfIdle frees memory unless a call began since the wait started.
func (t *idleTracker) freeIfIdle() {
	t.mu.Lock()
	busy := t.inFlight > 0
	t.mu.Unlock()
	if !busy {
		t.free()
	}
}

// heapSoftLimit is the server's soft memory limit (GOMEMLIMIT, unless the
// user set one). What one call may hold is bounded (a scan's stream, an
// output's cap); with the collector's default pacing alone, two such calls
// at once on a busy machine took the server's peak past 250 MiB, as the
// collector ran late. Near the limit it runs sooner; it never fails a call.
const heapSoftLimit = 160 << 20

func softLimit() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(heapSoftLimit)
	}
}
