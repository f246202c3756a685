package inventory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

func stateRepo(t *testing.T) *api.Repo {
	dir := t.TempDir()
	return &api.Repo{Git: &git.Repo{Root: dir, CommonDir: filepath.Join(dir, ".git")}, Slug: "r"}
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
		want      api.Status
	}{
		{"ok", true, "running", true, true, api.StatusActive},
		{"ok", true, "paused", true, true, api.StatusPaused},
		{"ok", true, "exited", true, true, api.StatusStopped},
		{"fs", true, "running", true, true, api.StatusFailedSetup},
		{"ok", true, "running", true, false, api.StatusNoBranch},
		{"ok", false, "", false, true, api.StatusNoContainer},
		{"ok", false, "", false, false, api.StatusNoSandbox},
		// no ready mark: incomplete, with or without a journal, once there
		// is a branch; a container alone is an orphan
		{"j", true, "running", false, true, api.StatusIncomplete},
		{"x", true, "running", false, true, api.StatusIncomplete},
		{"j", true, "created", false, false, api.StatusIncomplete},
		{"x", true, "running", false, false, api.StatusNoBranch},
		{"j", false, "", false, true, api.StatusIncomplete},
		{"j", false, "", false, false, api.StatusIncomplete},
	}
	for _, tc := range tests {
		if got := status(readRow(gd, tc.slug), tc.container, tc.state, tc.ready, tc.branch); got != tc.want {
			t.Errorf("status(%+v) = %s, want %s", tc, got, tc.want)
		}
	}
	// While a create holds the lock, it is creating.
	unlock, err := state.LockCreate(context.Background(), r, "j", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := status(readRow(gd, "j"), true, "running", false, true); got != api.StatusCreating {
		t.Errorf("status while creating = %s", got)
	}
	unlock()
	if got := status(readRow(gd, "j"), true, "running", false, true); got != api.StatusIncomplete {
		t.Errorf("status after the create let go = %s", got)
	}
	if !state.IsReady(gd, "ok", id) || state.IsReady(gd, "ok", id[:12]) || state.IsReady(gd, "j", id) {
		t.Error("isReady must match the full id of the marked container only")
	}
}
