package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
)

func stateRepo(t *testing.T) *Repo {
	dir := t.TempDir()
	return &Repo{Git: &git.Repo{Root: dir, CommonDir: filepath.Join(dir, ".git")}, Slug: "r"}
}

// TestStatus: what list says for each combination of what a sandbox left.
// A create cut short is incomplete whatever parts it left, and nothing
// without the ready mark passes for usable.
func TestStatus(t *testing.T) {
	r := stateRepo(t)
	gd := r.Git.CommonDir
	const id = "77d5bf6074cbb925caf372f6f064efd0ee017a39aa7eeccf4856d84c6f41a7ca"
	if err := writeJournal(r, "j", createJournal{Base: "abc"}); err != nil {
		t.Fatal(err)
	}
	if err := markReady(r, "ok", id, "c-ok"); err != nil {
		t.Fatal(err)
	}
	if err := markReady(r, "fs", id, "c-fs"); err != nil {
		t.Fatal(err)
	}
	if err := markSetupFailed(r, "fs", "boom"); err != nil {
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
	unlock, err := lockCreate(context.Background(), r, "j")
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
	if !isReady(gd, "ok", id) || isReady(gd, "ok", id[:12]) || isReady(gd, "j", id) {
		t.Error("isReady must match the full id of the marked container only")
	}
}

// TestLockCreate: one holder at a time; a second one gives up with
// ErrIncomplete; a holder that removes the state directory (delete, a
// rolled-back create) hands the lock to the next one, never to two.
func TestLockCreate(t *testing.T) {
	r := stateRepo(t)
	ctx := context.Background()
	unlock, err := lockCreate(ctx, r, "x")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := lockCreate(ctx, r, "x"); !errors.Is(err, ErrIncomplete) {
		t.Errorf("second lockCreate = %v; want ErrIncomplete", err)
	}
	if time.Since(start) < createLockWait {
		t.Error("the second lockCreate did not wait for the first")
	}
	got := make(chan func(), 1)
	go func() {
		u, err := lockCreate(ctx, r, "x")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(50 * time.Millisecond)
	if err := removeState(r, "x"); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	if _, err := os.Stat(stateFile(r.Git.CommonDir, "x", createLockFile)); err != nil {
		t.Errorf("the new holder holds a removed file: %v", err)
	}
	if !beingCreated(r.Git.CommonDir, "x") {
		t.Error("beingCreated = false while a lock is held")
	}
	u()
	if beingCreated(r.Git.CommonDir, "x") {
		t.Error("beingCreated = true after the lock was released")
	}
}
