package sandbox

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
)

// Calls that change a sandbox (bash, write, patch) can overlap, from one
// process or several, and share one /src: a snapshot cannot tell which of
// them made a change it finds. So every such call registers while it runs,
// as a file in the sandbox's state directory, and a commit made while
// others are registered names them all (Litterbox-Concurrent trailers): a
// change is never credited to one call alone when another may have made it.
// Serialising the calls instead would make a write wait for a long bash,
// for up to an hour. See docs/snapshots.md.

// callsDir is where the calls in flight on a sandbox register.
func callsDir(h *Handle) string { return filepath.Join(h.Repo.stateDir(h.Slug), "calls") }

// callEntry is one registered call.
type callEntry struct {
	Message string `json:"message"`
	PID     int    `json:"pid"`
	Start   int64  `json:"start"` // unix ns
}

var callSeq atomic.Int64

type callKey struct{}

// beginCall registers a call with its commit message and returns the
// context that carries it (so its own commit does not name it) and the func
// that ends it. A call that cannot register still runs: the record matters
// more than its attribution.
func beginCall(ctx context.Context, h *Handle, message string) (context.Context, func()) {
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
func concurrentCalls(ctx context.Context, h *Handle) []callEntry {
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

// concurrentTrailer is the trailer naming a call that was in flight when a
// commit was made.
const concurrentTrailer = "Litterbox-Concurrent"

// withConcurrent makes the message of a snapshot commit: message with its
// control characters escaped (it is the agent's, and the user's own git log
// prints it as stored), and the calls in flight on h besides the one in
// ctx: the subject says how many, a trailer names each.
func withConcurrent(ctx context.Context, h *Handle, message string) string {
	message = termtext.EscapeText(message)
	others := concurrentCalls(ctx, h)
	if len(others) == 0 {
		return message
	}
	subject, body, _ := strings.Cut(message, "\n")
	calls := "1 other call"
	if len(others) > 1 {
		calls = strconv.Itoa(len(others)) + " other calls"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (while %s ran)\n\n", subject, calls)
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString(body + "\n\n")
	}
	b.WriteString("Other calls were changing this sandbox at the same time: some of these changes may be theirs.\n\n")
	for _, c := range others {
		fmt.Fprintf(&b, "%s: %s\n", concurrentTrailer, termtext.Escape(firstLine(c.Message)))
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
