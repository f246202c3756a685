package sandbox

import (
	"bytes"
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/provider"
)

// On an engine whose pause ends the sandbox (provider.PauseEnder: a
// Kubernetes pod cannot be frozen, so pause deletes it and resume makes a
// new one), pause first snapshots /src to the branch, and resume copies the
// branch back into the new sandbox's /src, with its services' definitions.
// What the branch does not hold is gone across a pause there: the
// processes, /tmp, and files the repository ignores.

// pauseEnds reports whether pausing on s's engine ends the sandbox.
func (s *Service) pauseEnds() bool {
	pe, ok := s.Provider.(provider.PauseEnder)
	return ok && pe.PauseEnds()
}

// ownerRepo is the repository of c: r, or, when r is nil (every
// repository), the one at c's repo label, provided it owns c.
func (s *Service) ownerRepo(ctx context.Context, r *Repo, c provider.Sandbox) (*Repo, error) {
	if r != nil {
		return r, nil
	}
	r, err := s.OpenRepo(ctx, c.Labels[LabelRepo])
	if err != nil || !r.owns(c.Labels) {
		return nil, fmt.Errorf("sandbox %q: its repository %s is not where its labels say (%v): pause or resume it from its repository", c.Labels[LabelSlug], c.Labels[LabelRepo], err)
	}
	return r, nil
}

// snapshotBeforePause commits what changed in c's /src to its branch, before
// its pause ends it.
func (s *Service) snapshotBeforePause(ctx context.Context, r *Repo, c provider.Sandbox) error {
	r, err := s.ownerRepo(ctx, r, c)
	if err != nil {
		return err
	}
	if _, err := s.Snapshot(ctx, handleOf(r, c), "pause: the work so far (the engine ends the sandbox while paused)"); err != nil {
		return fmt.Errorf("snapshot before pausing (nothing was paused): %w", err)
	}
	return nil
}

// refillAfterResume copies c's branch into the /src of its new sandbox,
// records the scan stamp, and installs its services' definitions again.
func (s *Service) refillAfterResume(ctx context.Context, r *Repo, c provider.Sandbox) error {
	r, err := s.ownerRepo(ctx, r, c)
	if err != nil {
		return err
	}
	h := handleOf(r, c)
	tip, ok, err := r.Git.ResolveRef(ctx, BranchRef(h.Slug))
	if err != nil || !ok {
		return fmt.Errorf("resume: read branch %s%s (%v): the sandbox runs with an empty %s; delete it and create it again from the branch", BranchPrefix, h.Slug, err, Workdir)
	}
	var so, se bytes.Buffer
	if err := s.copyAndSetup(ctx, s.startArchive(ctx, r, tip), c.Ref, h.Image, nil, &so, &se); err != nil {
		return fmt.Errorf("resume: copy branch %s%s into %s: %w", BranchPrefix, h.Slug, Workdir, err)
	}
	if err := writeSince(r, h.Slug, takeStamp(&so)); err != nil {
		s.Log.Warn("could not record the scan stamp; the next snapshot will scan all of /src", "err", err)
	}
	if _, err := s.installSaved(ctx, h); err != nil {
		s.Log.Warn("could not install the services again", "sandbox", h.Slug, "err", err)
	}
	return nil
}
