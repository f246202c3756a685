package files

import (
	"context"
	"unsafe"
)

// textOf is b as a string without a copy, for output that is never
// written again: a listing or a file of 16 MiB was held twice, as bytes
// and as text.
func textOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// The output budget (Files.budget) bounds the output that file operations
// may hold in the server at once, whatever the number of calls in flight
// (the MCP server runs up to 64): each reserves its limit before its exec,
// and waits while others hold the budget. Processing costs about twice the
// output (the bytes, then the text made of them), so the server's memory
// stays near its idle size plus 2 x outputBudgetBytes.

// outputBudgetBytes is the output file operations hold at once: two of
// the largest reads or listings, or dozens of greps.
const outputBudgetBytes = 32 << 20

// byteBudget is a counting semaphore of bytes, in units of budgetUnit. One
// caller at a time collects its units, so two callers can never each hold
// part of what the other waits for.
type byteBudget struct {
	gate  chan struct{}
	units chan struct{}
}

const budgetUnit = 64 << 10

func newByteBudget(total int) *byteBudget {
	b := &byteBudget{gate: make(chan struct{}, 1), units: make(chan struct{}, total/budgetUnit)}
	for range cap(b.units) {
		b.units <- struct{}{}
	}
	return b
}

// acquire reserves n bytes (at most the whole budget), waiting until they
// are free or ctx ends, and returns what gives them back.
func (b *byteBudget) acquire(ctx context.Context, n int) (func(), error) {
	want := min((n+budgetUnit-1)/budgetUnit, cap(b.units))
	select {
	case b.gate <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.gate }()
	got := 0
	giveBack := func() {
		for range got {
			b.units <- struct{}{}
		}
	}
	for got < want {
		select {
		case <-b.units:
			got++
		case <-ctx.Done():
			giveBack()
			return nil, ctx.Err()
		}
	}
	return giveBack, nil
}
