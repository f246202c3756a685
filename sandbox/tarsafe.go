package sandbox

import (
	"archive/tar"
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
)

// The host's half of cp: tar archives are read and written here with
// archive/tar, never by a host tar, so nothing in an archive (from a sandbox
// or from stdin) is trusted. Every name is checked before it is used, every
// write goes through an os.Root (which cannot leave its directory), and no
// entry is written through a symbolic link the same archive made.

// SkippedEntry is an archive entry cp left out, with the reason.
type SkippedEntry struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

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
	var bad []SkippedEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, newError(ErrBadArchive, "the archive on stdin is not a readable tar stream: %v; nothing was copied.", err)
		}
		name, reason := links.checkHeader(h)
		if reason != "" {
			bad = append(bad, SkippedEntry{Name: name, Reason: reason})
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
		return 0, newError(ErrBadArchive, "the archive on stdin holds entries that could write outside the destination, so nothing was copied:\n%s", skippedList(bad))
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

func skippedList(s []SkippedEntry) string {
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
func archiveHost(src, top string, w io.Writer) (entries int, skipped []SkippedEntry, err error) {
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
			skipped = append(skipped, SkippedEntry{Name: name, Reason: "not a file, folder or link"})
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
	Skipped []SkippedEntry
}

// extract reads a tar archive whose entries all lie under the name top (as
// a sandbox's tar -c of one path writes them) and writes it as the entry
// name in the directory dir: top becomes name, and what lies under top goes
// under name. Nothing is written outside dir/name: entries with other names,
// absolute names, "..", or a path through a symbolic link the archive made
// are skipped and reported, and every write goes through an os.Root of
// dir/name. Links are made as links and never followed. Existing files are
// replaced; a folder is never replaced by a file.
func extract(r io.Reader, top, dir, name string) (*extractResult, error) {
	parent, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	res := &extractResult{}
	tr := tar.NewReader(r)
	var (
		root  *os.Root // dir/name, once it is known to be a folder
		dirs  []*tar.Header
		links = linkSet{}
	)
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	skip := func(n, why string) { res.Skipped = append(res.Skipped, SkippedEntry{Name: n, Reason: why}) }
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read the archive from the sandbox: %w", err)
		}
		n, reason := links.checkHeader(h)
		if reason == "" && n != top && !strings.HasPrefix(n, top+"/") {
			reason = "outside the path copied"
		}
		if reason != "" {
			skip(n, reason)
			continue
		}
		if n == top {
			// The top entry goes into dir by itself, as name.
			if h.Typeflag != tar.TypeDir {
				if err := writeOne(parent, name, h, tr, res); err != nil {
					return res, err
				}
				continue
			}
			if err := parent.Mkdir(name, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return res, err
			}
			if fi, err := parent.Lstat(name); err != nil || !fi.IsDir() {
				return res, fmt.Errorf("%s exists and is not a folder; nothing was copied into it", filepath.Join(dir, name))
			}
			if root, err = parent.OpenRoot(name); err != nil {
				return res, err
			}
			res.Entries++
			dirs = append(dirs, &tar.Header{Name: ".", Mode: h.Mode, ModTime: h.ModTime})
			continue
		}
		if root == nil {
			skip(n, "comes before its folder "+top)
			continue
		}
		rel := strings.TrimPrefix(n, top+"/")
		if h.Typeflag == tar.TypeDir {
			if err := root.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				skip(n, err.Error())
				continue
			}
			res.Entries++
			dirs = append(dirs, &tar.Header{Name: rel, Mode: h.Mode, ModTime: h.ModTime})
			continue
		}
		if h.Typeflag == tar.TypeLink {
			target, _ := entryName(h.Linkname)
			if target != top && !strings.HasPrefix(target, top+"/") {
				skip(n, "hard link to outside the path copied")
				continue
			}
			h.Linkname = strings.TrimPrefix(target, top+"/")
		}
		if err := writeOne(root, rel, h, tr, res); err != nil {
			skip(n, err.Error())
		}
	}
	// Folders get their modes and times last, deepest first: a read-only
	// folder must still take its files.
	sort.Slice(dirs, func(i, j int) bool { return dirs[i].Name > dirs[j].Name })
	for _, d := range dirs {
		if root == nil {
			break
		}
		_ = root.Chmod(d.Name, fs.FileMode(d.Mode&0o777))
		_ = root.Chtimes(d.Name, time.Now(), d.ModTime)
	}
	return res, nil
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
