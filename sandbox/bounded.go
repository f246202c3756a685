package sandbox

import (
	"bytes"
	"context"
	"errors"
	"unsafe"
)

// What the host reads from a sandbox is bounded twice. The scripts cut and
// count inside the sandbox (grep's lines, ls's bytes, read's size), so an
// honest answer is small whatever the files look like; and the host reads
// every exec's output through a limit, failing cleanly past it, because the
// programs that answer run as uid 1000, the agent's, which can tamper with
// them (/proc/PID/mem) to send more. Before this, one grep over 11 hard
// links to a 30 MB line took the MCP server from 25 MiB to 1.4 GiB
// (security_memory.txtar).

// ErrTooMuchOutput is an exec that sent more than litterbox asked for: a
// program in the sandbox was tampered with. Nothing past the limit was read.
var ErrTooMuchOutput = errors.New("the sandbox sent too much")

// execOutputCap is what the host reads of an exec's output when its
// caller sets no other limit: the service's own small commands (service
// status and logs, setup, installs).
const execOutputCap = 4 << 20

// cappedBuffer collects up to max bytes; the write that would pass max
// fails, which makes the exec's client see a closed pipe and stop. It
// keeps chunks and joins them once, at the end: a buffer that doubles
// held three times a big output while it grew.
type cappedBuffer struct {
	chunks [][]byte
	n      int
	max    int
	over   bool
}

const chunkSize = 1 << 20

var errOverCap = errors.New("output over its limit")

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.over || c.n+len(p) > c.max {
		c.over = true
		return 0, errOverCap
	}
	c.n += len(p)
	for rest := p; len(rest) > 0; {
		last := len(c.chunks) - 1
		if last < 0 || len(c.chunks[last]) == cap(c.chunks[last]) {
			c.chunks = append(c.chunks, make([]byte, 0, min(chunkSize, max(4<<10, c.n))))
			last++
		}
		k := copy(c.chunks[last][len(c.chunks[last]):cap(c.chunks[last])], rest)
		c.chunks[last] = c.chunks[last][:len(c.chunks[last])+k]
		rest = rest[k:]
	}
	return len(p), nil
}

// Bytes is what was written.
func (c *cappedBuffer) Bytes() []byte {
	switch len(c.chunks) {
	case 0:
		return nil
	case 1:
		return c.chunks[0]
	}
	all := bytes.Join(c.chunks, nil)
	c.chunks = [][]byte{all}
	return all
}

// textOf is b as a string without a copy, for output that is never
// written again: a listing or a file of 16 MiB was held twice, as bytes
// and as text.
func textOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// outputBudget bounds the output that file operations may hold in the
// server at once, whatever the number of calls in flight (the MCP server
// runs up to 64): each reserves its limit before its exec, and waits while
// others hold the budget. Processing costs about twice the output (the
// bytes, then the text made of them), so the server's memory stays near
// its idle size plus 2 x outputBudgetBytes.
var outputBudget = newByteBudget(outputBudgetBytes)

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
