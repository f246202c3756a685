package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// DeletingFile marks a sandbox whose delete has begun. A delete removes
// what its user sees first (the container, then the branch) and what is
// left after (the gateway, its volume, networks, the state directory with
// this mark, last) in a process that holds the create lock until it is
// done. So the mark with no process holding the lock is a delete cut
// short: list shows it, and delete finishes it.
const DeletingFile = "deleting"

// MarkDeleting writes the mark, before the delete removes anything. It
// names the container the delete removes first (id), whose pool claim, if
// any, goes last (DeletingID): the claim is what makes its gateway, a pool
// member's, a container of this sandbox.
func MarkDeleting(r *api.Repo, slug, id string) error {
	return WriteAtomic(File(r.Git.CommonDir, slug, DeletingFile), []byte(id+"\n"))
}

// UnmarkDeleting removes the mark of a delete that removed nothing.
func UnmarkDeleting(gitDir, slug string) {
	_ = os.Remove(File(gitDir, slug, DeletingFile))
}

// DeletingID is the container the mark names, "" for none.
func DeletingID(gitDir, slug string) string {
	data, _ := os.ReadFile(File(gitDir, slug, DeletingFile))
	return strings.TrimSpace(string(data))
}

// HasState reports whether sandbox slug has a state directory holding
// anything besides its create lock (which a lock taken just now makes).
func HasState(gitDir, slug string) bool {
	entries, _ := os.ReadDir(filepath.Join(gitDir, "litterbox", slug))
	for _, e := range entries {
		if e.Name() != CreateLockFile {
			return true
		}
	}
	return false
}

// Deleting reports whether a delete of sandbox slug began (and did not
// finish: the mark goes with the state directory).
func Deleting(gitDir, slug string) bool {
	_, err := os.Stat(File(gitDir, slug, DeletingFile))
	return err == nil
}

// CutShort names the sandboxes of the repository whose common git dir is
// gitDir that a delete began and no process is finishing.
func CutShort(gitDir string) []string {
	entries, _ := os.ReadDir(filepath.Join(gitDir, "litterbox"))
	var out []string
	for _, e := range entries {
		if e.IsDir() && Deleting(gitDir, e.Name()) && !BeingCreated(gitDir, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// DeletingError is the refusal of a create of sandbox slug while another
// process still removes what a delete of that name left.
func DeletingError(slug string) error {
	return &api.Error{Kind: api.ErrIncomplete,
		Msg:   fmt.Sprintf("Sandbox '%s' is still being deleted by another litterbox process after %s of waiting (its gateway, volume and state go after its container and branch; the engine may be slow). Try again in a moment; if `litterbox list` shows it as leftover, that process died, and `litterbox delete %s` finishes the delete.", slug, DeleteLockWait, slug),
		Agent: fmt.Sprintf("Sandbox '%s' is still being deleted. Wait a moment, then try again.", slug)}
}

// DeleteFailedFile holds why the process that finished a delete in the
// background (the gateway, its volume, networks, the state, after the
// container and the branch) failed: it has no terminal to say so on, and
// list's leftover row says it instead.
const DeleteFailedFile = "delete-failed"

// NoteDeleteFailed records why the end of a delete of sandbox slug failed,
// on one line; nothing once the delete's mark is gone (the state is).
func NoteDeleteFailed(gitDir, slug, why string) {
	if Deleting(gitDir, slug) {
		_ = WriteAtomic(File(gitDir, slug, DeleteFailedFile), []byte(strings.Join(strings.Fields(why), " ")+"\n"))
	}
}

// DeleteFailed is what NoteDeleteFailed recorded, "" for nothing.
func DeleteFailed(gitDir, slug string) string {
	data, _ := os.ReadFile(File(gitDir, slug, DeleteFailedFile))
	return strings.TrimSpace(string(data))
}
