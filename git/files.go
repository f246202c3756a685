package git

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// This file holds what a human's review of a diff reads: every file a range
// changes, cheap and whole, before any of the bodies; and the bodies
// themselves as plumbing writes them, whatever the user's diff config.

// FileChange is one file a diff changes: its path, its entry on each side,
// and how many lines it adds and deletes (none for a binary file).
type FileChange struct {
	RawChange
	Added, Deleted int
	Binary         bool
}

// What says what the change does to the file beyond its lines: "new",
// "deleted", a mode change, a binary file ("new, mode 100755", "mode 100644
// -> 100755, binary"). "" for a text file whose lines only change.
func (c FileChange) What() string {
	var parts []string
	switch {
	case !c.Old.Present():
		parts = append(parts, "new")
		if c.New.Mode != "100644" {
			parts = append(parts, "mode "+c.New.Mode)
		}
	case !c.New.Present():
		parts = append(parts, "deleted")
	case c.TypeChanged():
		parts = append(parts, "type "+c.Old.Mode+" -> "+c.New.Mode)
	case c.Old.Mode != c.New.Mode:
		parts = append(parts, "mode "+c.Old.Mode+" -> "+c.New.Mode)
	}
	if c.Binary {
		parts = append(parts, "binary")
	}
	return strings.Join(parts, ", ")
}

// TypeChanged reports whether the file changes type (a regular file, a
// symlink, a submodule): git's patch then deletes it and creates it anew,
// two parts under two headers.
func (c FileChange) TypeChanged() bool {
	kind := func(mode string) string { return strings.TrimSuffix(strings.TrimSuffix(mode, "755"), "644") }
	return c.Old.Present() && c.New.Present() && kind(c.Old.Mode) != kind(c.New.Mode)
}

// FileList is every file a diff changes, as far as its limits keep them:
// the first Files in the order a patch of them (PlainPatch) shows them,
// and the count and line sums of all of them.
type FileList struct {
	Files          []FileChange
	Total          int // files in all, kept or not
	Added, Deleted int // lines of all of them
}

// DiffFiles lists every file that differs between commits a and b, in the
// order a patch of them (PlainPatch) shows them, renames split into a
// deletion and an addition. It reads no file's body but to count lines.
func (g *Repo) DiffFiles(ctx context.Context, a, b string) ([]FileChange, error) {
	l, err := g.ListFiles(ctx, a, b, -1, -1)
	if err != nil {
		return nil, err
	}
	return l.Files, nil
}

// ListFiles is DiffFiles keeping at most keep files whose names take at
// most nameBytes (-1: no limit), while it counts them all: an agent's
// branch of a million files, or of names of kilobytes, costs the host
// neither the memory of its list nor of git's answer, which is read as it
// comes.
func (g *Repo) ListFiles(ctx context.Context, a, b string, keep, nameBytes int) (*FileList, error) {
	p := &fileParser{keep: keep, nameBytes: nameBytes}
	_, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", "--numstat", "--end-of-options", a, b).WithStdout(p))
	if err == nil {
		err = p.end()
	}
	if p.err != nil {
		err = p.err
	}
	if err != nil {
		return nil, err
	}
	return &p.list, nil
}

// ParseDiffFiles parses `git diff-tree -r -z --raw --numstat --no-renames
// --no-abbrev`: each file's raw record (":modes ids status" NUL path NUL),
// then each file's numstat record ("ADDED\tDELETED\tPATH" NUL, "-" for the
// counts of a binary file), in the same order. Names are bytes as they are:
// a name that looks like a record (":100644 ...", "1\t2\tx") is read by its
// place, never by its look.
func ParseDiffFiles(out string) ([]FileChange, error) {
	p := &fileParser{keep: -1, nameBytes: -1}
	if _, err := p.Write([]byte(out)); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return p.list.Files, nil
}

// maxRecord is the longest NUL-ended record a file list may hold: a name
// of 64 KiB is far past any file system's limit.
const maxRecord = 64 << 10

// fileParser reads a file list as git writes it, record by record,
// holding one record at most besides what it keeps.
type fileParser struct {
	keep, nameBytes int
	list            FileList
	names           int    // bytes of the names kept
	full            bool   // a file was left out: so are all after it
	rec             []byte // the record being read
	head            string // a raw record's header, waiting for its path
	raw             int    // raw records read
	counted         int    // numstat records read
	err             error
}

func (p *fileParser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && p.err == nil {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			p.rec = append(p.rec, b...)
			if len(p.rec) > maxRecord {
				p.err = fmt.Errorf("git diff-tree wrote a record of over %d KiB", maxRecord>>10)
			}
			break
		}
		p.rec = append(p.rec, b[:i]...)
		p.record(string(p.rec))
		p.rec, b = p.rec[:0], b[i+1:]
	}
	return n, p.err
}

func (p *fileParser) record(r string) {
	switch {
	case p.head != "":
		// the path of a raw record
		head := p.head
		p.head = ""
		fields := strings.Fields(head[1:])
		if len(fields) != 5 || r == "" {
			p.err = fmt.Errorf("unexpected git raw diff record %q", head)
			return
		}
		p.raw++
		p.list.Total++
		if p.full || (p.keep >= 0 && len(p.list.Files) >= p.keep) || (p.nameBytes >= 0 && p.names+len(r) > p.nameBytes) {
			p.full = true // kept in order: none after one left out
			return
		}
		c := FileChange{RawChange: RawChange{Path: r, Old: Entry{fields[0], fields[2]}, New: Entry{fields[1], fields[3]}}}
		if !c.Old.Present() {
			c.Old = Entry{}
		}
		if !c.New.Present() {
			c.New = Entry{}
		}
		p.names += len(r)
		p.list.Files = append(p.list.Files, c)
	case p.counted == 0 && strings.HasPrefix(r, ":"):
		p.head = r
	default:
		added, tail, ok1 := strings.Cut(r, "\t")
		deleted, path, ok2 := strings.Cut(tail, "\t")
		k := p.counted
		p.counted++
		if !ok1 || !ok2 || k >= p.raw {
			p.err = fmt.Errorf("unexpected git numstat record %q", r)
			return
		}
		var c FileChange
		if added == "-" && deleted == "-" {
			c.Binary = true
		} else {
			var err1, err2 error
			c.Added, err1 = strconv.Atoi(added)
			c.Deleted, err2 = strconv.Atoi(deleted)
			if err1 != nil || err2 != nil {
				p.err = fmt.Errorf("unexpected git numstat record %q", r)
				return
			}
		}
		p.list.Added += c.Added
		p.list.Deleted += c.Deleted
		if k < len(p.list.Files) {
			f := &p.list.Files[k]
			if path != f.Path {
				p.err = fmt.Errorf("unexpected git numstat record %q for %q", r, f.Path)
				return
			}
			f.Added, f.Deleted, f.Binary = c.Added, c.Deleted, c.Binary
		}
	}
}

// end checks that the list ended whole: every file counted.
func (p *fileParser) end() error {
	if p.err == nil && (p.head != "" || len(p.rec) > 0 || p.counted != p.raw) {
		p.err = fmt.Errorf("git diff-tree listed %d files and counted the lines of %d", p.raw, p.counted)
	}
	return p.err
}

// PlainPatch writes the patch from a to b to w as plumbing writes it: the
// files in DiffFiles' order, one `diff --git` header each (two for a type
// change), renames split, no colour, none of the user's external diff or
// textconv filters, and binary files as text (--text: one NUL byte must
// not hide an executable script behind "Binary files differ"), so what
// it shows is the bytes a merge brings. It stops, with w's error, when w
// refuses more.
func (g *Repo) PlainPatch(ctx context.Context, a, b string, w io.Writer) error {
	_, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "-p", "--text", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", "--end-of-options", a, b).WithStdout(w))
	return err
}

// HoldPatch reads the patch from a to b, whose files list lists, into a
// PatchCutter within lim; git is stopped at lim.Read, or once past the
// files the list kept.
func (g *Repo) HoldPatch(ctx context.Context, a, b string, list *FileList, lim PatchLimits) (*PatchCutter, error) {
	c := NewPatchCutter(list.Files, len(list.Files) < list.Total, lim)
	err := g.PlainPatch(ctx, a, b, c)
	c.Close()
	if c.Stopped {
		err = nil // git was stopped on purpose
	}
	return c, err
}
