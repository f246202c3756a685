package api

import (
	"time"
)

// Limits of Bash.
const (
	// MaxBashTimeout is the longest timeout allowed.
	MaxBashTimeout = time.Hour
	// MaxCommandBytes is the longest command.
	MaxCommandBytes = 1 << 20
)

// BashOptions tune Bash.
type BashOptions struct {
	Workdir string        // absolute or relative to /src; default /src
	Timeout time.Duration // default DefaultRunTimeout
	Message string        // snapshot commit message
	// OutputCap is how much output the result shows, both streams
	// together, as JSON bytes; the whole of a stream cut is kept in a file
	// under OutputDir. 0 means DefaultOutputCap.
	OutputCap int
}

// BashResult is what a command did. A non-zero exit is a result, not an
// error.
type BashResult struct {
	RunResult
	Workdir    string `json:"workdir"`
	DurationMs int64  `json:"durationMs"`
	// RefusedHosts are the connections the sandbox's gateway refused
	// during the command, each "host:port (why)": the agent learns why a
	// connection failed, and that only the user can allow it.
	RefusedHosts []string `json:"refusedHosts,omitempty"`
}

// CopyResult says what a copy did.
type CopyResult struct {
	// Path is where the copy landed: in the sandbox (as DisplayPath shows
	// it) for a copy in, on the host for a copy out ("-" for stdout).
	Path    string         `json:"path"`
	Entries int            `json:"entries"`
	Bytes   int64          `json:"bytes,omitempty"`
	Skipped []SkippedEntry `json:"skipped,omitempty"`
}

// Limits of the file operations.
// Limits of read, write and patch.
const (
	// MaxReadBytes is the largest file read returns.
	MaxReadBytes = 16 << 20
	// MaxWriteBytes is the most write and patch put in a file.
	MaxWriteBytes = MaxReadBytes
)

// ReadOptions select lines of a file: Offset is 0-based, Limit 0 means all.
type ReadOptions struct {
	Offset int
	Limit  int
}

// ReadResult is a slice of a text file.
type ReadResult struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	Offset     int    `json:"offset"`
	Lines      int    `json:"lines"`      // lines returned
	TotalLines int    `json:"totalLines"` // lines in the file
	More       bool   `json:"more"`       // lines remain after this slice
}

// WriteResult says what a write did.
type WriteResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"` // the file did not exist before
}

// PatchResult says what a patch did.
type PatchResult struct {
	Path   string `json:"path"`
	Action string `json:"action"` // created, modified or deleted
	Hunks  int    `json:"hunks"`
}

// LsResult lists a folder.
type LsResult struct {
	Path      string   `json:"path"`
	Entries   []string `json:"entries"` // relative to Path; folders end in "/"
	Truncated bool     `json:"truncated"`
}

// GlobResult is the files matching a pattern.
type GlobResult struct {
	Pattern   string   `json:"pattern"`
	Matches   []string `json:"matches"`
	Truncated bool     `json:"truncated"`
}

// GrepResult is the lines matching a pattern.
type GrepResult struct {
	Pattern   string   `json:"pattern"`
	Matches   []string `json:"matches"` // path:line:text
	Truncated bool     `json:"truncated"`
}

// SkippedEntry is an archive entry cp left out, with the reason.
type SkippedEntry struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}
