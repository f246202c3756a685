// Package runner runs the external commands Litterbox depends on (docker and
// git) and logs every invocation, so a user can see, and paste, exactly what
// ran. Every command has a time limit by its Kind, so a hung engine is an
// error that names the command, not a hang.
package runner

import (
	"io"
	"strings"
)

// Kind is what sort of command a Cmd is. It picks the time limit Exec gives
// the command on the host (see Limits), so that a hung engine, or a hung ssh
// to a remote one, ends in a TimeoutError instead of a hang.
type Kind uint8

const (
	// Work is the default: git plumbing, a scan of /src, a file operation,
	// a copy of the tree. Its time grows with the repository, so its limit
	// is generous.
	Work Kind = iota
	// Control is a docker call that a healthy engine answers at once: ps,
	// inspect, pause, rm, network.
	Control
	// Stream runs as long as its caller lets it: an interactive shell, bash
	// with its own timeout, a user's setup command, a diff read through a
	// pager. It has no limit of its own; the caller's context bounds it.
	Stream
)

func (k Kind) String() string {
	switch k {
	case Control:
		return "control"
	case Stream:
		return "stream"
	}
	return "work"
}

// Cmd is one external command: its argv, working directory, extra environment
// and streams. Build it with New and the chainable helpers; argv is never a
// shell string.
type Cmd struct {
	Args   []string
	Dir    string
	Env    []string // appended to the process environment
	Stdin  io.Reader
	Stdout io.Writer // when nil, stdout is captured into Result.Stdout
	Stderr io.Writer // when nil, stderr is captured into Result.Stderr
	Kind   Kind      // sets the time limit; Work unless told
}

// New starts a command with its program name and first arguments.
func New(name string, args ...string) *Cmd {
	return &Cmd{Args: append([]string{name}, args...)}
}

// Arg appends arguments.
func (c *Cmd) Arg(args ...string) *Cmd {
	c.Args = append(c.Args, args...)
	return c
}

// ArgIf appends arguments only when cond holds.
func (c *Cmd) ArgIf(cond bool, args ...string) *Cmd {
	if cond {
		c.Args = append(c.Args, args...)
	}
	return c
}

// As sets the command's Kind, and so its time limit.
func (c *Cmd) As(k Kind) *Cmd {
	c.Kind = k
	return c
}

// InDir sets the working directory.
func (c *Cmd) InDir(dir string) *Cmd {
	c.Dir = dir
	return c
}

// WithEnv adds KEY=VALUE pairs to the environment.
func (c *Cmd) WithEnv(kv ...string) *Cmd {
	c.Env = append(c.Env, kv...)
	return c
}

// WithStdin feeds r to the command's standard input.
func (c *Cmd) WithStdin(r io.Reader) *Cmd {
	c.Stdin = r
	return c
}

// WithStdout streams standard output to w instead of capturing it.
func (c *Cmd) WithStdout(w io.Writer) *Cmd {
	c.Stdout = w
	return c
}

// WithStderr streams standard error to w instead of capturing it.
func (c *Cmd) WithStderr(w io.Writer) *Cmd {
	c.Stderr = w
	return c
}

// String is the argv shell-quoted, ready to paste into a terminal.
func (c *Cmd) String() string {
	return Quote(c.Args...)
}

// Quote joins words into one POSIX shell line, quoting where needed.
func Quote(words ...string) string {
	parts := make([]string, len(words))
	for i, w := range words {
		parts[i] = quoteWord(w)
	}
	return strings.Join(parts, " ")
}

func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
