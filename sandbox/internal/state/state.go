// Package state is the layout of a sandbox's host-side state, in
// <common git dir>/litterbox/<slug>/, and the records more than one concern
// reads: the create journal, the ready mark, the create lock, the
// failed-setup mark, the snapshot stamp (since) and the settings a sandbox
// was made with; Lock is the writer lock of a state directory. A concern's
// own files there (the snapshot's record, the services archive) are read
// and written by that concern.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/atomicfile"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// A sandbox's host-side state lives in <common git dir>/litterbox/<slug>/
// (Repo.stateDir). Besides the snapshot's files (since, lock) and the
// services archive, create keeps three files there, so that a create cut
// short at any point (kill -9, a dead engine) is told apart from a usable
// sandbox with cheap reads and no engine call:
//
//	creating     the create journal: written before the first resource is
//	             made, removed once the sandbox is ready. It says which
//	             commit the branch was made at, so a leftover is provably
//	             free of work and can be cleaned up.
//	ready        the id of the container whose copy of the repository is
//	             complete: written last, after the copy was verified. A
//	             container without it is incomplete, whatever the engine says.
//	create.lock  flock'ed by the process creating the sandbox; the kernel
//	             releases it when that process dies, so "being created" and
//	             "interrupted" are told apart without a pid file.
//
// It also records the settings the sandbox was made with (settings.json,
// trust.go), so that a fork is made as its source was.
//
// The files live with the repository (linked worktrees share them) rather
// than in the container: list reads one small file per sandbox instead of
// running an exec in each, and the record survives the container.
const (
	ReadyFile       = "ready"
	JournalFile     = "creating"
	CreateLockFile  = "create.lock"
	SetupFailedFile = "setup-failed"
)

// Journal is what the create journal records.
type Journal struct {
	// Base is the commit the branch was made at (a new sandbox) or the
	// merge base the recreated container is labelled with (FromBranch).
	Base string `json:"base"`
	// FromBranch: a recreate from an existing branch, which holds work and
	// is never removed by a cleanup.
	FromBranch bool      `json:"fromBranch,omitempty"`
	Started    time.Time `json:"started"`
}

// File is the path of one state file of sandbox slug of the repository
// whose common git dir is gitDir. Taking gitDir rather than a Repo lets list
// --all-repos read the state of any repository a label names.
func File(gitDir, slug, name string) string {
	return filepath.Join(gitDir, "litterbox", slug, name)
}

// WriteAtomic replaces path with data, so a reader (or a kill) never sees it
// half written.
func WriteAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}

// MarkReady records that container id (named name) holds a complete copy.
// It is the last thing create writes about the copy, and what every
// operation checks.
func MarkReady(r *api.Repo, slug, id, name string) error {
	return WriteAtomic(File(r.Git.CommonDir, slug, ReadyFile), []byte(id+"\n"+name+"\n"))
}

// ReadyContainer is the id of the container marked ready, or "".
func ReadyContainer(gitDir, slug string) string {
	id, _ := ReadyMark(gitDir, slug)
	return id
}

// ReadyMark is the id and name of the container marked ready ("" when not
// known: a mark written before it held the name).
func ReadyMark(gitDir, slug string) (id, name string) {
	data, err := os.ReadFile(File(gitDir, slug, ReadyFile))
	if err != nil {
		return "", ""
	}
	id, name, _ = strings.Cut(strings.TrimSpace(string(data)), "\n")
	return strings.TrimSpace(id), strings.TrimSpace(name)
}

// IsReady reports whether the container with id is the one marked ready.
// Engine ids are compared in full: a recreated container never inherits its
// predecessor's mark.
func IsReady(gitDir, slug, id string) bool {
	return id != "" && ReadyContainer(gitDir, slug) == id
}

// WriteJournal writes the create journal of sandbox slug: from here on,
// whatever a kill leaves is known as an unfinished create.
func WriteJournal(r *api.Repo, slug string, j Journal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return WriteAtomic(File(r.Git.CommonDir, slug, JournalFile), append(data, '\n'))
}

// ReadJournal returns the create journal of a sandbox, or nil when there is
// none (or it cannot be read, which a cleanup must treat the same way).
func ReadJournal(gitDir, slug string) *Journal {
	data, err := os.ReadFile(File(gitDir, slug, JournalFile))
	if err != nil {
		return nil
	}
	var j Journal
	if json.Unmarshal(data, &j) != nil || j.Base == "" {
		return nil
	}
	return &j
}

// RemoveJournal removes the create journal of sandbox slug, once it is
// ready (or every step of a failed create was undone).
func RemoveJournal(r *api.Repo, slug string) error {
	err := os.Remove(File(r.Git.CommonDir, slug, JournalFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Clear removes what a sandbox of this name left in its state
// directory, but the create lock, which the caller holds and keeps.
func Clear(r *api.Repo, slug string) error {
	entries, err := os.ReadDir(r.StateDir(slug))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == CreateLockFile {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(r.StateDir(slug), e.Name())))
	}
	return errors.Join(errs...)
}

// Remove removes a sandbox's state directory, create lock included. The
// caller holds that lock: a process waiting for it then finds the file gone
// and takes a new one (see LockCreate), so two never hold it at once.
func Remove(r *api.Repo, slug string) error {
	if err := os.RemoveAll(r.StateDir(slug)); err != nil {
		return err
	}
	// The parent goes too once it is empty: nothing of Litterbox is left.
	// A create of another name that made it meanwhile keeps it (it is not
	// empty), or retries (LockCreate).
	_ = os.Remove(filepath.Dir(r.StateDir(slug)))
	return nil
}

// CreateLockWait is how long a create waits for another one of the same name
// (or a list peeking at the lock) before it gives up.
const CreateLockWait = 2 * time.Second

// DeleteLockWait is how long it waits for the process that finishes a
// delete of that name (DeletingFile).
const DeleteLockWait = 30 * time.Second

// LockCreate takes the create lock of sandbox slug. It fails with
// ErrIncomplete when another process keeps it longer than CreateLockWait:
// that process is creating the sandbox right now. deleting, when not nil,
// is called once, as soon as it waits for the end of a delete of that
// name (DeleteLockWait), which may take seconds.
func LockCreate(ctx context.Context, r *api.Repo, slug string, deleting func()) (func(), error) {
	l, err := TakeCreate(ctx, r, slug, deleting)
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// CreateLock is a create lock held by this process.
type CreateLock struct{ f *os.File }

// Unlock releases the lock.
func (l *CreateLock) Unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// File is the locked file, to hand to a child process (exec.Cmd's
// ExtraFiles): the lock belongs to the open file, which the child then
// shares, so it holds the lock on after this process let go (Release) or
// died, until it exits or unlocks.
func (l *CreateLock) File() *os.File { return l.f }

// Release closes this process's descriptor of the lock without unlocking
// it: a child given File keeps it.
func (l *CreateLock) Release() { l.f.Close() }

// Adopt is the lock f that a parent process handed this one (File). Its
// descriptor, handed on with no close-on-exec, gets it again: the programs
// this process runs (docker, or an engine's helper that outlives it) do not
// hold the lock on once this process died.
func Adopt(f *os.File) *CreateLock {
	syscall.CloseOnExec(int(f.Fd()))
	return &CreateLock{f: f}
}

// TakeCreate is LockCreate, giving the lock itself (Lock.File).
func TakeCreate(ctx context.Context, r *api.Repo, slug string, deleting func()) (*CreateLock, error) {
	p := File(r.Git.CommonDir, slug, CreateLockFile)
	deadline := time.Now().Add(CreateLockWait)
	ending := false // the holder is a delete's end (DeletingFile)
	for {
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		if errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
			continue // the parent was removed halfway (Remove)
		}
		if err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
		if errors.Is(err, os.ErrNotExist) && time.Now().Before(deadline) {
			continue // its directory was removed after MkdirAll (Remove)
		}
		if err != nil {
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			// The holder before may have removed the file (Remove)
			// after this open: then this lock guards nothing; take the new
			// file's.
			if same(f, p) {
				return &CreateLock{f: f}, nil
			}
			f.Close()
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		// Once seen, the end of a delete is what is waited for: its
		// mark goes (Remove) an instant before its lock does.
		if !ending && Deleting(r.Git.CommonDir, slug) {
			ending = true
			if deleting != nil {
				deleting()
			}
		}
		if time.Now().After(deadline) {
			// The end of a delete (its gateway and volume go) may take
			// longer on a busy engine: it is waited for longer.
			switch {
			case !ending:
				return nil, CreatingError(slug)
			case time.Now().After(deadline.Add(DeleteLockWait - CreateLockWait)):
				return nil, DeletingError(slug)
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// same reports whether the open file f is still the file at path p.
func same(f *os.File, p string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(p)
	return err == nil && os.SameFile(a, b)
}

// BeingCreated reports whether a live process holds the create lock of a
// sandbox. It takes a shared lock for an instant, which a create waiting for
// the lock rides out (CreateLockWait).
func BeingCreated(gitDir, slug string) bool {
	f, err := os.Open(File(gitDir, slug, CreateLockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// MarkSetupFailed records a failed startup command, with its output.
func MarkSetupFailed(r *api.Repo, slug, output string) error {
	return WriteAtomic(File(r.Git.CommonDir, slug, SetupFailedFile), []byte(output))
}

// SetupFailed reports whether sandbox slug is marked failed-setup.
func SetupFailed(gitDir, slug string) bool {
	_, err := os.Stat(File(gitDir, slug, SetupFailedFile))
	return err == nil
}

// CreatingError is the refusal of an operation on sandbox slug while
// another process creates it.
func CreatingError(slug string) error {
	return &api.Error{Kind: api.ErrIncomplete,
		Msg:   fmt.Sprintf("Sandbox '%s' is being created by another litterbox process right now. Wait for it to finish (`litterbox list` shows it as creating until then), then try again.", slug),
		Agent: fmt.Sprintf("Sandbox '%s' is being created right now (by another call or process). Wait a moment, then try again.", slug)}
}

// IncompleteError is the refusal of every operation on a sandbox whose
// create was cut short: its /src may hold any part of the repository, so
// neither the agent nor a snapshot may take it for the real thing.
func IncompleteError(gitDir, slug string) error {
	if j := ReadJournal(gitDir, slug); j != nil && j.FromBranch {
		return &api.Error{Kind: api.ErrIncomplete,
			Msg:   fmt.Sprintf("Sandbox '%s' is incomplete: recreating its container from its branch was interrupted before the copy into %s was complete, so it cannot be used. Its branch %s%s keeps its work: run `litterbox create --from-branch %s` again.", slug, api.Workdir, api.BranchPrefix, slug, slug),
			Agent: fmt.Sprintf("Sandbox '%s' is incomplete: recreating its container was interrupted, so it cannot be used. Its branch keeps its work. Ask the user to run `litterbox create --from-branch %s`.", slug, slug)}
	}
	return &api.Error{Kind: api.ErrIncomplete,
		Msg:   fmt.Sprintf("Sandbox '%s' is incomplete: its create was interrupted before the copy of the repository into %s was complete, so it cannot be used (it holds no work). Remove it with `litterbox delete %s`, then create it again; `litterbox create %s` does both.", slug, api.Workdir, slug, slug),
		Agent: fmt.Sprintf("Sandbox '%s' is incomplete: its creation was interrupted before the copy of the repository was complete, so it cannot be used (it holds no work). Call sandbox-create with the same name to replace it, or ask the user to run `litterbox delete %s`.", slug, slug)}
}
