package api

import (
	"context"
	"sync"
)

// Woken collects what an operation's front end should tell of the
// sandboxes it resumed on the way (an idle pause undone: pause/idle.go),
// so that an agent's tool result says so.
type Woken struct {
	mu    sync.Mutex
	notes []string
}

type wokenKey struct{}

// WithWoken is ctx carrying a Woken the front end reads once the
// operation is over.
func WithWoken(ctx context.Context) (context.Context, *Woken) {
	w := &Woken{}
	return context.WithValue(ctx, wokenKey{}, w), w
}

// NoteWoken adds note to ctx's Woken; false when ctx carries none (the
// caller then says it another way).
func NoteWoken(ctx context.Context, note string) bool {
	w, ok := ctx.Value(wokenKey{}).(*Woken)
	if !ok {
		return false
	}
	w.mu.Lock()
	w.notes = append(w.notes, note)
	w.mu.Unlock()
	return true
}

// Notes are the notes added so far.
func (w *Woken) Notes() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.notes...)
}
