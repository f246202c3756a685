package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// apply and merge are the only operations that write the user's working tree
// (and, for merge, index and branch). Git writes files one by one, and merge
// moves the branch in a second step, so a process killed in the middle would
// leave a checkout that is neither before nor after. Both therefore write a
// journal before their first write, naming every path they change with its
// entry before and after, and remove it after their last. Whoever finds a
// journal with no live writer (the next merge, apply or list in that working
// tree) completes the operation when its last step is done (the branch moved)
// and otherwise rolls it back: each path is put back to its entry before,
// and so is the index for a merge. "Before" is what the working tree held,
// which is not always the index's entry: a file marked --skip-worktree or
// --assume-unchanged can hold an edit git status does not show, or be
// absent (a sparse checkout), and the rollback once wrote the index's
// version over such an edit. A path that holds what it held before is left
// alone. A file that holds neither the before nor the after content is
// someone's edit made since: it is copied aside first, so nothing is lost,
// and the message names each copy. Rolling back twice is rolling back once.

// worktreeTxn is the journal of a merge or apply in progress.
type worktreeTxn struct {
	Op      string    `json:"op"` // "merge" or "apply"
	Sandbox string    `json:"sandbox"`
	Ref     string    `json:"ref,omitempty"`  // merge: the branch HEAD points at
	From    string    `json:"from,omitempty"` // merge: the commit it was at
	To      string    `json:"to,omitempty"`   // merge: the commit it moves to
	Index   bool      `json:"index,omitempty"`
	Started time.Time `json:"started"`
	Paths   []txnPath `json:"paths"`
}

// txnPath is one path the operation changes. Path is bytes (base64 in the
// JSON): a file name need not be UTF-8.
type txnPath struct {
	Path []byte    `json:"path"`
	Old  git.Entry `json:"old"`
	// New is the entry after; the zero Entry when the path goes, or when it
	// is not known (then any content but Old is copied aside on rollback).
	New   git.Entry `json:"new"`
	Known bool      `json:"known,omitempty"` // New is known
	// Disk is what the working tree held before, when it was not Old (a
	// file's content is then stored as a blob, to be written back).
	Disk *git.Entry `json:"disk,omitempty"`
	// Marks are the path's index marks before (a merge's rollback writes
	// the entry again, which clears them).
	Marks git.Marks `json:"marks,omitempty"`
}

// before is what the working tree held at p before the operation.
func (p txnPath) before() git.Entry {
	if p.Disk != nil {
		return *p.Disk
	}
	return p.Old
}

func txnFile(r *api.Repo) string { return filepath.Join(worktreeGitDir(r), "litterbox-worktree.json") }
func txnLock(r *api.Repo) string { return filepath.Join(worktreeGitDir(r), "litterbox-worktree.lock") }

func worktreeGitDir(r *api.Repo) string {
	if r.Git.GitDir != "" {
		return r.Git.GitDir
	}
	return r.Git.CommonDir
}

func txnPaths(changes []git.RawChange, known bool) []txnPath {
	out := make([]txnPath, len(changes))
	for i, c := range changes {
		out[i] = txnPath{Path: []byte(c.Path), Old: c.Old, New: c.New, Known: known}
	}
	return out
}

// fillDisk records, for each path of t, what the working tree holds when it
// is not the path's Old entry; with store, such a file's content is stored
// as a blob, to be written back. A merge stores nothing: it refuses such
// content (hidden) before it writes, and a user's local secret has no
// business in the object database.
func (rw *Reviewer) fillDisk(ctx context.Context, r *api.Repo, t *worktreeTxn, store bool) error {
	paths := t.paths()
	cur, err := rw.onDisk(ctx, r, paths)
	if err != nil {
		return err
	}
	if t.Index {
		marks, err := r.Git.IndexMarks(ctx, paths)
		if err != nil {
			return err
		}
		for i := range t.Paths {
			t.Paths[i].Marks = marks[paths[i]]
		}
	}
	var files []string
	var at []int
	for i, p := range t.Paths {
		if cur[i] == p.Old {
			continue
		}
		d := cur[i]
		t.Paths[i].Disk = &d
		if d.Present() && d.Mode != "dir" && d.Mode != "120000" && d.ID != p.Old.ID {
			files, at = append(files, paths[i]), append(at, i)
		}
	}
	if !store || len(files) == 0 {
		return nil
	}
	ids, err := r.Git.StoreFiles(ctx, files)
	if err != nil {
		return err
	}
	for k, i := range at {
		t.Paths[i].Disk.ID = ids[k]
	}
	return nil
}

// hidden are the paths whose file holds content other than its index entry
// although git status shows none: marked --skip-worktree or
// --assume-unchanged (the caller has refused the changes git status shows).
// An absent file is not one (a sparse checkout leaves it out), nor one whose
// mode alone differs (core.fileMode=false).
func (t *worktreeTxn) hidden() []string {
	var out []string
	for _, p := range t.Paths {
		if p.Disk != nil && p.Disk.Present() && p.Old.Present() && p.Disk.ID != p.Old.ID {
			out = append(out, string(p.Path))
		}
	}
	return out
}

func (t *worktreeTxn) paths() []string {
	out := make([]string, len(t.Paths))
	for i, p := range t.Paths {
		out[i] = string(p.Path)
	}
	return out
}

func writeTxn(r *api.Repo, t *worktreeTxn) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := state.WriteAtomic(txnFile(r), data); err != nil {
		return fmt.Errorf("record the %s in %s before changing anything: %w", t.Op, txnFile(r), err)
	}
	return nil
}

func readTxn(r *api.Repo) (*worktreeTxn, time.Time, error) {
	p := txnFile(r)
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, time.Time{}, err
	}
	var t worktreeTxn
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, time.Time{}, fmt.Errorf("%s is not a litterbox journal (%v): move it away if you did not make it", p, err)
	}
	return &t, st.ModTime(), nil
}

func removeTxn(r *api.Repo) error {
	err := os.Remove(txnFile(r))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// lockWorktree takes the working tree's merge/apply lock, waiting while
// another litterbox merge or apply of it runs. The kernel drops the lock of a
// killed process, so a journal found under the lock has no live writer.
func lockWorktree(ctx context.Context, r *api.Repo, wait bool) (unlock func(), ok bool, err error) {
	if !wait {
		return flock.TryLock(txnLock(r))
	}
	unlock, err = flock.Wait(ctx, txnLock(r), 20*time.Millisecond)
	return unlock, err == nil, err
}

// RecoverWorktree finishes an interrupted merge or apply of r's working tree,
// if there is one and nobody is running it. list calls it.
func (rw *Reviewer) RecoverWorktree(ctx context.Context, r *api.Repo) error {
	if _, err := os.Stat(txnFile(r)); err != nil {
		return nil // the common case: one stat
	}
	unlock, ok, err := lockWorktree(ctx, r, false)
	if err != nil || !ok {
		return err // !ok: a merge or apply is running right now
	}
	defer unlock()
	return rw.recoverLocked(ctx, r)
}

// recoverLocked finishes an interrupted merge or apply; the caller holds the
// working tree lock.
func (rw *Reviewer) recoverLocked(ctx context.Context, r *api.Repo) error {
	t, since, err := readTxn(r)
	if err != nil || t == nil {
		return err
	}
	if t.Op == "merge" {
		ref, attached, err := r.Git.CurrentBranch(ctx)
		if err != nil {
			return err
		}
		head, err := r.Git.Head(ctx)
		if err != nil {
			return err
		}
		switch {
		case attached && ref == t.Ref && head == t.To:
			rw.Log.Warn(fmt.Sprintf("An interrupted `litterbox merge %s` had finished merging into %s; only deleting the sandbox was left. Run `litterbox merge %s` again to delete it.", t.Sandbox, strings.TrimPrefix(t.Ref, "refs/heads/"), t.Sandbox))
			return removeTxn(r)
		case !attached || ref != t.Ref || head != t.From:
			rw.Log.Warn(fmt.Sprintf("An interrupted `litterbox merge %s` was found, but HEAD has moved since, so it was left alone: check `git status`. Its journal is removed.", t.Sandbox))
			return removeTxn(r)
		}
	}
	rescued, err := rw.rollback(ctx, r, t, since)
	if err != nil {
		return fmt.Errorf("roll back the interrupted `litterbox %s %s`: %w (its journal %s is kept; run litterbox list again to retry)", t.Op, t.Sandbox, err, txnFile(r))
	}
	rw.Log.Warn(fmt.Sprintf("An interrupted `litterbox %s %s` was rolled back: the files it had begun to change are as they were before it. Run `litterbox %s %s` again.", t.Op, t.Sandbox, t.Op, t.Sandbox) + rescued.text())
	return removeTxn(r)
}

// rescuedFiles are the files a rollback copied aside: each path and its
// copy.
type rescuedFiles [][2]string

// text says where each copy is, for the rollback's message; "" for none.
func (rf rescuedFiles) text() string {
	if len(rf) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nFiles that held other changes were copied aside first:")
	for _, c := range rf {
		fmt.Fprintf(&b, "\n  %s -> %s", termtext.Quote(c[0]), termtext.Quote(c[1]))
	}
	return b.String()
}

// rollback puts every path of t back to what the working tree held before
// t (and, for a merge, the index entry). since is when the journal was
// written. It returns the files it copied aside.
func (rw *Reviewer) rollback(ctx context.Context, r *api.Repo, t *worktreeTxn, since time.Time) (rescued rescuedFiles, err error) {
	g := r.Git
	if t.Index {
		// A read-tree killed midway leaves index.lock behind, and then every
		// git command fails. One made after the journal, while no merge runs
		// (the caller holds the lock), is the dead merge's.
		if st, err := os.Stat(g.IndexLock()); err == nil && !st.ModTime().Before(since) {
			if err := os.Remove(g.IndexLock()); err != nil {
				return nil, err
			}
		}
	}
	paths := t.paths()
	cur, err := rw.onDisk(ctx, r, paths)
	if err != nil {
		return nil, err
	}
	var restore []string
	var entries []git.Entry
	var gone []string
	aside := ""
	for i, p := range t.Paths {
		c, before := cur[i], p.before()
		if c == before {
			continue // untouched: never write it
		}
		if c.Present() && c.Mode != "dir" && (!p.Known || c != p.New) {
			if aside == "" {
				aside = filepath.Join(worktreeGitDir(r), "litterbox-rescued", time.Now().UTC().Format("20060102T150405Z"))
			}
			dst := filepath.Join(aside, paths[i])
			if err := copyAside(filepath.Join(r.Root(), paths[i]), dst); err != nil {
				return nil, err
			}
			rescued = append(rescued, [2]string{paths[i], dst})
		}
		if c.Mode != "dir" && c.Present() {
			if err := os.Remove(filepath.Join(r.Root(), paths[i])); err != nil && !os.IsNotExist(err) {
				return nil, err
			}
		}
		if before.Present() && before.Mode != "dir" {
			restore, entries = append(restore, paths[i]), append(entries, before)
		} else {
			gone = append(gone, paths[i])
		}
	}
	// Directories left empty go first: a file may be restored where one is.
	for _, p := range gone {
		removeEmptyParents(r.Root(), p)
	}
	if err := g.WriteFiles(ctx, restore, entries); err != nil {
		return rescued, err
	}
	if t.Index {
		// Only entries that differ are written, so a rollback of a merge
		// that never reached the index leaves the index file alone.
		idx, err := g.IndexEntries(ctx, paths)
		if err != nil {
			return rescued, err
		}
		var ps []string
		var olds []git.Entry
		var marks []git.Marks
		for i, p := range t.Paths {
			if idx[paths[i]] != p.Old {
				ps, olds, marks = append(ps, paths[i]), append(olds, p.Old), append(marks, p.Marks)
			}
		}
		if len(ps) > 0 {
			if err := g.SetIndexEntries(ctx, "", ps, olds); err != nil {
				return rescued, err
			}
			if err := g.SetIndexMarks(ctx, ps, marks); err != nil {
				return rescued, err
			}
		}
	}
	return rescued, nil
}

// onDisk returns the entry each path has in the working tree now: the zero
// Entry when it is missing, Mode "dir" for a directory. A path beyond a
// symbolic link is missing, as git has it: what is there is outside the
// working tree (a branch that made a directory a link to a folder of the
// user's), and a rollback once copied such a file aside, then failed.
func (rw *Reviewer) onDisk(ctx context.Context, r *api.Repo, paths []string) ([]git.Entry, error) {
	out := make([]git.Entry, len(paths))
	var files []string
	var idx []int
	linked := map[string]bool{} // by directory: it is, or is beyond, a link
	for i, p := range paths {
		if beyondLink(r.Root(), path.Dir(p), linked) {
			continue
		}
		full := filepath.Join(r.Root(), p)
		st, err := os.Lstat(full)
		switch {
		case errors.Is(err, os.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
			continue
		case err != nil:
			return nil, err
		case st.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(full)
			if err != nil {
				return nil, err
			}
			out[i] = git.Entry{Mode: "120000", ID: git.BlobID([]byte(target))}
		case st.IsDir():
			out[i] = git.Entry{Mode: "dir"}
		default:
			out[i].Mode = "100644"
			if st.Mode()&0o111 != 0 {
				out[i].Mode = "100755"
			}
			files, idx = append(files, p), append(idx, i)
		}
	}
	ids, err := r.Git.HashFiles(ctx, files)
	if err != nil {
		return nil, err
	}
	for k, i := range idx {
		out[i].ID = ids[k]
	}
	return out, nil
}

// beyondLink reports whether dir (relative to root, slash-separated; "."
// for root) is a symbolic link or lies beyond one; known caches the
// answer by directory.
func beyondLink(root, dir string, known map[string]bool) bool {
	if dir == "." || dir == "" {
		return false
	}
	if v, ok := known[dir]; ok {
		return v
	}
	v := beyondLink(root, path.Dir(dir), known)
	if !v {
		st, err := os.Lstat(filepath.Join(root, dir))
		v = err == nil && st.Mode()&os.ModeSymlink != 0
	}
	known[dir] = v
	return v
}

// copyAside copies the file or symlink at src to dst, making dst's parents.
func copyAside(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	st, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, st.Mode().Perm())
}

// removeEmptyParents removes the directories above p (relative to root) that
// are left empty, as git does when it removes a file.
func removeEmptyParents(root, p string) {
	for d := filepath.Dir(p); d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
		if os.Remove(filepath.Join(root, d)) != nil {
			return
		}
	}
}
