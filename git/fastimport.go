package git

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Change is one path to set or delete in a commit built by Commit.
type Change struct {
	Path   string
	Delete bool
	Mode   string // 100644, 100755 or 120000 (the content is the link target)
	// ID, when set, names a blob already in the repository (written by a
	// BlobWriter), and Content is not used.
	ID      string
	Content []byte
}

// CommitSpec is a commit on top of Parent that applies Changes to its tree.
type CommitSpec struct {
	Ref     string // moved to the new commit, only as a fast-forward of Parent
	Parent  string
	Message string
	Author  string // "Name <email>"
	When    time.Time
	Changes []Change
}

// Commit writes a commit with git fast-import and moves Ref to it. It never
// touches a working tree, an index or HEAD, never runs hooks and never signs.
// fast-import refuses to move Ref unless the new commit contains Ref's
// current value, so a Ref moved by someone else since Parent was read is an
// error, not a lost commit. With --done, a stream cut short (a killed
// process) writes nothing.
//
// A directory with bigDir or more changed entries of its own is written with
// `git mktree` and given to fast-import whole: fast-import looks each path up
// entry by entry, so its cost grew with the square of one directory's
// entries (300,000 empty files in a folder stalled every snapshot for ten
// minutes; 80,000 took 43 s).
func (g *Repo) Commit(ctx context.Context, c CommitSpec) (string, error) {
	big, handled, err := g.bigTrees(ctx, c)
	if err != nil {
		return "", fmt.Errorf("write commit on %s: %w", c.Ref, err)
	}
	var in bytes.Buffer
	ts := fmt.Sprintf("%d +0000", c.When.Unix())
	fmt.Fprintf(&in, "commit %s\nmark :1\nauthor %s %s\ncommitter %s %s\n", c.Ref, c.Author, ts, c.Author, ts)
	fmt.Fprintf(&in, "data %d\n%s\n", len(c.Message), c.Message)
	fmt.Fprintf(&in, "from %s\n", c.Parent)
	// Deletions first, so a file replaced by a directory (or the reverse)
	// is removed before its successor is written; but a big directory's
	// tree goes in before the deletions below it, which it would undo.
	under := func(p string) bool {
		for _, b := range big {
			if b.dir == p || strings.HasPrefix(b.dir, p+"/") {
				return true
			}
		}
		return false
	}
	for _, ch := range c.Changes {
		if ch.Delete && under(ch.Path) {
			fmt.Fprintf(&in, "D %s\n", QuotePath(ch.Path))
		}
	}
	for _, b := range big {
		fmt.Fprintf(&in, "M 040000 %s %s\n", b.id, QuotePath(b.dir))
	}
	for i, ch := range c.Changes {
		if ch.Delete && !handled[i] && !under(ch.Path) {
			fmt.Fprintf(&in, "D %s\n", QuotePath(ch.Path))
		}
	}
	for i, ch := range c.Changes {
		if handled[i] {
			continue
		}
		if !ch.Delete && ch.ID != "" {
			fmt.Fprintf(&in, "M %s %s %s\n", ch.Mode, ch.ID, QuotePath(ch.Path))
		} else if !ch.Delete {
			fmt.Fprintf(&in, "M %s inline %s\ndata %d\n", ch.Mode, QuotePath(ch.Path), len(ch.Content))
			in.Write(ch.Content)
			in.WriteByte('\n')
		}
	}
	in.WriteString("get-mark :1\ndone\n")
	res, err := g.R.Run(ctx, g.Cmd("fast-import", "--done", "--quiet", "--cat-blob-fd=1").WithStdin(&in))
	if err != nil {
		return "", fmt.Errorf("write commit on %s: %w", c.Ref, err)
	}
	id := strings.TrimSpace(string(res.Stdout))
	if len(id) != 40 {
		return "", fmt.Errorf("write commit on %s: unexpected fast-import output %q", c.Ref, res.Stdout)
	}
	return id, nil
}

// QuotePath quotes a path for fast-import when it needs it: C-style, as git
// does, for a leading quote, control characters, quotes and backslashes.
func QuotePath(p string) string {
	needs := strings.HasPrefix(p, `"`)
	for i := 0; i < len(p) && !needs; i++ {
		needs = p[i] < 0x20 || p[i] == '\\' || p[i] == '"' || p[i] == 0x7f
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// bigDir is how many changed entries of its own make a directory big enough
// to be written with mktree (Commit).
const bigDir = 1000

// bigTree is a directory's new tree, written.
type bigTree struct {
	dir, id string
}

// bigTrees writes the new tree of each directory with bigDir or more of c's
// changes directly in it (blobs named by id, and deletions), with `git
// mktree`: its entries in c.Parent with those changes made. They come
// parents first; handled are the changes they hold, by index.
func (g *Repo) bigTrees(ctx context.Context, c CommitSpec) ([]bigTree, map[int]bool, error) {
	byDir := map[string][]int{}
	for i, ch := range c.Changes {
		if ch.Delete || ch.ID != "" {
			d := ""
			if j := strings.LastIndexByte(ch.Path, '/'); j >= 0 {
				d = ch.Path[:j]
			}
			byDir[d] = append(byDir[d], i)
		}
	}
	var dirs []string
	for d, changes := range byDir {
		if len(changes) >= bigDir {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		return nil, nil, nil
	}
	// Parents first: a subdirectory's tree is set inside its parent's.
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	old, err := g.Trees(ctx, c.Parent, dirs)
	if err != nil {
		return nil, nil, err
	}
	handled := map[int]bool{}
	var out []bigTree
	for _, d := range dirs {
		entries := maps.Clone(old[d])
		if entries == nil {
			entries = map[string]TreeEntry{}
		}
		// Deletions first, as fast-import would make them.
		for _, del := range []bool{true, false} {
			for _, i := range byDir[d] {
				ch := c.Changes[i]
				if ch.Delete != del {
					continue
				}
				name := ch.Path[strings.LastIndexByte(ch.Path, '/')+1:]
				if del {
					delete(entries, name)
				} else {
					entries[name] = TreeEntry{Mode: ch.Mode, ID: ch.ID}
				}
				handled[i] = true
			}
		}
		id, err := g.mktree(ctx, entries)
		if err != nil {
			return nil, nil, fmt.Errorf("write the tree of %q: %w", d, err)
		}
		out = append(out, bigTree{d, id})
	}
	return out, handled, nil
}

// mktree writes a tree of entries, by name, with `git mktree`, which sorts
// them. Its objects are taken to exist.
func (g *Repo) mktree(ctx context.Context, entries map[string]TreeEntry) (string, error) {
	var in bytes.Buffer
	for name, e := range entries {
		mode, kind := e.Mode, "blob"
		switch {
		case e.IsTree():
			mode, kind = "040000", "tree"
		case mode == "160000":
			kind = "commit"
		}
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", mode, kind, e.ID, name)
	}
	res, err := g.R.Run(ctx, g.Cmd("mktree", "-z", "--missing").WithStdin(&in))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(res.Stdout))
	if len(id) != 40 {
		return "", fmt.Errorf("git mktree: unexpected output %q", res.Stdout)
	}
	return id, nil
}
