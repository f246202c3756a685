package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/termtext"
)

// MaxMessageBytes is the longest milestone message.
const MaxMessageBytes = 64 << 10

// milestoneTrailer marks milestone commits, so the next milestone knows where
// to start squashing.
const milestoneTrailer = "Litterbox-Milestone: true"

// MilestoneResult says what a milestone squashed.
type MilestoneResult struct {
	Squashed int    `json:"squashed"` // snapshot commits folded into one
	Commit   string `json:"commit,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Milestone first snapshots pending changes, then squashes the commits since
// the previous milestone (or since the base) into one commit with message.
// The tree does not change, only the history: the branch stays linear and
// every milestone is one reviewable commit.
func (s *Service) Milestone(ctx context.Context, h *Handle, message string) (*MilestoneResult, error) {
	message = strings.TrimSpace(message)
	if message == "" {
		return nil, newError(ErrInvalidName, "a milestone needs a message that says what the work so far does")
	}
	if err := checkLen("message", message, MaxMessageBytes); err != nil {
		return nil, err
	}
	// The agent's words reach the user's terminal through git log as they
	// are stored: control characters are stored escaped.
	message = termtext.EscapeText(message)
	if _, err := s.Snapshot(ctx, h, "milestone: pending changes"); err != nil {
		return nil, err
	}
	unlock, err := lockState(ctx, h.Repo.stateDir(h.Slug))
	if err != nil {
		return nil, err
	}
	defer unlock()

	g := h.Repo.Git
	ref := BranchRef(h.Slug)
	tip, ok, err := g.ResolveRef(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound(h.Slug)
	}
	base := h.Base
	if base == "" {
		var found bool
		if base, found, err = g.CommonAncestor(ctx, "HEAD", tip); err != nil {
			return nil, err
		} else if !found {
			return nil, fmt.Errorf("the branch %s%s shares no history with HEAD", BranchPrefix, h.Slug)
		}
	}
	commits, err := g.Messages(ctx, base, tip)
	if err != nil {
		return nil, err
	}
	parent, n := base, 0
	for _, c := range commits {
		if strings.Contains(c.Message, milestoneTrailer) {
			parent = c.ID
			break
		}
		n++
	}
	if n == 0 {
		return &MilestoneResult{Note: "nothing to squash: no commits since the last milestone"}, nil
	}
	id, err := g.CommitTree(ctx, tip+"^{tree}", parent, message+"\n\n"+milestoneTrailer, "Litterbox", "litterbox@localhost")
	if err != nil {
		return nil, err
	}
	if err := g.UpdateRef(ctx, ref, id, tip, "litterbox: milestone"); err != nil {
		return nil, err
	}
	return &MilestoneResult{Squashed: n, Commit: id}, nil
}
