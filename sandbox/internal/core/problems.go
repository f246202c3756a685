package core

import (
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// The errors every concern returns about a sandbox's state, each saying
// what to do next.

// NotFoundError is a sandbox with neither container nor branch.
func NotFoundError(slug string) error {
	return &api.Error{Kind: api.ErrNotFound,
		Msg:   fmt.Sprintf("Sandbox '%s' not found. See `litterbox list` for the sandboxes of this repository.", slug),
		Agent: fmt.Sprintf("Sandbox '%s' not found in this repository. Check the name (the one you gave sandbox-create), or create it with sandbox-create.", slug)}
}

// PausedError is a command for a paused sandbox.
func PausedError(slug string) error {
	return NewError(api.ErrPaused, "Sandbox '%s' is paused: resume it with `litterbox resume %s`.", slug, slug)
}

// StoppedError is a command for a sandbox whose container exited.
func StoppedError(slug string) error {
	return &api.Error{Kind: api.ErrStopped,
		Msg: fmt.Sprintf("Sandbox '%s' is stopped: its container exited (an engine restart stops them), and the copy in /src, which lives in memory, went with it; its branch %s%s keeps the committed work. `litterbox resume %s` starts it again and fills /src from the branch (on Docker, Podman, ssh and VM engines); `litterbox create --from-branch %s` recreates it.", slug, api.BranchPrefix, slug, slug, slug),
		// Resume fetches the sandbox's secrets again and fills /src anew:
		// the user's to decide, as for a paused sandbox.
		Agent: fmt.Sprintf("Sandbox '%s' is stopped (its engine restarted, or it was stopped): its committed work is on its branch. You cannot start it yourself: ask the user to run `litterbox resume %s`, which starts it again with /src filled from the branch.", slug, slug)}
}

// NoContainerError is a command for a sandbox that has only its branch.
func NoContainerError(slug string) error {
	return NewError(api.ErrStopped, "Sandbox '%s' has no container, only its branch %s%s. Recreate its container from the branch with `litterbox create --from-branch %s`, or delete it with `litterbox delete %s`.", slug, api.BranchPrefix, slug, slug, slug)
}

// ExistsError is a create of a name that is taken, for the reason why.
func ExistsError(slug, why string) error {
	return &api.Error{Kind: api.ErrExists,
		Msg:   fmt.Sprintf("Sandbox '%s' already exists (%s). Please choose a different name, or remove it with `litterbox delete %s`.", slug, why, slug),
		Agent: fmt.Sprintf("Sandbox '%s' already exists (%s). Please choose a different name; or, if it is the one you created earlier, keep working in it with sandbox=%q.", slug, why, slug)}
}

// Short is a commit or container id cut to 12 characters, for messages.
func Short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// CapText trims s and cuts it to a size an error message can quote.
func CapText(s string) string {
	const max = 2000
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max] + fmt.Sprintf(" … (%d more bytes)", len(s)-max)
	}
	return s
}

// ErrText is the failed command's own message when there is one, cut to a
// size an error can quote.
func ErrText(err error) string {
	if s := strings.TrimSpace(runner.Stderr(err)); s != "" {
		return CapText(s)
	}
	return CapText(err.Error())
}
