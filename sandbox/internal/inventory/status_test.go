package inventory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

func stateRepo(t *testing.T) *core.Repo {
	dir := t.TempDir()
	return &core.Repo{Git: &git.Repo{Root: dir, CommonDir: filepath.Join(dir, ".git")}, Slug: "r"}
}

// TestStatus: what list says for each combination of what a sandbox left.
// A create cut short is incomplete whatever parts it left, and nothing
// without the ready mark passes for usable.
func TestStatus(t *testing.T) {
	r := stateRepo(t)
	gd := r.Git.CommonDir
	const id = "77d5bf6074cbb925caf372f6f064efd0ee017a39aa7eeccf4856d84c6f41a7ca"
	if err := state.WriteJournal(r, "j", state.Journal{Base: "abc"}); err != nil {
		t.Fatal(err)
	}
	if err := state.MarkReady(r, "ok", id, "c-ok"); err != nil {
		t.Fatal(err)
	}
	if err := state.MarkReady(r, "fs", id, "c-fs"); err != nil {
		t.Fatal(err)
	}
	if err := state.MarkSetupFailed(r, "fs", "boom"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		slug      string
		container bool
		state     provider.State
		ready     bool
		branch    bool
		want      Status
	}{
		{"ok", true, "running", true, true, StatusActive},
		{"ok", true, "paused", true, true, StatusPaused},
		{"ok", true, "exited", true, true, StatusStopped},
		{"fs", true, "running", true, true, StatusFailedSetup},
		{"ok", true, "running", true, false, StatusNoBranch},
		{"ok", false, "", false, true, StatusNoContainer},
		{"ok", false, "", false, false, StatusNoSandbox},
		// no ready mark: incomplete, with or without a journal, once there
		// is a branch; a container alone is an orphan
		{"j", true, "running", false, true, StatusIncomplete},
		{"x", true, "running", false, true, StatusIncomplete},
		{"j", true, "created", false, false, StatusIncomplete},
		{"x", true, "running", false, false, StatusNoBranch},
		{"j", false, "", false, true, StatusIncomplete},
		{"j", false, "", false, false, StatusIncomplete},
	}
	for _, tc := range tests {
		if got := status(gd, tc.slug, tc.container, tc.state, tc.ready, tc.branch); got != tc.want {
			t.Errorf("status(%+v) = %s, want %s", tc, got, tc.want)
		}
	}
	// While a create holds the lock, it is creating.
	unlock, err := state.LockCreate(context.Background(), r, "j")
	if err != nil {
		t.Fatal(err)
	}
	if got := status(gd, "j", true, "running", false, true); got != StatusCreating {
		t.Errorf("status while creating = %s", got)
	}
	unlock()
	if got := status(gd, "j", true, "running", false, true); got != StatusIncomplete {
		t.Errorf("status after the create let go = %s", got)
	}
	if !state.IsReady(gd, "ok", id) || state.IsReady(gd, "ok", id[:12]) || state.IsReady(gd, "j", id) {
		t.Error("isReady must match the full id of the marked container only")
	}
}
