package pool

import (
	"context"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
)

// DefaultRefillRate is how many members a process's fills make per second
// at most, once the first MaxSize are made (core.Options.PoolRefillRate
// sets another): the background refill of `mcp --pool` after a burst of
// creates takes the engine's time at that pace, not all at once (as
// agent-sandbox's --sandbox-warm-pool-max-refill-rate).
const DefaultRefillRate = 2.0

// bucket is a token bucket: each member a fill makes takes a token; tokens
// come back at rate per second, up to burst. It starts full.
type bucket struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
}

func newBucket(rate float64, burst int) *bucket {
	if rate <= 0 {
		rate = DefaultRefillRate
	}
	return &bucket{rate: rate, burst: float64(burst), tokens: float64(burst), now: time.Now, sleep: sleepCtx}
}

// take waits until a token is there and takes it; the wait ends early,
// with ctx's error, when ctx does. Waiters queue: each reserves its token
// (the count may go below zero) and sleeps until it is due.
func (b *bucket) take(ctx context.Context) error {
	b.mu.Lock()
	now := b.now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	b.tokens--
	wait := time.Duration(-b.tokens / b.rate * float64(time.Second))
	b.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	if err := b.sleep(ctx, wait); err != nil {
		b.mu.Lock()
		b.tokens++ // not taken after all
		b.mu.Unlock()
		return err
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fillParallel is how many members a fill makes at once: most of a
// member's making is waiting on the engine.
const fillParallel = 4

// clusterFillParallel is fillParallel on an engine whose members are a
// cluster's pods (provider.Claimer: Kubernetes), where a member's making
// is mostly waiting on the cluster (its scheduler, kubelet and container
// runtime start one pod, or two when confined: seconds) and a fill that
// lags behind a create a second leaves the next create cold. On the test
// cluster (2 shared cores, load 35-50), a confined pool of 8 filled in
// 26-38 s with 8 at once against 49-73 s with 4, and one of 16 in 71 s
// with 8 against 84 s with 16 (docs/bench.md).
const clusterFillParallel = 8

// fillParallelOf is how many members a fill on pv's engine makes at once.
func fillParallelOf(pv provider.Provider) int {
	if _, ok := pv.(provider.Claimer); ok {
		return clusterFillParallel
	}
	return fillParallel
}

// fillPoll is how often a fill looks again at how many members are ready
// while it waits for those it is making.
const fillPoll = 250 * time.Millisecond

// fillUp makes members with mk, par at a time, while the members ready
// (ready counts those not claimed since: host files only) and those being
// made are fewer than size. It looks again as each member is made and every
// fillPoll, so a member claimed during a fill has its replacement started
// at once, not after the fill, and a fill never makes more than size. It
// starts none after a member fails, and returns once those under way end.
func fillUp(size, par int, ready func() int, mk func() error) []error {
	var errs []error
	done := make(chan error)
	making := 0
	tick := time.NewTicker(fillPoll)
	defer tick.Stop()
	for {
		for len(errs) == 0 && making < par && ready()+making < size {
			making++
			go func() { done <- mk() }()
		}
		if making == 0 {
			return errs
		}
		select {
		case err := <-done:
			making--
			if err != nil {
				errs = append(errs, err)
			}
		case <-tick.C:
		}
	}
}
