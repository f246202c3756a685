package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

func stateRepo(t *testing.T) *api.Repo {
	dir := t.TempDir()
	return &api.Repo{Git: &git.Repo{Root: dir, CommonDir: filepath.Join(dir, ".git")}, Slug: "r"}
}

// TestLockCreate: one holder at a time; a second one gives up with
// ErrIncomplete; a holder that removes the state directory (delete, a
// rolled-back create) hands the lock to the next one, never to two.
func TestLockCreate(t *testing.T) {
	r := stateRepo(t)
	ctx := context.Background()
	unlock, err := LockCreate(ctx, r, "x")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := LockCreate(ctx, r, "x"); !errors.Is(err, api.ErrIncomplete) {
		t.Errorf("second lockCreate = %v; want ErrIncomplete", err)
	}
	if time.Since(start) < CreateLockWait {
		t.Error("the second lockCreate did not wait for the first")
	}
	got := make(chan func(), 1)
	go func() {
		u, err := LockCreate(ctx, r, "x")
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(50 * time.Millisecond)
	if err := Remove(r, "x"); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	if _, err := os.Stat(File(r.Git.CommonDir, "x", CreateLockFile)); err != nil {
		t.Errorf("the new holder holds a removed file: %v", err)
	}
	if !BeingCreated(r.Git.CommonDir, "x") {
		t.Error("beingCreated = false while a lock is held")
	}
	u()
	if BeingCreated(r.Git.CommonDir, "x") {
		t.Error("beingCreated = true after the lock was released")
	}
}
