package sandbox

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The scanner is the half of a snapshot that runs inside the container: the
// litterbox binary itself, copied into the root-owned RunDir and run as the
// sandbox user (`litterbox scan-internal`). It walks /src, skips what
// .gitignore excludes, and writes a tar of only the entries changed since a
// stamp, then one meta entry. Change is judged by ctime as well as mtime:
// chmod, `touch -d` and `cp -p` leave mtime in the past but always move ctime,
// which no user can set. The host never follows anything from this stream; it
// only reads names, modes, link targets and bytes.

// ScanOptions tune one scan.
type ScanOptions struct {
	Root     string   // the directory to scan, /src
	Since    int64    // report entries changed at or after this time (unix ns); 0 reports all
	Full     []string // directories (relative) whose whole subtree is reported
	Paths    []string // files (relative) reported whatever their times, even when ignored
	Excludes []string // global exclude patterns (info/exclude, core.excludesFile), base ""
	MaxSize  int64    // larger files are skipped and named in Meta.Skipped
	// Run, when set, holds a RunSpec as JSON: the command runs first and its
	// result leads the stream.
	Run io.Reader
}

// ScanMeta is the last entry of a scan stream, named scanMetaName.
type ScanMeta struct {
	// Start is a ctime stamp taken before the walk: the Since of the next scan.
	Start int64 `json:"start"`
	// Dirs holds, for every directory changed since Since (entries added,
	// removed or renamed), all its entries: "name" for a file or link,
	// "name/" for a directory, "name/!" for an ignored directory that was not
	// walked. The host compares them with the branch to find deletions.
	Dirs map[string][]string `json:"dirs"`
	// Skipped are files that could not be reported, with the reason.
	Skipped []Skipped `json:"skipped,omitempty"`
	// IgnoredChanged are changed files that .gitignore excludes; the host
	// asks for them again (Paths) only when the branch tracks them.
	IgnoredChanged []string `json:"ignoredChanged,omitempty"`
}

// scanMetaName is absolute, so no file of /src (all relative) can take it.
const scanMetaName = "/litterbox-scan-meta"

// Scan writes the scan stream of o to w.
func Scan(w io.Writer, o ScanOptions) error {
	tw := tar.NewWriter(w)
	if o.Run != nil {
		res, stdout, stderr, err := runInContainer(o.Run)
		if err != nil {
			return err
		}
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		for _, e := range []struct {
			name string
			data []byte
		}{{runStdoutName, stdout}, {runStderrName, stderr}, {runResultName, data}} {
			if err := writeEntry(tw, e.name, e.data); err != nil {
				return err
			}
		}
	}
	// The stamp follows the command, so what it changed is in this walk and
	// what changes after the stamp is in the next.
	start, err := stamp()
	if err != nil {
		return err
	}
	sc := &scanner{
		o:     o,
		tw:    tw,
		sem:   make(chan struct{}, 2*runtime.NumCPU()),
		meta:  ScanMeta{Start: start, Dirs: map[string][]string{}},
		full:  map[string]bool{},
		paths: map[string]bool{},
	}
	for _, d := range o.Full {
		sc.full[path.Clean(d)] = true
	}
	for _, p := range o.Paths {
		sc.paths[path.Clean(p)] = true
	}
	ig := (&ignorer{}).with(parseIgnore("", []byte(strings.Join(o.Excludes, "\n"))))
	fi, err := os.Lstat(o.Root)
	if err != nil {
		return err
	}
	sc.walk("", sc.changed(fi, o.Since == 0), ig, o.Since == 0)
	sort.Strings(sc.pending)
	for _, p := range sc.pending {
		if err := sc.emitPath(p); err != nil {
			return err
		}
	}
	for p := range sc.paths {
		if err := sc.emitPath(p); err != nil {
			return err
		}
	}
	data, err := json.Marshal(sc.meta)
	if err != nil {
		return err
	}
	if err := writeEntry(tw, scanMetaName, data); err != nil {
		return err
	}
	return tw.Close()
}

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

func ctime(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).UnixNano()
	}
	return fi.ModTime().UnixNano()
}

type scanner struct {
	o     ScanOptions
	tw    *tar.Writer
	full  map[string]bool
	paths map[string]bool
	// sem bounds the directories walked at once; a walker that finds no
	// free slot walks the subdirectory itself.
	sem chan struct{}

	mu      sync.Mutex // guards meta and pending
	meta    ScanMeta
	pending []string // changed files to send once the walk is done
}

func (sc *scanner) changed(fi os.FileInfo, all bool) bool {
	return all || ctime(fi) >= sc.o.Since || fi.ModTime().UnixNano() >= sc.o.Since
}

func (sc *scanner) skip(rel, reason string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.meta.Skipped = append(sc.meta.Skipped, Skipped{Path: rel, Reason: reason})
}

// walk visits directory rel; selfChanged says whether its own times passed
// the stamp (entries added, removed or renamed). all reports every entry.
// It stats entries relative to the open directory, not by full path, checks
// ignore patterns only for directories (to prune them) and for changed files
// (on a large tree nearly every file is neither), and walks subdirectories in
// parallel: the walk is what grows with the repository.
func (sc *scanner) walk(rel string, selfChanged bool, ig *ignorer, all bool) {
	var wg sync.WaitGroup
	defer wg.Wait()
	all = all || sc.full[rel]
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
	if data, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
		ig = ig.with(parseIgnore(rel, data))
	}
	dirChanged := selfChanged || all
	fd := int(dir.Fd())
	var listing []string
	for _, name := range names {
		if strings.EqualFold(name, ".git") {
			if dirChanged {
				sc.skip(path.Join(rel, name), "a .git entry is never committed")
			}
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue // removed while we walked; the next scan sees it gone
		}
		changed := all || statTime(st.Ctim) >= sc.o.Since || statTime(st.Mtim) >= sc.o.Since
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// The common case on a large tree: an unchanged file in an
			// unchanged directory costs one fstatat and nothing else.
			if dirChanged {
				listing = append(listing, name)
			}
			if !changed {
				continue
			}
			p := path.Join(rel, name)
			if sc.paths[p] {
				continue
			}
			sc.mu.Lock()
			if ig.ignored(p, false) {
				sc.meta.IgnoredChanged = append(sc.meta.IgnoredChanged, p)
			} else {
				sc.pending = append(sc.pending, p)
			}
			sc.mu.Unlock()
			continue
		}
		p := path.Join(rel, name)
		if ig.ignored(p, true) {
			if dirChanged {
				listing = append(listing, name+"/!")
			}
			continue
		}
		if dirChanged {
			listing = append(listing, name+"/")
		}
		select {
		case sc.sem <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sc.sem }()
				sc.walk(p, changed, ig, all)
			}()
		default:
			sc.walk(p, changed, ig, all)
		}
	}
	if dirChanged {
		if listing == nil {
			listing = []string{}
		}
		sc.mu.Lock()
		sc.meta.Dirs[rel] = listing
		sc.mu.Unlock()
	}
}

func statTime(t unix.Timespec) int64 { return t.Sec*1e9 + t.Nsec }

func (sc *scanner) emitPath(rel string) error {
	info, err := os.Lstat(filepath.Join(sc.o.Root, rel))
	if err != nil || info.IsDir() {
		return nil // gone, or not a file: the listings say what is there
	}
	return sc.emit(rel, info)
}

// emit writes one file or symlink. Other kinds cannot be stored in git.
func (sc *scanner) emit(rel string, info os.FileInfo) error {
	abs := filepath.Join(sc.o.Root, rel)
	h := &tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}
	var data []byte
	switch {
	case info.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(abs)
		if err != nil {
			sc.skip(rel, "cannot read link: "+err.Error())
			return nil
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
	case info.Mode().IsRegular():
		if sc.o.MaxSize > 0 && info.Size() > sc.o.MaxSize {
			sc.skip(rel, fmt.Sprintf("%d bytes is over the snapshot size cap of %d bytes", info.Size(), sc.o.MaxSize))
			return nil
		}
		// Read it whole: a file growing while we read must not break the tar.
		var err error
		if data, err = os.ReadFile(abs); err != nil {
			sc.skip(rel, "cannot read: "+err.Error())
			return nil
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
	default:
		sc.skip(rel, "not a regular file or symlink ("+info.Mode().Type().String()+"); git cannot store it")
		return nil
	}
	if err := sc.tw.WriteHeader(h); err != nil {
		return err
	}
	_, err := sc.tw.Write(data)
	return err
}
