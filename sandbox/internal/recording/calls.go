package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Calls that change a sandbox (bash, write, patch) can overlap, from one
// process or several, and share one /src: a snapshot cannot tell which of
// them made a change it finds. So every such call registers while it runs,
// as a file in the sandbox's state directory, and a commit made while
// others are registered names them all (and counts them in a
// Litterbox-Concurrent trailer): a change is never credited to one call
// alone when another may have made it.
// Serialising the calls instead would make a write wait for a long bash,
// for up to an hour. See docs/snapshots.md.

// callsDir is where the calls in flight on a sandbox register.
func callsDir(h *api.Handle) string { return filepath.Join(h.Repo.StateDir(h.Slug), "calls") }

// callEntry is one registered call.
type callEntry struct {
	Message string `json:"message"`
	PID     int    `json:"pid"`
	Start   int64  `json:"start"` // unix ns
}

// callSeq numbers the calls this process registers: their files are
// named by the pid and this number, so it is the process's, not a
// Recorder's (two would name two calls alike).
var callSeq atomic.Int64

type callKey struct{}

// beginCall registers a call with its commit message and returns the
// context that carries it (so its own commit does not name it) and the func
// that ends it. A call that cannot register still runs: the record matters
// more than its attribution.
func beginCall(ctx context.Context, h *api.Handle, message string) (context.Context, func()) {
	dir := callsDir(h)
	name := fmt.Sprintf("%d-%d", os.Getpid(), callSeq.Add(1))
	data, _ := json.Marshal(callEntry{Message: message, PID: os.Getpid(), Start: time.Now().UnixNano()})
	if os.MkdirAll(dir, 0o755) != nil || os.WriteFile(filepath.Join(dir, name), data, 0o644) != nil {
		return ctx, func() {}
	}
	return context.WithValue(ctx, callKey{}, name), func() { os.Remove(filepath.Join(dir, name)) }
}

// concurrentCalls lists the other calls in flight on h, oldest first,
// dropping the entries of processes that died.
func concurrentCalls(ctx context.Context, h *api.Handle) []callEntry {
	dir := callsDir(h)
	self, _ := ctx.Value(callKey{}).(string)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []callEntry
	for _, e := range entries {
		if e.Name() == self {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var c callEntry
		if err != nil || json.Unmarshal(data, &c) != nil {
			continue
		}
		if !alive(c.PID) {
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// concurrentTrailer is the trailer that counts the calls in flight when a
// commit was made. They are named in the body, never in a trailer: their
// messages hold agent text.
const concurrentTrailer = "Litterbox-Concurrent"

// withConcurrent makes the message of a snapshot commit. message is its
// subject, made one line with its control characters escaped (newlines
// included): it holds agent text (a command, a path), which must never end
// the subject early, start a paragraph, or become a trailer (git reads
// trailers in the last paragraph, never in the first). The calls in flight
// on h besides the one in ctx follow: the subject says how many, the body
// names each on an indented line, and the one trailer, litterbox's own,
// counts them.
func withConcurrent(ctx context.Context, h *api.Handle, message string) string {
	subject := termtext.Escape(message)
	others := concurrentCalls(ctx, h)
	if len(others) == 0 {
		return subject
	}
	calls := "1 other call"
	if len(others) > 1 {
		calls = strconv.Itoa(len(others)) + " other calls"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (while %s ran)\n\n", subject, calls)
	b.WriteString("Other calls were changing this sandbox at the same time: some of these changes may be theirs:\n")
	for _, c := range others {
		fmt.Fprintf(&b, "  - %s\n", termtext.Escape(firstLine(c.Message)))
	}
	fmt.Fprintf(&b, "\n%s: %d\n", concurrentTrailer, len(others))
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
