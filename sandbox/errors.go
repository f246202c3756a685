package sandbox

import (
	"errors"
	"fmt"

	"github.com/litterbox-dev/litterbox/docker"
)

// Outcomes callers branch on. The CLI maps them to exit codes in main and the
// MCP server to tool errors; the messages that wrap them say what to do next.
var (
	// ErrInvalidName is a name whose slug is not 1-63 characters of [a-z0-9-].
	ErrInvalidName = errors.New("invalid sandbox name")
	// ErrExists is a create whose name is taken (AC1.5).
	ErrExists = errors.New("sandbox already exists")
	// ErrNotFound is a name with neither container nor branch.
	ErrNotFound = errors.New("sandbox not found")
	// ErrPaused is a command for a paused sandbox.
	ErrPaused = errors.New("sandbox is paused")
	// ErrStopped is a command for a sandbox whose container is not running.
	ErrStopped = errors.New("sandbox is stopped")
	// ErrUnmerged is a delete that would throw away commits.
	ErrUnmerged = errors.New("sandbox has unmerged work")
	// ErrSetupFailed is a sandbox whose startup command failed; it exists,
	// marked failed-setup.
	ErrSetupFailed = errors.New("sandbox setup failed")
	// ErrPartialDelete is a delete that left some resources behind.
	ErrPartialDelete = errors.New("delete was partial")
	// ErrConflict is an apply or merge that would conflict or overwrite.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable is docker missing or not answering.
	ErrUnavailable = docker.ErrUnavailable
)

// Outcomes of the file operations, for callers that branch on them. The
// errors' messages say what to do next.
var (
	// ErrBadPath is a path that cannot be used (NUL, climbs out of /src).
	ErrBadPath = errors.New("bad path")
	// ErrHidden is a hidden path, or a symlink that resolves to one.
	ErrHidden = errors.New("hidden path")
	// ErrNoFile is a path that does not exist.
	ErrNoFile = errors.New("no such file or directory")
	// ErrIsDir is a file operation on a directory.
	ErrIsDir = errors.New("is a directory")
	// ErrNotDir is a directory operation on something else.
	ErrNotDir = errors.New("not a directory")
	// ErrBinary is a read of a file that is not UTF-8 text.
	ErrBinary = errors.New("binary file")
	// ErrTooLarge is a read of a file over MaxReadBytes.
	ErrTooLarge = errors.New("file too large")
	// ErrPatch is a diff that does not apply; nothing was changed.
	ErrPatch = errors.New("patch does not apply")
	// ErrBadPattern is a grep or glob pattern that does not parse.
	ErrBadPattern = errors.New("bad pattern")
)

// Error is an outcome with the message a user should read. errors.Is matches
// its Kind, so callers branch on the sentinel and print the message.
type Error struct {
	Kind error
	Msg  string
	// Agent, when set, is the message for an agent over MCP, where the
	// human's next step (a litterbox command) is not available.
	Agent string
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, e.Kind) hold.
func (e *Error) Is(target error) bool { return target == e.Kind }

func newError(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
