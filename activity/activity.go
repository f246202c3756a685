// Package activity keeps the activity record of each sandbox: one JSON line
// per event (a tool call, a snapshot, a pause, a merge...), appended on the
// host by whichever litterbox process acted, and read by `litterbox watch`
// and `litterbox ui`.
//
// A repository's records live in its common git dir, in
// litterbox/activity.d (Dir): <slug>.jsonl, the newest events, and
// <slug>.1.jsonl, the ones before, so a record never holds more than twice
// its bound. They sit beside the sandboxes' state, never in a sandbox:
// nothing an agent runs can write them. A record outlives its sandbox, so a
// merge or a delete is still there to read afterwards; a sandbox made again
// under the same name continues it, after its create event. The record of
// a deleted sandbox goes after Retention (prune.go).
//
// Each event has a number (Seq), one more than the event before it in its
// record, so a reader knows exactly how many it did not get. Flooding a
// record rotates its oldest events away, so the events that matter to
// security (refused connections, policy changes, operations that failed)
// are also kept, in a store of their own per class that never rotates
// (keep.go): the first of them up to MaxKept bytes, and the number of
// those after.
//
// Each line carries the hash of the line before it, and each chain's head
// is kept in the record's lock file (chain.go), so an edit, a line taken
// out, a cut or a file removed shows: Verify names where (verify.go), and
// a Follower notes a line it reads that does not follow.
//
// Several processes append at once (MCP servers, CLI commands): each takes
// the record's lock file (<slug>.lock, internal/flock) around one write(2)
// of a whole line, so no line is torn or interleaved whatever its length,
// and the check of the size and the rotation cannot race. Every text field
// an agent can control is cut to a few KiB (Bound) before it is stored, and
// escaped when shown (Line, Detail).
package activity

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/internal/textcap"
)

// Kind is what an event records.
type Kind string

// Kinds of events.
const (
	KindCall      Kind = "call"      // an agent's tool call
	KindCreate    Kind = "create"    // the sandbox was made
	KindDelete    Kind = "delete"    // the sandbox was deleted
	KindSnapshot  Kind = "snapshot"  // a snapshot outside a tool call
	KindMilestone Kind = "milestone" // commits squashed into a milestone
	KindRewind    Kind = "rewind"    // /src put back to a commit
	KindFork      Kind = "fork"      // a new sandbox made from this one (Target)
	KindPause     Kind = "pause"
	KindResume    Kind = "resume"
	KindService   Kind = "service" // a service started, stopped or exited (Action)
	KindMerge     Kind = "merge"   // merged into Target
	KindApply     Kind = "apply"   // applied to the working tree
	KindEgress    Kind = "egress"  // a connection refused (Target: where to)
	// KindExec is a command a person ran in the sandbox (litterbox exec,
	// shell): Action "start" when it began, "end" with its exit code.
	KindExec Kind = "exec"
	// KindNet is a change of the sandbox's network policy (litterbox
	// net): Action allow or deny, Target the entry.
	KindNet Kind = "net"
	// KindMissed is never written: a reader's note that Missed events of
	// the record are not there to read (rotated away before it read them,
	// or past what it keeps).
	KindMissed Kind = "missed"
	// KindUnkept is never written: a reader's note that Missed events of
	// the class Action (ClassEgress, ClassFailed) came after the store
	// that keeps them aside was full (keep.go).
	KindUnkept Kind = "unkept"
)

// Who acted: an event's By.
const (
	ByMCP = "mcp" // an agent, through litterbox mcp
	ByCLI = "cli" // a person, on the command line
	ByUI  = "ui"  // a person, in litterbox ui
	// ByLitterbox is litterbox itself: what an operation did beyond what
	// was asked (the services a create starts, those a rewind restarts),
	// or an operation no front end named.
	ByLitterbox = "litterbox"
)

type actorKey struct{}

// WithActor is ctx carrying who acts (ByMCP, ByCLI...): each front end
// sets it once, and the service records its operations' events with it.
// The actor comes from which program runs, never from what an agent sent.
func WithActor(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, actorKey{}, by)
}

// Actor is who acts in ctx (WithActor); ByLitterbox when no front end
// said.
func Actor(ctx context.Context) string {
	if by, ok := ctx.Value(actorKey{}).(string); ok && by != "" {
		return by
	}
	return ByLitterbox
}

// Event is one line of a record. Only Kind is required; Append fills Time
// and PID.
type Event struct {
	// Time is when the event was recorded: when the call or operation
	// ended. Records are in this order.
	Time time.Time `json:"time"`
	// Seq numbers the events of a record from 1, in the order they were
	// written (0 in records written before it was kept).
	Seq int64 `json:"seq,omitempty"`
	// Prev is the hash of the line before in the record (chain.go), ""
	// for its first and in records written before it was kept.
	Prev    string `json:"prev,omitempty"`
	Sandbox string `json:"sandbox"`
	Kind    Kind   `json:"kind"`
	// By is who acted: mcp (an agent), cli or ui (a person), litterbox
	// (itself); see WithActor.
	By  string `json:"by,omitempty"`
	PID int    `json:"pid,omitempty"`

	// Tool and Args are a call's tool and a short form of its arguments.
	Tool string `json:"tool,omitempty"`
	Args string `json:"args,omitempty"`
	// Start is when a call began; Ms is what it took, in milliseconds.
	Start     time.Time `json:"start,omitzero"`
	Ms        int64     `json:"ms,omitempty"`
	Exit      *int      `json:"exit,omitempty"`
	TimedOut  bool      `json:"timedOut,omitempty"`
	Cancelled bool      `json:"cancelled,omitempty"`
	// Commit is the commit the event made: on the sandbox's branch, or,
	// for a merge, Target's new tip (the sandbox's commit merged is in
	// Message when it is another; an apply's is in Message).
	Commit string `json:"commit,omitempty"`
	// Files are the files it changed, the first MaxFiles of them;
	// FilesMore counts the others.
	Files     []string `json:"files,omitempty"`
	FilesMore int      `json:"filesMore,omitempty"`
	// Service and Action: a service event's service and what happened
	// (start, stop, restart, exit); an exec's start or end.
	Service string `json:"service,omitempty"`
	Action  string `json:"action,omitempty"`
	// Target is the other end: a fork's new sandbox, the branch a merge
	// went into, the host a refused connection tried to reach.
	Target  string `json:"target,omitempty"`
	Message string `json:"message,omitempty"`
	// Output is what the call printed, as kept (its start and its end).
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	// Cut names each field that was cut to its bound, with its size in
	// bytes before: its start and its end are kept, with "… N bytes cut …"
	// between.
	Cut map[string]int `json:"cut,omitempty"`
	// Missed is a KindMissed note's count of events not read.
	Missed int64 `json:"missed,omitempty"`
}

// Bounds of what an event keeps, in bytes of JSON.
const (
	MaxArgs   = 4 << 10
	MaxOutput = 4 << 10
	MaxError  = 2 << 10
	MaxText   = 1 << 10 // Message, Target
	MaxName   = 256     // Tool, By, Service, Action, Commit, each file name
	MaxFiles  = 20
)

// DefaultMaxBytes is the size past which a record rotates: it keeps at most
// about twice this.
const DefaultMaxBytes = 4 << 20

// DirName is the folder of the records in <common git dir>/litterbox. It
// holds a dot, which no sandbox name does, so it never meets a sandbox's
// state folder.
const DirName = "activity.d"

// Dir is the folder of the records of the repository whose common git dir
// is gitDir.
func Dir(gitDir string) string { return filepath.Join(gitDir, "litterbox", DirName) }

// slugRE is what a sandbox name is once slugified (api.Slugify): the
// only names a record may have, so none reaches outside Dir. Compiled on
// first use: its {0,62} makes a program of about 800 allocations, which
// every litterbox process would pay as it starts (0.3-0.5 ms, a tenth of
// a `litterbox list` beyond its engine call).
var slugRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62})$`) })

// ValidName reports whether name can name a record.
func ValidName(name string) bool { return slugRE().MatchString(name) }

// Record is the activity record of one sandbox.
type Record struct {
	Dir     string // Dir(gitDir)
	Sandbox string // the sandbox's slug
	// MaxBytes is the size past which the record rotates
	// (DefaultMaxBytes when 0).
	MaxBytes int64
	// MaxKept is the size of each store of kept events (DefaultMaxKept
	// when 0).
	MaxKept int64
	// MaxTotal bounds the folder's records together (DefaultMaxTotal when
	// 0; see Tidy).
	MaxTotal int64
	// Retention is how long the record of a deleted sandbox stays
	// (DefaultRetention when 0).
	Retention time.Duration
}

// Path is the file that holds the newest events.
func (r Record) Path() string { return filepath.Join(r.Dir, r.Sandbox+".jsonl") }

// OldPath is the file that holds the events before those of Path.
func (r Record) OldPath() string { return filepath.Join(r.Dir, r.Sandbox+".1.jsonl") }

func (r Record) lockPath() string { return filepath.Join(r.Dir, r.Sandbox+".lock") }

// Append adds e to the record, bounded (Bound), as one line numbered one
// past the line before (Seq), and to the record's store of kept events
// when it is one (Kept). Time defaults to now, PID to this process's,
// Sandbox to the record's. When the record rotates, or a sandbox is made
// or deleted, the folder is tidied afterwards (Tidy).
func (r Record) Append(e Event) error {
	if !ValidName(r.Sandbox) {
		return fmt.Errorf("activity record: %q is not a sandbox name", r.Sandbox)
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	if !e.Start.IsZero() {
		e.Start = e.Start.UTC()
	}
	if e.PID == 0 {
		e.PID = os.Getpid()
	}
	e.Sandbox = r.Sandbox
	e.Missed = 0
	e = Bound(e)
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("activity record of %s: %w", r.Sandbox, err)
	}
	rotated, err := r.write(e)
	if err != nil {
		return fmt.Errorf("activity record of %s: %w", r.Sandbox, err)
	}
	if rotated || e.Kind == KindCreate || e.Kind == KindDelete {
		r.Tidy(time.Now())
	}
	return nil
}

// write numbers e, links it to the line before (chain.go) and writes it
// and the record's head, under the record's lock: the lock makes the
// numbering, the link, the size check, the rotation and the writes one step (two
// writers rotating at once would move a fresh file over the one before,
// losing it). O_APPEND alone keeps lines whole only up to PIPE_BUF on some
// systems; under the lock it needs no such bound.
func (r Record) write(e Event) (rotated bool, err error) {
	lf, unlock, err := flock.LockFile(r.lockPath())
	if err != nil {
		return false, err
	}
	defer unlock()
	chains := r.chains()
	heads := readHeads(lf, len(chains))
	size := fileSize(r.Path())
	rec := chains[0]
	seq, prev := rec.end(size, heads[rec.slot])
	e.Seq, e.Prev = seq+1, prev
	line, err := json.Marshal(e)
	if err != nil {
		return false, err
	}
	maxBytes := r.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if size > 0 && size+int64(len(line))+1 > maxBytes {
		if err := os.Rename(r.Path(), r.OldPath()); err != nil {
			return false, fmt.Errorf("rotate: %w", err)
		}
		rotated, size = true, 0
	}
	if err := appendLine(r.Path(), append(line, '\n')); err != nil {
		return rotated, err
	}
	if err := writeHead(lf, rec.slot, head{seq: e.Seq, size: size + int64(len(line)) + 1, hash: lineHash(line)}); err != nil {
		return rotated, err
	}
	return rotated, r.keep(e, chains, heads, lf)
}

// appendLine writes line at the end of the file path, made if missing.
func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(line)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// Append adds e to the record of sandbox e.Sandbox of the repository whose
// common git dir is gitDir.
func Append(gitDir string, e Event) error {
	return Record{Dir: Dir(gitDir), Sandbox: e.Sandbox}.Append(e)
}

// Limits are the bounds of an event's fields, in bytes of JSON.
type Limits struct {
	Args, Output, Error, Text, Name, Files int
}

// EventLimits are the bounds of an event in a record.
var EventLimits = Limits{Args: MaxArgs, Output: MaxOutput, Error: MaxError, Text: MaxText, Name: MaxName, Files: MaxFiles}

// Bound cuts every text field of e to its bound (EventLimits), noting in
// Cut the size of each field cut. Agent text is hostile: a 1 MB argument
// is kept as its first and last MaxArgs/2 bytes, so neither a command
// padded in front nor one padded behind hides what it runs.
func Bound(e Event) Event { return boundTo(e, EventLimits) }

func boundTo(e Event, l Limits) Event {
	cut := func(field string, s *string, n int) {
		if textcap.Len(*s) <= n {
			return
		}
		if e.Cut == nil {
			e.Cut = map[string]int{}
		}
		if e.Cut[field] < len(*s) {
			e.Cut[field] = len(*s)
		}
		*s = headTail(*s, n)
	}
	cut("sandbox", &e.Sandbox, l.Name)
	cut("kind", (*string)(&e.Kind), l.Name)
	cut("by", &e.By, l.Name)
	cut("tool", &e.Tool, l.Name)
	cut("args", &e.Args, l.Args)
	cut("commit", &e.Commit, l.Name)
	cut("service", &e.Service, l.Name)
	cut("action", &e.Action, l.Name)
	cut("target", &e.Target, l.Text)
	cut("message", &e.Message, l.Text)
	cut("output", &e.Output, l.Output)
	cut("error", &e.Error, l.Error)
	if len(e.Files) > l.Files {
		e.FilesMore += len(e.Files) - l.Files
		e.Files = e.Files[:l.Files]
	}
	if e.Files != nil {
		files := make([]string, len(e.Files))
		for i, f := range e.Files {
			cut("files", &f, l.Name)
			files[i] = f
		}
		e.Files = files
	}
	return e
}

// headTail is s, which weighs more than n in JSON, cut to its start and
// its end with "… N bytes cut …" between, weighing n at most.
func headTail(s string, n int) string {
	mark := fmt.Sprintf(" … %d bytes cut … ", len(s))
	budget := max(n-textcap.Len(mark), 0)
	head := textcap.Prefix(s, budget/2)
	tail := max(textcap.Suffix(s, budget-budget/2), head)
	return s[:head] + fmt.Sprintf(" … %d bytes cut … ", tail-head) + s[tail:]
}
