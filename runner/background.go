package runner

import (
	"context"
	"sync"
	"time"
)

// Gate holds background work's commands back while work a user waits for
// holds it (Hold): a command run under YieldTo waits to start until
// nothing holds the gate, or every hold is older than MaxYield.
//
// A warm pool's refill in `litterbox mcp --pool` yields to the creates it
// fills for: a confined member is two pods and some two seconds of CPU
// (its kubectl creates, watches and execs, and the cluster's work for
// them), and a refill at a create a second took all of a small machine's,
// where a create claiming a member waited on every step (a git call of a
// few milliseconds took hundreds, the claim's request through the
// apiserver as long). Its commands now start between the creates.
type Gate struct {
	mu    sync.Mutex
	held  int
	free  chan struct{} // closed while nothing holds the gate
	until time.Time     // when the youngest hold stops holding
}

// MaxYield bounds how long a hold holds commands back, from when it was
// taken: a claim of a pooled sandbox takes tens or hundreds of
// milliseconds; a create that makes its own (the pool is empty, and the
// refill most needed) or runs a long setup of the user's must not stop
// the refill for as long.
const MaxYield = time.Second

// NewGate is a gate that nothing holds.
func NewGate() *Gate {
	free := make(chan struct{})
	close(free)
	return &Gate{free: free}
}

// Hold holds background commands back until release is called (once).
func (g *Gate) Hold() (release func()) {
	g.mu.Lock()
	if g.held == 0 {
		g.free = make(chan struct{})
	}
	g.held++
	g.until = time.Now().Add(MaxYield)
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.held--; g.held == 0 {
				close(g.free)
			}
		})
	}
}

// wait returns once nothing holds g, every hold is older than MaxYield,
// or ctx is done, with how long it waited.
func (g *Gate) wait(ctx context.Context) time.Duration {
	g.mu.Lock()
	free, until := g.free, g.until
	g.mu.Unlock()
	start := time.Now()
	select {
	case <-free:
		return 0
	default:
	}
	if !start.Before(until) {
		return 0
	}
	t := time.NewTimer(until.Sub(start))
	defer t.Stop()
	select {
	case <-free:
	case <-t.C:
	case <-ctx.Done():
	}
	return time.Since(start)
}

type gateKey struct{}

// YieldTo marks ctx's commands as background work that yields to g: each
// waits to start while g is held (Gate).
func YieldTo(ctx context.Context, g *Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// yieldOf is the gate ctx's commands yield to, nil for none.
func yieldOf(ctx context.Context) *Gate {
	g, _ := ctx.Value(gateKey{}).(*Gate)
	return g
}
