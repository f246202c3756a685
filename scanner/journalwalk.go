package scanner

import (
	"maps"
	"path"
	"path/filepath"
	"slices"

	"github.com/litterbox-dev/litterbox/scanner/wire"
	"golang.org/x/sys/unix"
)

// walkJournal is the walk of a scan that follows the change journal: each
// directory the journal names is walked alone (a subdirectory that changed
// is named too), and the subtrees the host asked for whole (Full, List) and
// those under a changed .gitignore are walked whole, each with the ignore
// rules and flags the full walk would have reached it with. What a
// directory's walk reports is what the full walk reports of it.
func (sc *scanner) walkJournal(dirs []string, base *ignorer) {
	memo := map[string]dirCtx{}
	memo[""] = sc.rootContext(base)
	whole := map[string]bool{}
	for r := range sc.full {
		whole[r] = true
	}
	for r := range sc.list {
		whole[r] = true
	}
	// An ignored directory of the last scan that no rule ignores now (its
	// .gitignore is gone) is walked whole, as the full walk now walks it.
	var still []string
	for _, p := range sc.o.Ignored {
		switch sc.ignoredNow(p, memo) {
		case ignoredYes:
			still = append(still, p)
		case ignoredNo:
			whole[p] = true
		}
	}
	// The full walk lists a directory whole when its .gitignore entry, of
	// whatever kind, changed: a .gitignore that is a directory changes
	// with what is in it, and its parent must then be walked too.
	for _, d := range dirs {
		if path.Base(d) == ".gitignore" {
			dirs = append(dirs, parentDir(d))
		}
	}
	// A file with other names may have been written through one of them
	// (in an ignored folder, say): its own folder then has no event. One
	// that changed has its folder walked, as if the journal named it.
	for _, p := range slices.Sorted(maps.Keys(sc.linked)) {
		var st unix.Stat_t
		if p != "" && unix.Lstat(filepath.Join(sc.o.Root, p), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && sc.newer(st) {
			dirs = append(dirs, parentDir(p))
		}
	}
	// Parents first, so a directory whose walk turns whole (its
	// .gitignore changed) comes before everything under it.
	todo := slices.Compact(slices.Sorted(slices.Values(append(dirs, slices.Collect(maps.Keys(whole))...))))
	for _, d := range todo {
		if sc.walked[d] || sc.underWhole(d) {
			continue
		}
		c := sc.dirContext(d, memo)
		if !c.ok {
			sc.refusedDir(d, memo)
			continue
		}
		f := c.f
		if whole[d] {
			sc.whole[d] = true
		} else {
			f.shallow = true
		}
		sc.walk(d, c.changed, c.ig, f)
	}
	// The ignored directories of the last scan that no walk went past are
	// still the full walk's: only the walk of its parent names one (a
	// subtree walked whole from the ignored directory itself does not).
	for _, p := range still {
		if !sc.walked[parentDir(p)] && !sc.underWhole(parentDir(p)) {
			sc.meta.Ignored = append(sc.meta.Ignored, p)
		}
	}
	sc.keepLinked(memo)
}

// refusedDir reports directory d skipped, as the walk of its parent does
// when d's name is one git refuses and its times passed the stamp: the
// journal names d (it watches such folders, for the links they may hold),
// and may not name its parent.
func (sc *scanner) refusedDir(d string, memo map[string]dirCtx) {
	parent := parentDir(d)
	reason := wire.RefusedName(path.Base(d), false)
	if d == "" || reason == "" || sc.walked[parent] || sc.underWhole(parent) || !sc.dirContext(parent, memo).ok {
		return
	}
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(sc.o.Root, d), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && sc.newer(st) {
		sc.skip(d, reason)
	}
}

// keepLinked keeps in Meta.Linked the files of Options.Linked whose
// folder no walk went through, as the full walk keeps those it sees.
func (sc *scanner) keepLinked(memo map[string]dirCtx) {
	for _, p := range slices.Sorted(maps.Keys(sc.linked)) {
		dir := parentDir(p)
		if p == "" || sc.walked[dir] || sc.underWhole(dir) || wire.RefusedName(path.Base(p), false) != "" {
			continue // walked (and kept there), or not a file the full walk sees
		}
		var st unix.Stat_t
		if sc.dirContext(dir, memo).ok && unix.Lstat(filepath.Join(sc.o.Root, p), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			sc.meta.Linked = append(sc.meta.Linked, p)
		}
	}
}

// ignoredNow judges an ignored directory of the last scan again, as the
// full walk would: there, its parent walked and not ignored, it ignored.
func (sc *scanner) ignoredNow(p string, memo map[string]dirCtx) int {
	var st unix.Stat_t
	if p == "" || unix.Lstat(filepath.Join(sc.o.Root, p), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return ignoredGone
	}
	parent := parentDir(p)
	pc := sc.dirContext(parent, memo)
	if !pc.ok || pc.f.tracked {
		return ignoredGone
	}
	if sc.rulesIn(parent, pc).ignored(p, true) {
		return ignoredYes
	}
	return ignoredNo
}

const (
	ignoredGone = iota // not there, or not where the full walk looks
	ignoredYes
	ignoredNo
)

// underWhole reports whether p is in a subtree already walked whole.
func (sc *scanner) underWhole(p string) bool {
	for {
		if sc.whole[p] {
			return true
		}
		if p == "" {
			return false
		}
		p = parentDir(p)
	}
}

func parentDir(p string) string {
	d := path.Dir(p)
	if d == "." || d == "/" {
		return ""
	}
	return d
}

// dirCtx is how the full walk would reach a directory.
type dirCtx struct {
	ig      *ignorer  // the rules its walk starts from (its parents')
	f       walkFlags // the flags of its walk
	changed bool      // its own times passed the stamp
	ok      bool      // the full walk walks it
}

func (sc *scanner) rootContext(base *ignorer) dirCtx {
	var st unix.Stat_t
	if unix.Lstat(sc.o.Root, &st) != nil {
		return dirCtx{}
	}
	return dirCtx{ig: base, changed: sc.newer(st), ok: true}
}

// dirContext is d's context, from its parent's (memo holds those known).
func (sc *scanner) dirContext(d string, memo map[string]dirCtx) dirCtx {
	if c, ok := memo[d]; ok {
		return c
	}
	parent := parentDir(d)
	var c dirCtx
	if pc := sc.dirContext(parent, memo); pc.ok {
		c = sc.childContext(parent, pc, d)
	}
	memo[d] = c
	return c
}

// childContext is what walk does on meeting directory d in parent.
func (sc *scanner) childContext(parent string, pc dirCtx, d string) dirCtx {
	ig := sc.rulesIn(parent, pc)
	var st unix.Stat_t
	if unix.Lstat(filepath.Join(sc.o.Root, d), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || wire.RefusedName(path.Base(d), false) != "" {
		return dirCtx{}
	}
	f := walkFlags{tracked: pc.f.tracked}
	if !f.tracked && ig.ignored(d, true) {
		f.tracked = true
	}
	if f.tracked && !sc.tracked[d] {
		return dirCtx{}
	}
	return dirCtx{ig: ig, f: f, changed: sc.newer(st), ok: true}
}

// rulesIn are the ignore rules of the entries of directory dir, reached
// with context c: its parents' and its own .gitignore's, as walk reads them.
func (sc *scanner) rulesIn(dir string, c dirCtx) *ignorer {
	if c.f.tracked {
		return c.ig
	}
	ig, _ := sc.withRules(c.ig, unix.AT_FDCWD, dir)
	return ig
}
