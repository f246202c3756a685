package api

import (
	"io"
)

// ExecOptions describe a command to run in a sandbox for a human: streams are
// passed through and the exit code is returned.
type ExecOptions struct {
	Cmd         []string
	TTY         bool
	Interactive bool // attach the caller's stdin
	Stdin       io.Reader
	Stdout      io.Writer
	Stderr      io.Writer
	// Env is added to the sandbox's environment for this command.
	Env []string
}
