package files

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// The host's half of cp: tar archives are read and written here with
// archive/tar, never by a host tar, so nothing in an archive (from a sandbox
// or from stdin) is trusted. Every name is checked before it is used, every
// write goes through an os.Root (which cannot leave its directory), and no
// entry is written through a symbolic link the same archive made.

// entryName cleans a tar entry's name into a relative slash path: a leading
// "./" goes, and a name that is absolute, climbs with "..", or is empty is
// refused.
func entryName(name string) (string, error) {
	n := strings.TrimPrefix(name, "./")
	n = strings.TrimSuffix(n, "/")
	switch {
	case n == "" || n == ".":
		return "", errors.New("empty name")
	case strings.HasPrefix(n, "/"):
		return "", errors.New("absolute name")
	case strings.ContainsRune(n, 0):
		return "", errors.New("NUL in the name")
	}
	for _, c := range strings.Split(n, "/") {
		if c == ".." {
			return "", errors.New("name climbs out (a .. component)")
		}
	}
	return path.Clean(n), nil
}

// linkSet is the symbolic links an archive made, so later entries cannot
// be written through them.
type linkSet map[string]bool

// through returns the link that name lies beneath, or "".
func (l linkSet) through(name string) string {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if l[p] {
			return p
		}
	}
	return ""
}

// checkHeader says what is wrong with one entry of an archive copied into a
// sandbox ("" for nothing); name is its clean name.
func (l linkSet) checkHeader(h *tar.Header) (name, reason string) {
	name, err := entryName(h.Name)
	if err != nil {
		return h.Name, err.Error()
	}
	if p := l.through(name); p != "" {
		return name, "written through the symbolic link " + p + " of the same archive"
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink:
		l[name] = true
	case tar.TypeLink:
		target, err := entryName(h.Linkname)
		if err != nil {
			return name, "hard link to a bad name: " + err.Error()
		}
		if p := l.through(target); p != "" || l[target] {
			return name, "hard link through the symbolic link " + p
		}
	default:
		return name, fmt.Sprintf("not a file, folder or link (tar type %q)", h.Typeflag)
	}
	return name, ""
}

// cleanArchive copies the archive in to out, entry by entry, with clean
// names and permission bits only (no owners, no set-id bits). Any hostile
// entry (an absolute name, "..", a write through a link the archive made,
// a device) refuses the whole archive, naming each; out then holds a part
// and must not be used.
func cleanArchive(in io.Reader, out io.Writer) (entries int, err error) {
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	links := linkSet{}
	var bad []api.SkippedEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, core.NewError(api.ErrBadArchive, "the archive on stdin is not a readable tar stream: %v; nothing was copied.", err)
		}
		name, reason := links.checkHeader(h)
		if reason != "" {
			bad = append(bad, api.SkippedEntry{Name: name, Reason: reason})
			continue
		}
		if len(bad) > 0 {
			continue // only collecting what else is wrong
		}
		nh := &tar.Header{Typeflag: h.Typeflag, Name: name, Linkname: h.Linkname, Size: h.Size,
			Mode: h.Mode & 0o777, ModTime: h.ModTime, Format: tar.FormatPAX}
		if h.Typeflag == tar.TypeDir {
			nh.Name += "/"
		}
		if h.Typeflag == tar.TypeLink {
			nh.Linkname, _ = entryName(h.Linkname)
		}
		if h.Typeflag != tar.TypeReg {
			nh.Size = 0
		}
		if err := writeEntry(tw, nh, tr); err != nil {
			return 0, err
		}
		entries++
	}
	if len(bad) > 0 {
		return 0, core.NewError(api.ErrBadArchive, "the archive on stdin holds entries that could write outside the destination, so nothing was copied:\n%s", skippedList(bad))
	}
	return entries, tw.Close()
}

// writeEntry writes h, then the content from r for a regular file. A name
// that is not UTF-8 cannot go in a PAX record: GNU's long names carry any
// bytes.
func writeEntry(tw *tar.Writer, h *tar.Header, r io.Reader) error {
	if err := tw.WriteHeader(h); err != nil {
		h.Format = tar.FormatGNU
		if err2 := tw.WriteHeader(h); err2 != nil {
			return fmt.Errorf("archive %q: %w", h.Name, err)
		}
	}
	if h.Typeflag == tar.TypeReg {
		if _, err := io.CopyN(tw, r, h.Size); err != nil {
			return fmt.Errorf("archive %q: %w", h.Name, err)
		}
	}
	return nil
}

func skippedList(s []api.SkippedEntry) string {
	var b strings.Builder
	for i, e := range s {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(s)-i)
			break
		}
		fmt.Fprintf(&b, "  %q: %s\n", e.Name, e.Reason)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// archiveHost writes the host file or directory src to w as a tar archive
// whose top entry is named top. Symbolic links are stored as links, never
// followed; modes are kept. Sockets, devices and pipes are left out and
// reported.
func archiveHost(src, top string, w io.Writer) (entries int, skipped []api.SkippedEntry, err error) {
	tw := tar.NewWriter(w)
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		name := top
		if rel != "." {
			name = top + "/" + filepath.ToSlash(rel)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
		switch {
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		case fi.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			h.Typeflag = tar.TypeSymlink
			if h.Linkname, err = os.Readlink(p); err != nil {
				return err
			}
		default:
			skipped = append(skipped, api.SkippedEntry{Name: name, Reason: "not a file, folder or link"})
			return nil
		}
		var f *os.File
		if h.Typeflag == tar.TypeReg {
			if f, err = os.Open(p); err != nil {
				return err
			}
			defer f.Close()
		}
		if err := writeEntry(tw, h, f); err != nil {
			return err
		}
		entries++
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return entries, skipped, tw.Close()
}

// extractResult says what extract wrote.
type extractResult struct {
	Entries int
	Bytes   int64
	Skipped []api.SkippedEntry
}

// maxTrailer bounds what may follow an archive's end: tar pads its output
// to a whole record (GNU tar's is 10 KiB), which must be read for the
// sandbox's tar to finish; more than this is not a tar's padding.
const maxTrailer = 1 << 20

// extraction is an archive extracted into a staging folder beside its
// target (a hidden .litterbox-cp-* folder in the same folder, or inside
// the target folder when the copy merges into it), nothing of it in place
// yet: commit moves it there once the copy is known to be whole, discard
// removes it. So a copy abandoned halfway (a stream cut short, a sandbox
// whose tar failed) leaves nothing behind.
type extraction struct {
	res       *extractResult
	parent    *os.Root // dir
	name      string   // the target's name in dir
	top       string   // the archive's top name
	stageIn   *os.Root // the root the staging folder is in: parent, or the target folder
	stageName string
	stage     *os.Root // the staging folder
	root      *os.Root // where the entries under top go: stage/name, or stage itself (merge)
	merge     bool     // the top is a folder and the target an existing folder
	dirs      []*tar.Header
}

// extract reads a tar archive whose entries all lie under the name top (as
// a sandbox's tar -c of one path writes them), to its end, and stages it
// as the entry name of the directory dir: top becomes name, and what lies
// under top goes under name. Nothing is written outside the staging
// folder, and nothing in the target until commit: entries with other
// names, absolute names, "..", a path through a symbolic link the archive
// made, or a hard link to anything but a file this archive made (a first
// entry linked to a file beside the target, a file of the folder copied
// into) are skipped and reported, and every write goes through an os.Root
// of the staging folder. Links are made as links and never followed. On an
// error nothing is left.
func extract(r io.Reader, top, dir, name string) (*extraction, error) {
	parent, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	x := &extraction{res: &extractResult{}, parent: parent, name: name, top: top}
	if err := x.read(r); err != nil {
		x.discard()
		return nil, err
	}
	return x, nil
}

func (x *extraction) read(r io.Reader) error {
	res := x.res
	tr := tar.NewReader(r)
	links := linkSet{}
	made := map[string]bool{} // files this archive made, by clean name
	skip := func(n, why string) { res.Skipped = append(res.Skipped, api.SkippedEntry{Name: n, Reason: why}) }
	top := x.top
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read the archive from the sandbox: %w", err)
		}
		n, reason := links.checkHeader(h)
		if reason == "" && n != top && !strings.HasPrefix(n, top+"/") {
			reason = "outside the path copied"
		}
		if reason == "" && h.Typeflag == tar.TypeLink {
			target, _ := entryName(h.Linkname)
			switch {
			case target != top && !strings.HasPrefix(target, top+"/"):
				reason = "hard link to outside the path copied"
			case !made[target]:
				reason = fmt.Sprintf("hard link to %q, not a file this copy made", target)
			}
			h.Linkname = strings.TrimPrefix(target, top+"/")
		}
		if reason != "" {
			skip(n, reason)
			continue
		}
		if n == top {
			// The top entry becomes name, in the staging folder.
			if err := x.begin(h); err != nil {
				return err
			}
			if h.Typeflag != tar.TypeDir {
				if err := writeOne(x.stage, x.name, h, tr, res); err != nil {
					return err
				}
				made[n] = true
			}
			continue
		}
		if x.root == nil {
			skip(n, "comes before its folder "+top)
			continue
		}
		rel := strings.TrimPrefix(n, top+"/")
		if h.Typeflag == tar.TypeDir {
			if err := x.root.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				skip(n, err.Error())
				continue
			}
			res.Entries++
			x.dirs = append(x.dirs, &tar.Header{Name: rel, Mode: h.Mode, ModTime: h.ModTime})
			continue
		}
		delete(made, n)
		if err := writeOne(x.root, rel, h, tr, res); err != nil {
			skip(n, err.Error())
			continue
		}
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeLink {
			made[n] = true
		}
	}
	// The padding after the end, so the sandbox's tar ends well.
	if n, err := io.Copy(io.Discard, io.LimitReader(r, maxTrailer+1)); err != nil {
		return fmt.Errorf("read the archive from the sandbox: %w", err)
	} else if n > maxTrailer {
		return fmt.Errorf("read the archive from the sandbox: more than %d bytes follow its end", maxTrailer)
	}
	return nil
}

// begin makes the staging folder for the top entry h: beside the target,
// or inside it when both are folders (the copy then merges into it).
func (x *extraction) begin(h *tar.Header) error {
	if x.stage != nil {
		return fmt.Errorf("the archive holds %s twice", x.top)
	}
	target := filepath.Join(x.parent.Name(), x.name)
	fi, err := x.parent.Lstat(x.name)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err == nil && h.Typeflag != tar.TypeDir && fi.IsDir():
		return fmt.Errorf("%s is a folder: a folder of that name is in the way; nothing was copied", target)
	case err == nil && h.Typeflag == tar.TypeDir && !fi.IsDir():
		return fmt.Errorf("%s exists and is not a folder; nothing was copied into it", target)
	}
	x.merge = err == nil && h.Typeflag == tar.TypeDir
	x.stageIn = x.parent
	if x.merge {
		if x.stageIn, err = x.parent.OpenRoot(x.name); err != nil {
			return err
		}
	}
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		x.stageName = ".litterbox-cp-" + hex.EncodeToString(b[:])
		if err = x.stageIn.Mkdir(x.stageName, 0o700); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		x.stageName = ""
		return err
	}
	if x.stage, err = x.stageIn.OpenRoot(x.stageName); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeDir {
		return nil
	}
	x.root = x.stage
	if !x.merge {
		if err := x.stage.Mkdir(x.name, 0o700); err != nil {
			return err
		}
		if x.root, err = x.stage.OpenRoot(x.name); err != nil {
			return err
		}
	}
	x.res.Entries++
	x.dirs = append(x.dirs, &tar.Header{Name: ".", Mode: h.Mode, ModTime: h.ModTime})
	return nil
}

// commit moves what was staged into place: the top entry as the target,
// replacing a file or link of that name, or, merging into an existing
// folder, each entry (a file or link replaced, a folder merged; a folder
// is never replaced by a file, nor a file by a folder). Folders get their
// modes and times last.
func (x *extraction) commit() error {
	if x.stage == nil {
		return nil // nothing was copied
	}
	if x.merge {
		if err := x.mergeInto(x.stageName, ""); err != nil {
			return err
		}
	} else {
		if fi, err := x.parent.Lstat(x.name); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is a folder: a folder of that name is in the way; nothing was copied", filepath.Join(x.parent.Name(), x.name))
		}
		if err := x.parent.Rename(path.Join(x.stageName, x.name), x.name); err != nil {
			return err
		}
	}
	// What a merge left (entries in the way, named in Skipped) goes.
	if err := x.stageIn.RemoveAll(x.stageName); err != nil {
		return err
	}
	x.stageName = ""
	if len(x.dirs) == 0 {
		return nil
	}
	root, err := x.parent.OpenRoot(x.name)
	if err != nil {
		return err
	}
	defer root.Close()
	// Deepest first: a read-only folder must still take its files.
	sort.Slice(x.dirs, func(i, j int) bool { return x.dirs[i].Name > x.dirs[j].Name })
	for _, d := range x.dirs {
		_ = root.Chmod(d.Name, fs.FileMode(d.Mode&0o777))
		_ = root.Chtimes(d.Name, time.Now(), d.ModTime)
	}
	return nil
}

// mergeInto moves the entries of the staged folder from into the target
// folder's to (both in the target's root).
func (x *extraction) mergeInto(from, to string) error {
	f, err := x.stageIn.Open(from)
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := path.Join(from, e.Name()), path.Join(to, e.Name())
		fi, err := x.stageIn.Lstat(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = x.stageIn.Rename(src, dst)
		case err != nil:
		case e.IsDir() && fi.IsDir():
			err = x.mergeInto(src, dst)
		case e.IsDir():
			x.res.Skipped = append(x.res.Skipped, api.SkippedEntry{Name: x.top + "/" + dst, Reason: "a file or link of that name is in the way"})
		case fi.IsDir():
			x.res.Skipped = append(x.res.Skipped, api.SkippedEntry{Name: x.top + "/" + dst, Reason: "a folder of that name is in the way"})
		default:
			err = x.stageIn.Rename(src, dst)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// discard removes the staging folder, with whatever commit left in it,
// and closes the roots.
func (x *extraction) discard() {
	if x.root != nil && x.root != x.stage {
		x.root.Close()
	}
	if x.stage != nil {
		x.stage.Close()
	}
	if x.stageName != "" {
		_ = x.stageIn.RemoveAll(x.stageName)
	}
	if x.stageIn != nil && x.stageIn != x.parent {
		x.stageIn.Close()
	}
	x.parent.Close()
}

// writeOne writes one file, symbolic link or hard link as name in root,
// replacing what is there unless it is a folder.
func writeOne(root *os.Root, name string, h *tar.Header, r io.Reader, res *extractResult) error {
	if fi, err := root.Lstat(name); err == nil {
		if fi.IsDir() {
			return errors.New("a folder of that name is in the way")
		}
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeSymlink:
		if err := root.Symlink(h.Linkname, name); err != nil {
			return err
		}
	case tar.TypeLink:
		if err := root.Link(h.Linkname, name); err != nil {
			return err
		}
	default:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(f, r)
		res.Bytes += n
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := root.Chmod(name, fs.FileMode(h.Mode&0o777)); err != nil {
			return err
		}
		_ = root.Chtimes(name, time.Now(), h.ModTime)
	}
	res.Entries++
	return nil
}
