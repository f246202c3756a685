package state

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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
	unlock, err := LockCreate(ctx, r, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deleting := func() { t.Error("a create waiting for another create was told of a delete ending") }
	if _, err := LockCreate(ctx, r, "x", deleting); !errors.Is(err, api.ErrIncomplete) {
		t.Errorf("second lockCreate = %v; want ErrIncomplete", err)
	}
	if time.Since(start) < CreateLockWait {
		t.Error("the second lockCreate did not wait for the first")
	}
	got := make(chan func(), 1)
	go func() {
		u, err := LockCreate(ctx, r, "x", nil)
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

// TestLockCreateTellsOfADeleteEnding: a create of a name whose delete is
// ending in another process (the mark, the lock held) is told so once, as
// it starts waiting rather than when a create would have given up, and
// takes the lock once that process let it go, even past CreateLockWait
// after the mark went.
func TestLockCreateTellsOfADeleteEnding(t *testing.T) {
	r := stateRepo(t)
	ctx := context.Background()
	held, err := TakeCreate(ctx, r, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := MarkDeleting(r, "x", "c1"); err != nil {
		t.Fatal(err)
	}
	told := make(chan struct{}, 2)
	got := make(chan error, 1)
	go func() {
		unlock, err := LockCreate(ctx, r, "x", func() { told <- struct{}{} })
		if err == nil {
			unlock()
		}
		got <- err
	}()
	select {
	case <-told:
	case <-time.After(CreateLockWait):
		t.Error("not told of the delete before a create of another one would have given up")
	}
	// Its mark goes an instant before its lock does (Remove): the create,
	// past CreateLockWait then, still waits for the delete.
	UnmarkDeleting(r.Git.CommonDir, "x")
	time.Sleep(CreateLockWait)
	if err := Remove(r, "x"); err != nil {
		t.Fatal(err)
	}
	held.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("lockCreate after the delete ended = %v", err)
	}
	if n := len(told); n != 0 {
		t.Errorf("told %d more times; want once", n)
	}
}

// TestAdoptedLockGoesWithItsHolder: a create lock handed to another
// process (Adopt: its descriptor is not closed on exec there) is not handed
// on to the programs that process runs (docker, or a helper of the engine's
// that outlives it): once its holder dies, the lock is free, and a create
// of the name does not wait for a program that never lets go.
func TestAdoptedLockGoesWithItsHolder(t *testing.T) {
	r := stateRepo(t)
	l, err := TakeCreate(context.Background(), r, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	// As exec.Cmd's ExtraFiles hands it on: a descriptor with no
	// close-on-exec.
	fd, err := syscall.Dup(int(l.File().Fd()))
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	a := Adopt(os.NewFile(uintptr(fd), "create.lock"))
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	a.Release() // its holder dies, unlocking nothing
	if BeingCreated(r.Git.CommonDir, "x") {
		t.Error("the create lock is held by a program its holder ran, after the holder let go")
	}
}
