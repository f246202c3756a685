package git

import (
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

// DiffFiles lists every file that differs between commits a and b, in the
// order a patch of them (PlainPatch) shows them, renames split into a
// deletion and an addition. It reads no file's body but to count lines.
func (g *Repo) DiffFiles(ctx context.Context, a, b string) ([]FileChange, error) {
	res, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", "--raw", "--numstat", "--end-of-options", a, b))
	if err != nil {
		return nil, err
	}
	return ParseDiffFiles(string(res.Stdout))
}

// ParseDiffFiles parses `git diff-tree -r -z --raw --numstat --no-renames
// --no-abbrev`: each file's raw record (":modes ids status" NUL path NUL),
// then each file's numstat record ("ADDED\tDELETED\tPATH" NUL, "-" for the
// counts of a binary file), in the same order. Names are bytes as they are:
// a name that looks like a record (":100644 ...", "1\t2\tx") is read by its
// place, never by its look.
func ParseDiffFiles(out string) ([]FileChange, error) {
	f := strings.Split(out, "\x00")
	if n := len(f); n > 0 && f[n-1] == "" {
		f = f[:n-1]
	}
	var files []FileChange
	i := 0
	for ; i < len(f) && strings.HasPrefix(f[i], ":"); i += 2 {
		fields := strings.Fields(f[i][1:])
		if len(fields) != 5 || i+1 >= len(f) || f[i+1] == "" {
			return nil, fmt.Errorf("unexpected git raw diff record %q", f[i])
		}
		c := FileChange{RawChange: RawChange{Path: f[i+1], Old: Entry{fields[0], fields[2]}, New: Entry{fields[1], fields[3]}}}
		if !c.Old.Present() {
			c.Old = Entry{}
		}
		if !c.New.Present() {
			c.New = Entry{}
		}
		files = append(files, c)
	}
	rest := f[i:]
	if len(rest) != len(files) {
		return nil, fmt.Errorf("git diff-tree listed %d files and counted the lines of %d", len(files), len(rest))
	}
	for k, rec := range rest {
		added, tail, ok1 := strings.Cut(rec, "\t")
		deleted, path, ok2 := strings.Cut(tail, "\t")
		if !ok1 || !ok2 || path != files[k].Path {
			return nil, fmt.Errorf("unexpected git numstat record %q for %q", rec, files[k].Path)
		}
		c := &files[k]
		if added == "-" && deleted == "-" {
			c.Binary = true
			continue
		}
		var err1, err2 error
		c.Added, err1 = strconv.Atoi(added)
		c.Deleted, err2 = strconv.Atoi(deleted)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("unexpected git numstat record %q", rec)
		}
	}
	return files, nil
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

// HoldPatch reads the patch from a to b, whose files are files (DiffFiles'
// list), into a PatchCutter within lim; git is stopped at lim.Read.
func (g *Repo) HoldPatch(ctx context.Context, a, b string, files []FileChange, lim PatchLimits) (*PatchCutter, error) {
	c := NewPatchCutter(files, lim)
	err := g.PlainPatch(ctx, a, b, c)
	c.Close()
	if c.Stopped {
		err = nil // git was stopped on purpose
	}
	return c, err
}
