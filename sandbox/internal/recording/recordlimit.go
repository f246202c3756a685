package recording

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// The record limit: what a sandbox's snapshots may add to the repository
// in all. Each file is capped (DefaultMaxFileSize), but an agent makes as
// many calls as it likes: two bash calls writing 9 x 45 MB of random data
// grew the host's .git from 552 KB to 774 MB. So each sandbox counts the
// file content its snapshots wrote as new blobs (blobs the branch already
// held at that path are not counted), and a file that would take it over
// the limit is not stored: it is skipped and named with the reason, as a
// file over the size cap is, and stays in the sandbox. Its path is kept,
// and once the limit allows (the user raised it), the next snapshot asks
// the scanner for it again and records it.
//
// Per sandbox, not per snapshot: a per-snapshot limit is multiplied by the
// number of calls. The count lives in the sandbox's state directory and
// only grows (a rewind or a milestone leaves the objects in the
// repository until git gc); delete removes it with the rest.

// maxPending bounds the paths kept for recording once the limit allows.
const maxPending = 10000

// recordLimit is the record limit of r's sandboxes in bytes, 0 for none:
// [limits] record of the user's .litterbox.local.toml, read again whenever
// the file changes, so raising it takes effect at the next snapshot. The
// committed .litterbox.toml cannot set it (an agent's branch can change
// that file). A local file that does not parse leaves the default, with a
// warning.
func (rec *Recorder) recordLimit(r *api.Repo) int64 {
	p := filepath.Join(r.Git.Root, config.LocalFile)
	fi, err := os.Stat(p)
	if err != nil {
		return api.DefaultRecordLimit
	}
	key := localStamp{p, fi.Size(), fi.ModTime()}
	if v, ok := rec.localLimits.Load(key); ok {
		return v.(int64)
	}
	limit := int64(api.DefaultRecordLimit)
	data, err := os.ReadFile(p)
	if err == nil {
		var cfg *config.Config
		if cfg, err = config.Parse(nil, data); err == nil && cfg.Record != "" {
			limit = config.Bytes(cfg.Record) // "0" is 0: no limit
		}
	}
	if err != nil {
		rec.Log.Warn("the record limit is the default: "+config.LocalFile+" does not parse", "limit", sizeText(limit), "err", err)
	}
	rec.localLimits.Store(key, limit)
	return limit
}

type localStamp struct {
	path string
	size int64
	mod  time.Time
}

func recordedPath(h *api.Handle) string { return filepath.Join(h.Repo.StateDir(h.Slug), "recorded") }

// readRecorded is what h's snapshots have recorded so far, in bytes.
func readRecorded(h *api.Handle) int64 {
	data, err := os.ReadFile(recordedPath(h))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return max(n, 0)
}

// reservations are, by state directory, what snapshots of this process
// have stored and not yet counted: scans run side by side, before the state
// lock, and each must see what the others took.
type reservations struct {
	mu sync.Mutex
	m  map[string]int64
}

// recordBudget is one snapshot's share of its sandbox's record limit,
// across its scans (a follow-up scan sends files again: a path is
// reserved once, at its largest size).
type recordBudget struct {
	res      *reservations
	key      string
	limit    int64 // 0: none
	recorded int64 // read when the snapshot began
	taken    int64 // reserved for it
	paths    map[string]int64
	written  map[string]int64 // blobs stored, by id
	over     map[string]int64 // files declined, by path
}

func (rec *Recorder) newRecordBudget(h *api.Handle) *recordBudget {
	return &recordBudget{res: rec.reserved, key: h.Repo.StateDir(h.Slug), limit: rec.recordLimit(h.Repo), recorded: readRecorded(h),
		paths: map[string]int64{}, written: map[string]int64{}, over: map[string]int64{}}
}

// admit reserves size bytes for the file p, or says why it cannot be
// recorded.
func (b *recordBudget) admit(p string, size int64) *wire.SkipError {
	extra := size - b.paths[p]
	if b.limit == 0 || extra <= 0 {
		return nil
	}
	b.res.mu.Lock()
	defer b.res.mu.Unlock()
	used := b.recorded + b.res.m[b.key]
	if used+extra > b.limit {
		b.over[p] = size
		return &wire.SkipError{Reason: overLimitReason(size, b.limit, used)}
	}
	b.res.m[b.key] += extra
	b.taken += extra
	b.paths[p] = size
	delete(b.over, p)
	return nil
}

// release gives back what the snapshot reserved: the count on disk holds
// it by then, or it was not stored.
func (b *recordBudget) release() {
	if b == nil || b.taken == 0 {
		return
	}
	b.res.mu.Lock()
	if b.res.m[b.key] -= b.taken; b.res.m[b.key] <= 0 {
		delete(b.res.m, b.key)
	}
	b.res.mu.Unlock()
	b.taken = 0
}

// budgetStore is one scan's blob store: git's writer, for what the budget
// admits; a file that would pass the limit is declined (wire.SkipError)
// before a byte of it is read.
type budgetStore struct {
	*git.BlobWriter
	budget *recordBudget
}

// WriteFile implements wire.FileStore.
func (b budgetStore) WriteFile(p string, size int64, r io.Reader) (string, error) {
	if skip := b.budget.admit(p, size); skip != nil {
		return "", skip
	}
	id, err := b.Write(size, r)
	if err == nil {
		b.budget.written[id] = size
	}
	return id, err
}

type budgetKey struct{}

// withBudget makes the scans under ctx share b (commitScan's rescans).
func withBudget(ctx context.Context, b *recordBudget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b)
}

// budgetOf is the budget ctx carries (shared), else a new one.
func (rec *Recorder) budgetOf(ctx context.Context, h *api.Handle) (b *recordBudget, shared bool) {
	if b, ok := ctx.Value(budgetKey{}).(*recordBudget); ok {
		return b, true
	}
	return rec.newRecordBudget(h), false
}

// overLimitReason says why a file was not recorded and how to record it.
func overLimitReason(size, limit, used int64) string {
	return fmt.Sprintf("%s would take this sandbox over the record limit of %s (%s recorded so far): not recorded; it stays in the sandbox. To record it, the user raises the limit with [limits] record = \"%s\" in %s (\"0\": none); the next snapshot records it",
		sizeText(size), sizeText(limit), sizeText(used), configSize(max(2*limit, used+size)), config.LocalFile)
}

// settleRecord counts what one snapshot stored (b; sc its last scan,
// trees the branch's, nil when the comparison was not reached) and keeps
// the files it skipped for the limit for a later snapshot; requested are
// the kept paths it asked the scanner for. It runs under the state lock.
func (rec *Recorder) settleRecord(h *api.Handle, b *recordBudget, sc *scanned, trees map[string]map[string]git.TreeEntry, requested map[string]bool) {
	if b == nil {
		return
	}
	old := map[string]bool{} // blobs the branch held at their path
	if sc != nil && trees != nil {
		for p, ch := range sc.files {
			if te, ok := trees[parentDir(p)][path.Base(p)]; ok && te.ID == ch.ID {
				old[ch.ID] = true
			}
		}
	}
	var added int64
	for id, size := range b.written {
		if !old[id] {
			added += size
		}
	}
	if added > 0 {
		if err := state.WriteAtomic(recordedPath(h), []byte(strconv.FormatInt(readRecorded(h)+added, 10)+"\n")); err != nil {
			rec.Log.Warn("cannot keep the record count", "sandbox", h.Slug, "err", err)
		}
	}
	if sc == nil {
		return
	}
	var keep []pendingFile
	for _, f := range readPending(h) {
		_, recorded := sc.files[f.Path]
		_, again := b.over[f.Path]
		if !recorded && !again && !requested[f.Path] {
			keep = append(keep, f) // not asked for: it did not fit yet
		}
	}
	for p, size := range b.over {
		if _, recorded := sc.files[p]; !recorded {
			keep = append(keep, pendingFile{p, size})
		}
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i].Path < keep[j].Path })
	if len(keep) > maxPending {
		keep = keep[:maxPending]
	}
	rec.writePending(h, keep)
}

// pendingFile is a file skipped for the record limit, to record once it
// fits.
type pendingFile struct {
	Path string
	Size int64
}

func pendingPath(h *api.Handle) string { return filepath.Join(h.Repo.StateDir(h.Slug), "over-limit") }

// readPending reads the files skipped for the record limit: records of a
// path then its size (scan's byte-exact format: names are bytes).
func readPending(h *api.Handle) []pendingFile {
	data, err := os.ReadFile(pendingPath(h))
	if err != nil {
		return nil
	}
	var out []pendingFile
	var p *string // the path whose size comes next
	whole := wire.EachRecord(data, func(tag byte, v string) bool {
		switch {
		case tag == 'P' && p == nil:
			p = &v
			return true
		case tag == 'S' && p != nil:
			n, err := strconv.ParseInt(v, 10, 64)
			out, p = append(out, pendingFile{*p, n}), nil
			return err == nil
		}
		return false
	})
	if !whole || p != nil {
		return nil
	}
	return out
}

func (rec *Recorder) writePending(h *api.Handle, files []pendingFile) {
	if len(files) == 0 {
		if err := os.Remove(pendingPath(h)); err != nil && !os.IsNotExist(err) {
			rec.Log.Warn("cannot clear the files kept for the record limit", "sandbox", h.Slug, "err", err)
		}
		return
	}
	var b bytes.Buffer
	for _, f := range files {
		wire.PutRecord(&b, 'P', f.Path)
		wire.PutRecord(&b, 'S', strconv.FormatInt(f.Size, 10))
	}
	if err := state.WriteAtomic(pendingPath(h), b.Bytes()); err != nil {
		rec.Log.Warn("cannot keep the files skipped for the record limit", "sandbox", h.Slug, "err", err)
	}
}

// pendingToAsk are the kept files that fit in what the limit leaves, for
// the scanner to send whatever their times.
func (rec *Recorder) pendingToAsk(h *api.Handle) []string {
	files := readPending(h)
	if len(files) == 0 {
		return nil
	}
	limit := rec.recordLimit(h.Repo)
	room := limit - readRecorded(h)
	var out []string
	for _, f := range files {
		if limit == 0 || f.Size <= room {
			out = append(out, f.Path)
			room -= f.Size
		}
	}
	return out
}

// sizeText is n bytes for a person: "20 MiB", "1.5 GiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// configSize is n as a size for the configuration, rounded up: "2g",
// "40m".
func configSize(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%dg", n>>30)
	}
	return fmt.Sprintf("%dm", (n+(1<<20)-1)>>20)
}
