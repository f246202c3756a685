package recording

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// A snapshot whose scan sent files reads its branch (the tip, then the
// trees of the directories the files are in) to see what changed. When
// nothing did (a build or a formatter wrote files as they were, which
// agents' commands do all the time), the next call asks the same
// questions of the same tip: this process keeps the trees such a snapshot
// read, and while the branch's ref file still names that tip, the next
// snapshot that needs no other directory reads them from memory, with no
// git process. Trees of a commit never change; the ref file is what git
// itself reads first, and anything else (a packed or reftable ref, a
// symbolic one, another tip) goes to git as before.

// keptTrees is what a snapshot read of a tip that it did not move. Its
// maps are handed to later snapshots as they are: every use only reads
// them, and a use that wrote to one would change what the next reads.
type keptTrees struct {
	tip   string
	trees map[string]map[string]git.TreeEntry
}

// maxKeptEntries bounds the tree entries kept per sandbox.
const maxKeptEntries = 20000

// branchReader reads h's branch for one snapshot, from what the last one
// kept when it can, else from one `git cat-file --batch` started on first
// need.
type branchReader struct {
	ctx     context.Context
	h       *api.Handle
	kept    *keptTrees
	objects *git.Objects
}

func keptKey(commonDir, slug string) string { return commonDir + "\x00" + slug }

func (rec *Recorder) branchReader(ctx context.Context, h *api.Handle) *branchReader {
	b := &branchReader{ctx: ctx, h: h}
	if k, ok := rec.kept.Load(keptKey(h.Repo.Git.CommonDir, h.Slug)); ok {
		b.kept = k.(*keptTrees)
	}
	return b
}

func (b *branchReader) git() *git.Objects {
	if b.objects == nil {
		b.objects = b.h.Repo.Git.Objects(b.ctx)
	}
	return b.objects
}

// tip is the commit the branch points to, ok=false when there is none.
func (b *branchReader) tip() (id string, ok bool, err error) {
	ref := api.BranchRef(b.h.Slug)
	if b.kept != nil && looseRef(b.h.Repo.Git.CommonDir, ref) == b.kept.tip {
		return b.kept.tip, true, nil
	}
	return b.git().Commit(ref)
}

// trees is git.Objects.Trees of tip.
func (b *branchReader) trees(tip string, dirs []string) (map[string]map[string]git.TreeEntry, error) {
	if k := b.kept; k != nil && k.tip == tip {
		out := make(map[string]map[string]git.TreeEntry, len(dirs))
		for _, d := range dirs {
			t, ok := k.trees[d]
			if !ok {
				out = nil
				break
			}
			out[d] = t
		}
		if out != nil {
			return out, nil
		}
	}
	return b.git().Trees(tip, dirs)
}

// treeFiles is git.Objects.TreeFiles.
func (b *branchReader) treeFiles(tip string, dirs []string) (trees, files []string, err error) {
	if len(dirs) == 0 {
		return nil, nil, nil
	}
	return b.git().TreeFiles(tip, dirs)
}

// close ends the git process, if one started, and says whether git failed.
func (b *branchReader) close() error {
	if b.objects == nil {
		return nil
	}
	return b.objects.Close()
}

// prefetch reads, in the background, at tip, the commit a snapshot just
// made, the trees of the directories it read (read), and keeps them, as a
// snapshot that found nothing to commit keeps what it read: the next call's scan most often sends
// files of the same directories (a build or a formatter writes them again
// as they were), and then starts no git process on the agent's time. Only
// a long-lived process does it (one command's process exits first), and
// only while the branch is still at tip.
//
// It marks the sandbox's entry before it starts and keeps the trees only
// if the mark is still there when the read ends: a Forget (the sandbox's
// delete) or another snapshot's keep meanwhile wins, whatever the order.
// The mark names tip with no trees, which a snapshot reads as "ask git".
func (rec *Recorder) prefetch(h *api.Handle, tip string, read map[string]map[string]git.TreeEntry) {
	if !rec.LongLived || len(read) == 0 {
		return
	}
	dirs := slices.Collect(maps.Keys(read))
	key := keptKey(h.Repo.Git.CommonDir, h.Slug)
	mark := &keptTrees{tip: tip}
	rec.store(key, mark)
	rec.prefetches.Add(1)
	go func() {
		defer rec.prefetches.Done()
		o := h.Repo.Git.Objects(context.Background())
		trees, err := o.Trees(tip, dirs)
		if cerr := o.Close(); err != nil || cerr != nil || looseRef(h.Repo.Git.CommonDir, api.BranchRef(h.Slug)) != tip || entries(trees) > maxKeptEntries {
			rec.kept.CompareAndDelete(key, mark)
			return
		}
		rec.kept.CompareAndSwap(key, mark, &keptTrees{tip: tip, trees: trees})
	}()
}

// keep remembers trees, read at tip by a snapshot that left the branch at
// tip, for h's next snapshot; forget drops what was kept.
func (rec *Recorder) keep(h *api.Handle, tip string, trees map[string]map[string]git.TreeEntry) {
	if entries(trees) > maxKeptEntries {
		rec.forget(h)
		return
	}
	rec.store(keptKey(h.Repo.Git.CommonDir, h.Slug), &keptTrees{tip: tip, trees: trees})
}

// store keeps k under key, and drops what is kept of sandboxes whose
// branch no longer names the tip kept: the MCP server never hears of a
// sandbox deleted by another process (`litterbox delete`, prune, the UI),
// and would hold its trees until it exits. A branch that moved elsewhere
// loses nothing either: its next snapshot would ask git anyway.
func (rec *Recorder) store(key string, k *keptTrees) {
	rec.kept.Range(func(other, v any) bool {
		commonDir, slug, _ := strings.Cut(other.(string), "\x00")
		if other != key && looseRef(commonDir, api.BranchRef(slug)) != v.(*keptTrees).tip {
			rec.kept.CompareAndDelete(other, v)
		}
		return true
	})
	rec.kept.Store(key, k)
}

// entries counts the entries of trees.
func entries(trees map[string]map[string]git.TreeEntry) int {
	n := 0
	for _, t := range trees {
		n += len(t)
	}
	return n
}

func (rec *Recorder) forget(h *api.Handle) { rec.Forget(h.Repo, h.Slug) }

// Forget drops what snapshots of r's sandbox slug kept: its delete calls
// it, or a long-lived MCP server would hold the trees of every sandbox it
// ever deleted.
func (rec *Recorder) Forget(r *api.Repo, slug string) {
	rec.kept.Delete(keptKey(r.Git.CommonDir, slug))
}

// looseRef is the object id in ref's loose file under commonDir, or ""
// when there is no such file or it holds anything else.
func looseRef(commonDir, ref string) string {
	data, err := os.ReadFile(filepath.Join(commonDir, filepath.FromSlash(ref)))
	if err != nil {
		return ""
	}
	id, ok := strings.CutSuffix(string(data), "\n")
	if !ok || (len(id) != 40 && len(id) != 64) || strings.Trim(id, "0123456789abcdef") != "" {
		return ""
	}
	return id
}
