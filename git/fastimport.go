package git

import (
	"bytes"
	"context"
	"fmt"
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
func (g *Repo) Commit(ctx context.Context, c CommitSpec) (string, error) {
	var in bytes.Buffer
	ts := fmt.Sprintf("%d +0000", c.When.Unix())
	fmt.Fprintf(&in, "commit %s\nmark :1\nauthor %s %s\ncommitter %s %s\n", c.Ref, c.Author, ts, c.Author, ts)
	fmt.Fprintf(&in, "data %d\n%s\n", len(c.Message), c.Message)
	fmt.Fprintf(&in, "from %s\n", c.Parent)
	// Deletions first, so a file replaced by a directory (or the reverse)
	// is removed before its successor is written.
	for _, ch := range c.Changes {
		if ch.Delete {
			fmt.Fprintf(&in, "D %s\n", QuotePath(ch.Path))
		}
	}
	for _, ch := range c.Changes {
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
