package recording

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// milestoneTrailer marks milestone commits, so the next milestone knows where
// to start squashing. Only litterbox writes it, as the last paragraph of a
// milestone's message; agent text never reaches a last paragraph (a
// snapshot's message is one line, a milestone's is followed by this one),
// so an agent cannot make a boundary by writing it (isMilestone).
const milestoneTrailer = "Litterbox-Milestone: true"

// Milestone first snapshots pending changes, then squashes the commits since
// the previous milestone (or since the base) into one commit with message.
// The tree does not change, only the history: the branch stays linear and
// every milestone is one reviewable commit.
func (rec *Recorder) Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error) {
	message = strings.TrimSpace(message)
	if message == "" {
		return nil, core.NewError(api.ErrInvalidName, "a milestone needs a message that says what the work so far does")
	}
	if err := core.CheckLen("message", message, api.MaxMessageBytes); err != nil {
		return nil, err
	}
	// The agent's words reach the user's terminal through git log as they
	// are stored: control characters are stored escaped. Its lines that
	// read as trailers are indented, so they stay text.
	message = neutralizeTrailers(termtext.EscapeText(message))
	if _, err := rec.Snapshot(ctx, h, "milestone: pending changes"); err != nil {
		return nil, err
	}
	unlock, err := state.Lock(ctx, h.Repo.StateDir(h.Slug))
	if err != nil {
		return nil, err
	}
	defer unlock()

	g := h.Repo.Git
	ref := api.BranchRef(h.Slug)
	tip, ok, err := g.ResolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, core.NotFoundError(h.Slug)
	}
	base := h.Base
	if base == "" {
		var found bool
		if base, found, err = g.CommonAncestor(ctx, "HEAD", tip); err != nil {
			return nil, err
		} else if !found {
			return nil, fmt.Errorf("the branch %s%s shares no history with HEAD", api.BranchPrefix, h.Slug)
		}
	}
	commits, err := g.Messages(ctx, base, tip)
	if err != nil {
		return nil, err
	}
	parent, n := base, 0
	for _, c := range commits {
		if isMilestone(c.Message) {
			parent = c.ID
			break
		}
		n++
	}
	if n == 0 {
		return &api.MilestoneResult{Note: "nothing to squash: no commits since the last milestone"}, nil
	}
	id, err := g.CommitTree(ctx, tip+"^{tree}", parent, message+"\n\n"+milestoneTrailer, "Litterbox", "litterbox@localhost")
	if err != nil {
		return nil, err
	}
	if err := g.UpdateRef(ctx, ref, id, tip, "litterbox: milestone"); err != nil {
		return nil, err
	}
	return &api.MilestoneResult{Squashed: n, Commit: id}, nil
}

// isMilestone reports whether a commit message is a milestone's: its last
// paragraph, which git reads as the trailers and which is never the first
// (the subject), holds milestoneTrailer as a line.
func isMilestone(msg string) bool {
	msg = strings.TrimSpace(msg)
	i := strings.LastIndex(msg, "\n\n")
	if i < 0 {
		return false
	}
	for _, line := range strings.Split(msg[i+2:], "\n") {
		if strings.TrimRight(line, " \t") == milestoneTrailer {
			return true
		}
	}
	return false
}

// trailerLine matches a line git would read as a trailer, "Token: value":
// the token letters, digits and dashes, then optional blanks and the
// separator (git's default trailer.separators).
var trailerLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9-]+[ \t]*:`) })

// neutralizeTrailers indents every line of an agent's message but the
// first (the subject, which git never reads as a trailer) that would read
// as a trailer: git takes an indented line for the continuation of a
// trailer, and a paragraph of them holds none. "Co-authored-by:" or
// "Signed-off-by:" from an agent is text in the milestone, not a claim.
func neutralizeTrailers(msg string) string {
	lines := strings.Split(msg, "\n")
	for i := 1; i < len(lines); i++ {
		if trailerLine().MatchString(lines[i]) {
			lines[i] = "  " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}
