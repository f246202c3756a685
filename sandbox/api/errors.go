package api

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Outcomes callers branch on. The CLI maps them to exit codes in main and the
// MCP server to tool errors; the messages that wrap them say what to do next.
var (
	// ErrInvalidName is a name whose slug is not 1-63 characters of [a-z0-9-].
	ErrInvalidName = errors.New("invalid sandbox name")
	// ErrExists is a create whose name is taken.
	ErrExists = errors.New("sandbox already exists")
	// ErrNotFound is a name with neither container nor branch.
	ErrNotFound = errors.New("sandbox not found")
	// ErrPaused is a command for a paused sandbox.
	ErrPaused = errors.New("sandbox is paused")
	// ErrStopped is a command for a sandbox whose container is not running.
	ErrStopped = errors.New("sandbox is stopped")
	// ErrIncomplete is a command for a sandbox whose create was cut short
	// (or is still running): its copy of the repository is not known to be
	// complete, so it cannot be used.
	ErrIncomplete = errors.New("sandbox is incomplete")
	// ErrUnmerged is a delete that would throw away commits.
	ErrUnmerged = errors.New("sandbox has unmerged work")
	// ErrWouldLose is a pause refused because it would end a sandbox
	// (Kubernetes) holding files its branch does not: nothing was paused.
	ErrWouldLose = errors.New("pause would lose work")
	// ErrSetupFailed is a sandbox whose startup command failed; it exists,
	// marked failed-setup.
	ErrSetupFailed = errors.New("sandbox setup failed")
	// ErrPartialDelete is a delete that left some resources behind.
	ErrPartialDelete = errors.New("delete was partial")
	// ErrConflict is an apply or merge that would conflict or overwrite.
	ErrConflict = errors.New("conflict")
	// ErrMoved is an apply or merge of the commit a review showed (--at)
	// refused because the sandbox's branch is no longer there: it moved
	// since, or while merging. Nothing was changed.
	ErrMoved = errors.New("branch moved since it was reviewed")
	// ErrBadRef is a base ref or rewind target that names no usable
	// commit.
	ErrBadRef = errors.New("bad ref")
	// ErrUnavailable is the engine unreachable: its CLI missing, the
	// engine down, or not answering.
	ErrUnavailable = provider.ErrUnreachable
	// ErrUnisolated is a create refused because the engine lets sandboxes
	// reach each other (isolation.go) and the user did not allow it.
	ErrUnisolated = errors.New("engine does not isolate sandboxes")
	// ErrPortRange is a create refused because no host port of the
	// configured range ([ports] range) is free. Nothing was made.
	ErrPortRange = errors.New("host port range is full")
	// ErrImage is a sandbox image litterbox cannot use (a platform without
	// a scanner, a guest contract it breaks). Nothing was created.
	ErrImage = errors.New("unusable sandbox image")
	// ErrNoRuntime is a runtime (gVisor...) the engine does not offer.
	// Nothing was created.
	ErrNoRuntime = provider.ErrNoRuntime
	// ErrConfig is a configuration that cannot be used. Nothing was
	// created.
	ErrConfig = config.ErrInvalid
)

// Quote quotes s for an error message, at most quoteMax bytes of it:
// an error never pastes a whole argument back.
func Quote(s string) string {
	const quoteMax = 200
	if len(s) <= quoteMax {
		return fmt.Sprintf("%q", s)
	}
	cut := quoteMax
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes in all)", s[:cut], len(s))
}

// Outcomes of the file operations, for callers that branch on them. The
// errors' messages say what to do next.
var (
	// ErrBadPath is a path that cannot be used (NUL, climbs out of /src).
	ErrBadPath = errors.New("bad path")
	// ErrBadArgument is an argument out of its range or form: an empty
	// command, a timeout over its limit, a negative offset, a pool size
	// past the limit. The CLI exits with its usage code.
	ErrBadArgument = errors.New("bad argument")
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
	// ErrTooLong is an argument over its limit (a path, a pattern, a
	// message, content).
	ErrTooLong = errors.New("argument too long")
	// ErrBadArchive is a tar stream cp refuses: unreadable, or with an
	// entry that could write outside its destination.
	ErrBadArchive = errors.New("bad archive")
	// ErrTooSlow is a file operation stopped at FileOpTimeout.
	ErrTooSlow = errors.New("operation too slow")
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

// InvalidNameError is a name whose slug is empty or too long.
type InvalidNameError struct {
	Name string
	Slug string
}

func (e *Error) Error() string { return e.Msg }

// Is makes errors.Is(err, e.Kind) hold.
func (e *Error) Is(target error) bool { return target == e.Kind }

func (e *InvalidNameError) Error() string {
	why := "it has no letters or digits"
	if e.Slug != "" {
		why = fmt.Sprintf("its slug is %d characters long", len(e.Slug))
	}
	return fmt.Sprintf("Invalid sandbox name %s (%s). Slugified names must be 1-63 characters and contain only [a-z0-9-].", Quote(e.Name), why)
}

// Is makes errors.Is(err, ErrInvalidName) hold.
func (e *InvalidNameError) Is(target error) bool { return target == ErrInvalidName }
