// Package scanner is the half of a snapshot that runs inside the sandbox, and
// the host's reader of what it sends. The scanner walks /src, skips what
// .gitignore excludes (ignore.go, git's own matching rules), and streams a
// tar of the entries changed since a stamp, ended by a meta entry
// (wire.go); before that, it can run an agent's command and send its
// output (run.go). Read, on the host, checks every name of that stream,
// never trusting it. The package imports nothing of the sandbox service, so
// a small program of its own can run it.
package scanner

import (
	"archive/tar"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
	"golang.org/x/sys/unix"
)

// The scanner (cmd/litterbox-scan) is copied into the sandbox's root-owned
// run directory and run as the sandbox user (`SCANNER scan-internal`). It walks /src, skips what .gitignore excludes, and writes
// a tar of only the entries changed since a stamp, then one meta entry. Change is judged by ctime as well as mtime:
// chmod, `touch -d` and `cp -p` leave mtime in the past but always move ctime,
// which no user can set. The host never follows anything from this stream; it
// only reads names, modes, link targets and bytes.

// Scan writes the scan stream of o to w.
func Scan(w io.Writer, o wire.Options) error {
	tw := tar.NewWriter(w)
	if o.Run != nil {
		res, err := runInContainer(o.Run)
		if err != nil {
			return err
		}
		stdout, stderr := res.Stdout, res.Stderr
		res.Stdout, res.Stderr = "", "" // sent as entries of their own
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		for _, e := range []struct {
			name string
			data []byte
		}{{wire.RunStdoutName, []byte(stdout)}, {wire.RunStderrName, []byte(stderr)}, {wire.RunResultName, data}} {
			if err := writeEntry(tw, e.name, e.data); err != nil {
				return err
			}
		}
	}
	if o.Audit {
		// Nothing counts as changed: no listing, no file is sent.
		o.Since, o.Full, o.Paths, o.List = math.MaxInt64, nil, nil, nil
	}
	// The stamp follows the command, so what it changed is in this walk and
	// what changes after the stamp is in the next.
	began := time.Now()
	start, err := stamp()
	if err != nil {
		return err
	}
	sc := &scanner{
		o:       o,
		tw:      tw,
		sem:     make(chan struct{}, 2*runtime.NumCPU()),
		meta:    wire.Meta{Start: start, Dirs: map[string][]wire.DirEntry{}},
		full:    setOf(o.Full),
		paths:   setOf(o.Paths),
		list:    setOf(o.List),
		tracked: setOf(o.Tracked),
		walked:  map[string]bool{},
		whole:   map[string]bool{},
		linked:  setOf(o.Linked),
	}
	ig := (&ignorer{}).with(parseIgnore("", []byte(strings.Join(o.Excludes, "\n"))))
	fi, err := os.Lstat(o.Root)
	if err != nil {
		return err
	}
	// The journal is asked after the stamp: what it does not name
	// happened before its last answer, so before this stamp's
	// predecessor was taken, and was reported by that scan.
	var journal journalReply
	if o.Journal {
		if rep, err := askJournal(o.JournalToken); err == nil {
			journal = rep
			sc.meta.Journal = rep.token
			sc.meta.Partial = !rep.full && o.Since != 0 && o.JournalToken != ""
		}
	}
	if o.Audit {
		sc.meta.Partial = false // an audit looks at everything
	}
	if sc.meta.Partial {
		sc.walkJournal(journal.dirs, ig)
	} else {
		sc.walk("", sc.changed(fi, o.Since == 0), ig, walkFlags{all: o.Since == 0})
	}
	sortStrings(sc.pending)
	for p := range sc.paths {
		if fi, err := os.Lstat(filepath.Join(o.Root, p)); err == nil {
			sc.plan.Files++
			sc.plan.Bytes += fi.Size()
		}
	}
	if err := writeEntry(tw, wire.PlanName, sc.plan.Encode()); err != nil {
		return err
	}
	for _, p := range sc.pending {
		if err := sc.emit(p); err != nil {
			return err
		}
	}
	for _, p := range slices.Sorted(maps.Keys(sc.paths)) {
		if err := sc.emit(p); err != nil {
			return err
		}
	}
	sortStrings(sc.meta.Ignored)
	sortStrings(sc.meta.Linked)
	sc.meta.Took = time.Since(began).Nanoseconds()
	if err := writeEntry(tw, wire.MetaName, sc.meta.Encode()); err != nil {
		return err
	}
	return tw.Close()
}

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, p := range list {
		if p != "" {
			p = path.Clean(p)
		}
		m[p] = true
	}
	return m
}

func sortStrings(s []string) { sort.Strings(s) }

func writeEntry(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// stamp returns the file system's idea of now: the ctime of a new file. Any
// change after it carries a ctime at or after it, whatever the clock's grain.
func stamp() (int64, error) {
	f, err := os.CreateTemp("", ".litterbox-stamp-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return ctime(fi), nil
}

type scanner struct {
	o       wire.Options
	tw      *tar.Writer
	full    map[string]bool
	paths   map[string]bool
	list    map[string]bool
	tracked map[string]bool
	linked  map[string]bool // Options.Linked
	// sem bounds the directories walked at once; a walker that finds no
	// free slot walks the subdirectory itself.
	sem chan struct{}

	mu      sync.Mutex // guards meta, pending, plan, walked and whole
	meta    wire.Meta
	pending []string // changed files to send once the walk is done
	plan    wire.Plan
	walked  map[string]bool // directories walked
	whole   map[string]bool // directories whose whole subtree was walked
}

func (sc *scanner) changed(fi os.FileInfo, all bool) bool {
	return all || ctime(fi) >= sc.o.Since || fi.ModTime().UnixNano() >= sc.o.Since
}

func (sc *scanner) skip(rel, reason string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.meta.Skipped = append(sc.meta.Skipped, wire.Skipped{Path: rel, Reason: reason})
}

// walkFlags say how a subtree is walked.
type walkFlags struct {
	all     bool // report every entry (a Full subtree, or the first scan)
	list    bool // list every directory, ignore status of every file evaluated
	tracked bool // inside an ignored directory: only tracked files matter
	shallow bool // this directory only, not its subdirectories (a journal walk)
}

// walk visits directory rel; selfChanged says whether its own times passed
// the stamp (entries added, removed or renamed). It stats entries relative
// to the open directory, not by full path, checks ignore patterns only for
// directories (to prune them) and for changed files (on a large tree nearly
// every file is neither), and walks subdirectories in parallel: the walk is
// what grows with the repository. An ignored directory is entered only when
// the branch tracks files under it (Options.Tracked), and there only
// tracked files can be recorded: every untracked path under an ignored
// directory is ignored, as in git.
func (sc *scanner) walk(rel string, selfChanged bool, ig *ignorer, f walkFlags) {
	var wg sync.WaitGroup
	defer wg.Wait()
	f.all = f.all || sc.full[rel]
	f.list = f.list || sc.list[rel]
	if sc.meta.Partial { // only a journal walk asks what was walked
		sc.mu.Lock()
		sc.walked[rel] = true
		sc.mu.Unlock()
	}
	abs := filepath.Join(sc.o.Root, rel)
	dir, err := os.Open(abs)
	if err != nil {
		sc.skip(rel+"/", "cannot read directory: "+err.Error())
		return
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		sc.skip(rel+"/", "cannot read directory: "+err.Error())
		return
	}
	fd := int(dir.Fd())
	if !f.tracked {
		var gi *unix.Stat_t
		// New rules: files they no longer ignore must be found, whatever
		// their times.
		if ig, gi = sc.withRules(ig, fd, rel); gi != nil && (f.all || sc.newer(*gi)) {
			f.list = true
		}
	}
	if f.shallow && (f.all || f.list) {
		f.shallow = false // the whole subtree is listed: walk it
		sc.mu.Lock()
		sc.whole[rel] = true
		sc.mu.Unlock()
	}
	dirChanged := selfChanged || f.all || f.list
	var listing []wire.DirEntry
	for _, name := range names {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // removed while we walked; the next scan sees it gone
			}
			// A directory that can be read but not searched (mode r
			// without x): none of its entries can be looked at. It is not
			// listed, as one that cannot be read at all: a listing without
			// them would record them as deleted.
			sc.skip(rel+"/", "cannot read directory: "+(&os.PathError{Op: "stat", Path: filepath.Join(abs, name), Err: err}).Error())
			return
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		changed := f.all || sc.newer(st)
		p := path.Join(rel, name)
		if reason := wire.RefusedName(name, st.Mode&unix.S_IFMT == unix.S_IFLNK); reason != "" {
			// Listed, so a tree entry of that name is not taken for
			// deleted; never walked or sent.
			if dirChanged {
				kind := byte(wire.EntryFile)
				if isDir {
					kind = wire.EntryNotWalked
				}
				listing = append(listing, wire.DirEntry{Name: name, Kind: kind})
			}
			if dirChanged || changed || sc.o.Audit {
				sc.skip(p, reason)
			}
			continue
		}
		if !isDir && sc.o.Audit {
			sc.audit(fd, name, p, &st, func() bool { return f.tracked || ig.ignored(p, false) })
			continue
		}
		if !isDir {
			// The common case on a large tree: an unchanged file in an
			// unchanged directory costs one fstatat and nothing else.
			if dirChanged {
				kind := byte(wire.EntryFile)
				if f.list && !f.tracked && !ig.ignored(p, false) {
					kind = wire.EntryNotIgnored
				}
				listing = append(listing, wire.DirEntry{Name: name, Kind: kind})
			}
			if (st.Nlink > 1 || sc.linked[p]) && st.Mode&unix.S_IFMT == unix.S_IFREG {
				sc.mu.Lock()
				sc.meta.Linked = append(sc.meta.Linked, p)
				sc.mu.Unlock()
			}
			if !changed || sc.paths[p] {
				continue
			}
			sc.mu.Lock()
			if f.tracked || ig.ignored(p, false) {
				sc.meta.IgnoredChanged = append(sc.meta.IgnoredChanged, p)
			} else {
				sc.pending = append(sc.pending, p)
				sc.plan.Files++
				sc.plan.Bytes += st.Size
			}
			sc.mu.Unlock()
			continue
		}
		sub := f
		if !f.tracked && ig.ignored(p, true) {
			sc.mu.Lock()
			sc.meta.Ignored = append(sc.meta.Ignored, p)
			sc.mu.Unlock()
			sub.tracked = true
		}
		if sub.tracked && !sc.tracked[p] {
			if dirChanged {
				listing = append(listing, wire.DirEntry{Name: name, Kind: wire.EntryNotWalked})
			}
			continue
		}
		if dirChanged {
			listing = append(listing, wire.DirEntry{Name: name, Kind: wire.EntryDir})
		}
		if f.shallow {
			continue
		}
		select {
		case sc.sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sc.sem }()
				sc.walk(p, changed, ig, sub)
			}()
		default:
			sc.walk(p, changed, ig, sub)
		}
	}
	if dirChanged {
		if listing == nil {
			listing = []wire.DirEntry{}
		}
		sc.mu.Lock()
		sc.meta.Dirs[rel] = listing
		sc.mu.Unlock()
	}
}

// withRules is ig with the rules of directory rel's .gitignore (found
// from dirfd, the open directory, or unix.AT_FDCWD), and the .gitignore's
// stat, nil when there is none. One that is not a regular file is not
// read, as git follows no link in the work tree, but it is there.
func (sc *scanner) withRules(ig *ignorer, dirfd int, rel string) (*ignorer, *unix.Stat_t) {
	path := filepath.Join(sc.o.Root, rel, ".gitignore")
	name := ".gitignore"
	if dirfd == unix.AT_FDCWD {
		name = path
	}
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ig, nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		if data, err := os.ReadFile(path); err == nil {
			ig = ig.with(parseIgnore(rel, data))
		}
	}
	return ig, &st
}

// newer reports whether st changed at or after the stamp Since.
func (sc *scanner) newer(st unix.Stat_t) bool {
	return statTime(st.Ctim) >= sc.o.Since || statTime(st.Mtim) >= sc.o.Since
}

func statTime(t unix.Timespec) int64 { return t.Sec*1e9 + t.Nsec }

// audit checks one file of an audit: a regular file over the size cap, or
// one the scanner cannot read, is Unrecordable. Links are always read;
// fifos, sockets and devices hold nothing git keeps. A file everyone may
// read (the common case) costs no syscall; others are opened to be sure.
func (sc *scanner) audit(dirfd int, name, rel string, st *unix.Stat_t, ignored func() bool) {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	over := sc.o.MaxSize > 0 && st.Size > sc.o.MaxSize
	if !over && st.Mode&0o444 == 0o444 {
		return
	}
	u := wire.Unrecordable{Path: rel}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err != nil:
		u.Reason = "cannot read: " + (&os.PathError{Op: "open", Path: filepath.Join(sc.o.Root, rel), Err: err}).Error()
	case !over:
		unix.Close(fd)
		return
	default:
		f := os.NewFile(uintptr(fd), rel)
		u.Reason, u.ID = overCap(st.Size, sc.o.MaxSize), blobID(f, st.Size)
		f.Close()
	}
	u.Ignored = ignored()
	sc.mu.Lock()
	sc.meta.Unrecordable = append(sc.meta.Unrecordable, u)
	sc.mu.Unlock()
}

// overCap is the reason a file of size bytes is not recorded.
func overCap(size, max int64) string {
	return fmt.Sprintf("%d bytes is over the snapshot size cap of %d bytes", size, max)
}

// blobID is git's SHA-1 blob id of r's size bytes, or "" when r does not
// hold exactly that many (it changed while read).
func blobID(r io.Reader, size int64) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	if n, err := io.Copy(h, r); err != nil || n != size {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// emit writes one file or symlink, streaming: a file is never read whole.
// Its size is taken from fstat of the open file and the header promises
// exactly that many bytes; a file that shrinks while read is padded with
// zeros and one that grows is cut, so the tar stays whole, and both are
// named Torn (as is any whose times moved during the read): the host does
// not record what was sent, and the next scan, whose stamp precedes the
// change, sends the file again. Other kinds cannot be stored in git.
func (sc *scanner) emit(rel string) error {
	abs := filepath.Join(sc.o.Root, rel)
	info, err := os.Lstat(abs)
	if err != nil || info.IsDir() {
		return nil // gone, or not a file: the listings say what is there
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(abs)
		if err != nil {
			sc.skip(rel, "cannot read link: "+err.Error())
			return nil
		}
		return sc.tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777, ModTime: info.ModTime()})
	}
	if !info.Mode().IsRegular() {
		sc.skip(rel, "not a regular file or symlink ("+info.Mode().Type().String()+"); git cannot store it")
		return nil
	}
	// O_NONBLOCK: had it been swapped for a fifo since the Lstat, open
	// must not wait for a writer. O_NOFOLLOW: nor for a symlink.
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		sc.skip(rel, "cannot read: "+err.Error())
		return nil
	}
	defer f.Close()
	var before unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &before); err != nil || before.Mode&unix.S_IFMT != unix.S_IFREG {
		sc.skip(rel, "cannot read: it changed kind while it was opened")
		return nil
	}
	size := before.Size
	if sc.o.MaxSize > 0 && size > sc.o.MaxSize {
		sc.skip(rel, overCap(size, sc.o.MaxSize))
		return nil
	}
	h := &tar.Header{Name: rel, Typeflag: tar.TypeReg, Size: size, Mode: int64(before.Mode & 0o777), ModTime: info.ModTime()}
	if err := sc.tw.WriteHeader(h); err != nil {
		return err
	}
	n, werr := copyFile(sc.tw, f, size)
	if werr != nil {
		return werr
	}
	torn := n < size
	if torn {
		if _, err := io.CopyN(sc.tw, zeroReader{}, size-n); err != nil {
			return err
		}
	}
	var after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &after); err != nil || after.Size != size || after.Ctim != before.Ctim || after.Mtim != before.Mtim {
		torn = true
	}
	if torn {
		sc.mu.Lock()
		sc.meta.Torn = append(sc.meta.Torn, rel)
		sc.mu.Unlock()
	}
	return nil
}

// copyFile copies up to n bytes of f to w and says how many it copied. A
// read error ends the copy early (the caller pads); only a write error, a
// broken stream, is returned.
func copyFile(w io.Writer, f io.Reader, n int64) (int64, error) {
	buf := make([]byte, 64<<10)
	var done int64
	for done < n {
		m, err := f.Read(buf[:min(int64(len(buf)), n-done)])
		if m > 0 {
			if _, werr := w.Write(buf[:m]); werr != nil {
				return done, werr
			}
			done += int64(m)
		}
		if err != nil {
			return done, nil
		}
	}
	return done, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
