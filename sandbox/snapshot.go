package sandbox

import (
	"context"
	"errors"
)

// SnapshotResult says what a snapshot committed to the sandbox's branch.
type SnapshotResult struct {
	Committed bool      `json:"committed"`
	Commit    string    `json:"commit,omitempty"`
	Skipped   []Skipped `json:"skipped,omitempty"` // files left out, never silently
}

// Skipped is a file a snapshot could not commit, with the reason.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to litterbox/<slug>, with message as the commit message, and only
// when something changed. Work in progress: see issue 4.
func (s *Service) Snapshot(ctx context.Context, h *Handle, message string) (*SnapshotResult, error) {
	return nil, errors.New("snapshots are not implemented yet")
}
