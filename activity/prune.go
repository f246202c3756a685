package activity

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
)

// DefaultRetention is how long the record of a deleted sandbox stays after
// its last event.
const DefaultRetention = 30 * 24 * time.Hour

// DefaultMaxTotal bounds a repository's records together: an agent that
// makes or forks many sandboxes cannot fill the disk with their records.
const DefaultMaxTotal = 128 << 20

// recFile is one file of a folder of records.
type recFile struct {
	path  string
	slug  string
	size  int64
	mtime time.Time
	role  string // "new" (<slug>.jsonl), "old" (.1.jsonl), "kept" (a store or its count), "chain" (the notes of what Tidy removed)
}

// Tidy bounds the folder of records r is in, from what its files say at
// now:
//
//   - the record of a deleted sandbox (its last event a delete) whose
//     newest file is older than Retention goes, kept events and all;
//   - while the folder holds more than MaxTotal, files go in this order,
//     each oldest first: the older files (.1.jsonl) of deleted sandboxes,
//     the older files of the others (r's own last), the kept events of
//     deleted sandboxes, then their newest files, and with the last of
//     them what is left of the record (its notes of what Tidy removed,
//     its chains' heads).
//
// So the folder holds at most MaxTotal beyond what the sandboxes that
// still exist hold in their newest files and kept events (MaxBytes and two
// MaxKept each). A record being written is left alone (its lock is held).
func (r Record) Tidy(now time.Time) {
	retention := cmp.Or(r.Retention, DefaultRetention)
	maxTotal := cmp.Or(r.MaxTotal, DefaultMaxTotal)
	entries, err := os.ReadDir(r.Dir)
	if err != nil {
		return
	}
	var files []recFile
	newest := map[string]time.Time{}
	for _, e := range entries {
		name := e.Name()
		slug, rest, ok := strings.Cut(name, ".")
		if !ok || !ValidName(slug) || rest == "lock" {
			continue
		}
		role := "kept"
		switch rest {
		case "jsonl":
			role = "new"
		case "1.jsonl":
			role = "old"
		case "pruned":
			role = "chain"
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, recFile{path: filepath.Join(r.Dir, name), slug: slug, size: fi.Size(), mtime: fi.ModTime(), role: role})
		if fi.ModTime().After(newest[slug]) {
			newest[slug] = fi.ModTime()
		}
	}
	deleted := map[string]bool{}
	for slug := range newest {
		if e, ok := Parse(lastLine(Record{Dir: r.Dir, Sandbox: slug}.Path())); ok && e.Kind == KindDelete {
			deleted[slug] = true
		}
	}
	var total int64
	var left []recFile
	expired := map[string]bool{}
	for _, f := range files {
		if deleted[f.slug] && now.Sub(newest[f.slug]) > retention {
			expired[f.slug] = true
			if removeLocked(r.Dir, f, time.Time{}) {
				continue
			}
		}
		total += f.size
		left = append(left, f)
	}
	for _, f := range left {
		delete(expired, f.slug)
	}
	for slug := range expired {
		// all of it went: its chains' heads go too
		Record{Dir: r.Dir, Sandbox: slug}.forget()
	}
	if total <= maxTotal {
		return
	}
	rank := func(f recFile) int {
		switch {
		case f.role == "old" && deleted[f.slug]:
			return 0
		case f.role == "old" && f.slug != r.Sandbox:
			return 1
		case f.role == "old":
			return 2
		case f.role == "kept" && deleted[f.slug]:
			return 3
		case deleted[f.slug]:
			// last: its delete event is what marks the rest of it as a
			// deleted sandbox's
			return 4
		}
		// kept while its sandbox may exist; the notes of what Tidy removed
		// are a few bytes, and tell that from a file gone missing
		return -1
	}
	slices.SortStableFunc(left, func(a, b recFile) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), a.mtime.Compare(b.mtime))
	})
	for _, f := range left {
		if total <= maxTotal {
			return
		}
		if rank(f) >= 0 && removeLocked(r.Dir, f, now) {
			total -= f.size
			if rank(f) == 4 {
				total -= r.dropRest(f.slug)
			}
		}
	}
}

// dropRest removes what is left of the record of slug, a deleted
// sandbox's whose files of events all went (its newest last): the notes
// of what Tidy removed, written as they went, and its chains' heads, as at
// the end of its retention. Without its newest file nothing says it was
// deleted, so what was left stayed for ever. It returns the bytes removed.
func (r Record) dropRest(slug string) int64 {
	gone := Record{Dir: r.Dir, Sandbox: slug}
	var n int64
	if fi, err := os.Stat(gone.prunedPath()); err == nil {
		if !removeLocked(r.Dir, recFile{path: gone.prunedPath(), slug: slug}, time.Time{}) {
			return 0 // being written: it is not gone after all
		}
		n = fi.Size()
	}
	gone.forget()
	return n
}

// removeLocked removes f under its record's lock, unless another process
// holds that lock now; it reports whether f is gone. Unless now is zero (the
// whole record goes), it notes a file of events it removes first, so
// `audit verify` tells it from a file gone missing (chain.go).
func removeLocked(dir string, f recFile, now time.Time) bool {
	r := Record{Dir: dir, Sandbox: f.slug}
	unlock, ok, err := flock.TryLock(r.lockPath())
	if err != nil || !ok {
		return false
	}
	defer unlock()
	if !now.IsZero() && strings.HasSuffix(f.path, ".jsonl") && r.notePruned(f.path, now) != nil {
		return false
	}
	return os.Remove(f.path) == nil
}
