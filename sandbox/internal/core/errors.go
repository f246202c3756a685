package core

import (
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// CheckLen refuses an argument over max bytes, naming it what.
func CheckLen(what, s string, max int) error {
	if len(s) > max {
		return NewError(api.ErrTooLong, "the %s is %d bytes, over the limit of %d.", what, len(s), max)
	}
	return nil
}

// NewError is an *Error of kind with the message format makes.
func NewError(kind error, format string, args ...any) error {
	return &api.Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
