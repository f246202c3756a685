package core

import (
	"time"

	"github.com/charmbracelet/log"
)

// Phases times the phases of one operation (a create, a delete, a claim)
// for the debug log: one line a phase with its duration, so that a user
// sees where the milliseconds go beside the engine's and git's calls, which
// the runner logs one by one. Phases that overlap (the gateway is made
// while the branch is) are timed from the end of the one before.
type Phases struct {
	log         *log.Logger
	op          string
	start, last time.Time
}

// StartPhases starts timing op.
func StartPhases(l *log.Logger, op string) *Phases {
	now := time.Now()
	return &Phases{log: l, op: op, start: now, last: now}
}

// Done logs the phase that ends now.
func (p *Phases) Done(phase string) {
	now := time.Now()
	p.log.Debug("phase", "op", p.op, "phase", phase, "ms", now.Sub(p.last).Milliseconds())
	p.last = now
}

// End logs the whole operation's duration.
func (p *Phases) End() {
	p.log.Debug("phase", "op", p.op, "phase", "total", "ms", time.Since(p.start).Milliseconds())
}
