package provider

import (
	"errors"
	"fmt"
)

// Outcomes the service branches on. A provider translates its engine's
// failures into these once; the messages that wrap them keep the engine's
// own words for the user.
var (
	// ErrNotFound: the sandbox (its container) does not exist.
	ErrNotFound = errors.New("sandbox not found on the engine")
	// ErrConflict: Create's name is taken by something the spec did not
	// make.
	ErrConflict = errors.New("name taken on the engine")
	// ErrUnreachable: the engine cannot be used: its CLI is missing, it is
	// down, the endpoint is wrong or refuses us, or it did not answer in
	// time (then the error also matches runner.ErrTimeout).
	ErrUnreachable = errors.New("engine unreachable")
	// ErrPaused: the sandbox is paused, so it cannot run commands.
	ErrPaused = errors.New("sandbox is paused")
	// ErrStopped: the sandbox exists but does not run.
	ErrStopped = errors.New("sandbox is stopped")
	// ErrNoImage: the engine does not hold the image.
	ErrNoImage = errors.New("image not on the engine")
	// ErrNoHostPort: no port of the spec's HostPorts range is free.
	ErrNoHostPort = errors.New("no free host port in the range")
	// ErrNoRuntime: the engine does not offer the runtime a Spec names.
	ErrNoRuntime = errors.New("runtime not offered by the engine")
	// ErrQuota: the engine refused to make something over a quota (a
	// Kubernetes namespace's ResourceQuota); the message names it.
	ErrQuota = errors.New("quota of the engine used up")
	// ErrUnsupported: the engine cannot do what was asked.
	ErrUnsupported = errors.New("not supported by the engine")
	// ErrLeftBehind: a Create failed and could not remove all it had made;
	// the error names what is left. List finds it by its labels.
	ErrLeftBehind = errors.New("failed create left objects behind")
)

// UnreachableError says why an engine cannot be used and what to do. It
// names the endpoint and keeps the engine's (or the ssh client's) own
// message.
type UnreachableError struct {
	Endpoint string
	Reason   string
	Err      error // the failure behind it, if any (a *runner.TimeoutError, a *runner.ExitError)
}

func (e *UnreachableError) Error() string { return e.Reason }

// Unwrap returns the failure behind e.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) hold.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Errorf makes an error that matches kind (errors.Is) and reads as format
// says; a %w in format wraps the engine's own error too.
func Errorf(kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Msg: err.Error(), Err: err}
}

// Error is an outcome above (Kind) in the engine's own words (Msg), with the
// failure behind it (Err, often the command's *runner.ExitError).
type Error struct {
	Kind error
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the failure behind e.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, e.Kind) hold.
func (e *Error) Is(target error) bool { return target == e.Kind }
