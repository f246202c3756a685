package api

import (
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// MaxMessageBytes is the longest milestone message.
const MaxMessageBytes = 64 << 10

// MilestoneResult says what a milestone squashed.
type MilestoneResult struct {
	Squashed int    `json:"squashed"` // snapshot commits folded into one
	Commit   string `json:"commit,omitempty"`
	Note     string `json:"note,omitempty"`
}

// DefaultRecordLimit is a sandbox's record limit without [limits] record:
// far above what source work records (the benchmark's largest honest case
// writes 912 MiB of random files in one sandbox), and a disk cost a
// runaway agent cannot multiply past it.
const DefaultRecordLimit = 1 << 30

// RewindResult is the result of Rewind.
type RewindResult struct {
	Name string `json:"name"`
	// To is the commit whose files /src now holds.
	To string `json:"to"`
	// Commit is the new commit that records the rewind; "" when /src
	// already held To's files (Unchanged).
	Commit    string `json:"commit,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
	// Restarted are the services that were running and were restarted.
	Restarted []string `json:"restarted,omitempty"`
}

// RunResult is what the command did.
type RunResult = wire.RunResult

// Defaults of RunSpec.
const (
	DefaultRunTimeout = 2 * time.Minute
	DefaultOutputCap  = 1 << 20
)

// DefaultMaxFileSize is the largest file a snapshot commits; larger ones are
// skipped and named (LITTERBOX_SNAPSHOT_MAX_FILE_SIZE overrides it, in bytes).
const DefaultMaxFileSize = 50 << 20

// SnapshotResult says what a snapshot committed to the sandbox's branch.
type SnapshotResult struct {
	Committed bool      `json:"committed"`
	Commit    string    `json:"commit,omitempty"`
	Skipped   []Skipped `json:"skipped,omitempty"` // files left out, never silently
	// Ms is what the snapshot took, in milliseconds: the scan in the
	// sandbox and the commit (for bash, not the command before them).
	Ms float64 `json:"ms"`
	// Files are the paths the commit changed (a directory removed whole
	// is its own path), for the activity record without a git call.
	Files []string `json:"-"`
	// Torn are files that changed while they were read, and Incomplete
	// says /src kept changing past the follow-up scans: neither is on the
	// branch yet, and the next snapshot takes them (a pause that ends the
	// sandbox has no next one). The recorder's, not a caller's.
	Torn       []string `json:"-"`
	Incomplete bool     `json:"-"`
}

// Skipped is a file a snapshot could not commit, with the reason.
type Skipped = wire.Skipped
