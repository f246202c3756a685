package git

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// TreeEntry is one entry of a tree object.
type TreeEntry struct {
	Mode string // 100644, 100755, 120000, 040000, 160000
	ID   string
}

// IsTree reports whether the entry is a directory.
func (e TreeEntry) IsTree() bool { return e.Mode == "40000" || e.Mode == "040000" }

// Trees reads the trees at dirs ("" for the root) of commit with one
// git cat-file --batch. A dir that is missing or not a tree maps to nil.
//
// cat-file --batch reads one object name a line and drops a CR before the
// LF, so a dir whose name holds a newline or a CR (any file name is legal in
// a sandbox) cannot be asked for by path: it would be read as two names, or
// as another directory, and every answer after it would land on the wrong
// dir. Such a dir is reached instead by walking from its nearest plain
// ancestor, entry by entry, asking for each tree by id.
func (g *Repo) Trees(ctx context.Context, commit string, dirs []string) (map[string]map[string]TreeEntry, error) {
	var plain, odd []string
	for _, d := range dirs {
		if strings.ContainsAny(d, "\n\r") {
			odd = append(odd, d)
		} else {
			plain = append(plain, d)
		}
	}
	trees, err := g.treeBatch(ctx, commit, plain)
	if err != nil {
		return nil, err
	}
	for _, d := range odd {
		if trees[d], err = g.walkTree(ctx, commit, d); err != nil {
			return nil, err
		}
	}
	return trees, nil
}

// treeBatch asks one cat-file --batch for the trees at dirs, whose names
// hold no newline or CR.
func (g *Repo) treeBatch(ctx context.Context, commit string, dirs []string) (map[string]map[string]TreeEntry, error) {
	if len(dirs) == 0 {
		return map[string]map[string]TreeEntry{}, nil
	}
	var in bytes.Buffer
	for _, d := range dirs {
		if d == "" {
			fmt.Fprintf(&in, "%s^{tree}\n", commit)
		} else {
			fmt.Fprintf(&in, "%s:%s\n", commit, d)
		}
	}
	res, err := g.R.Run(ctx, g.Cmd("cat-file", "--batch").WithStdin(&in))
	if err != nil {
		return nil, err
	}
	return ParseTreeBatch(res.Stdout, dirs)
}

// walkTree reads the tree at dir by path up to its first component holding a
// newline or CR, then by the ids of the entries below it.
func (g *Repo) walkTree(ctx context.Context, commit, dir string) (map[string]TreeEntry, error) {
	comps := strings.Split(dir, "/")
	i := 0
	for i < len(comps) && !strings.ContainsAny(comps[i], "\n\r") {
		i++
	}
	base := strings.Join(comps[:i], "/")
	trees, err := g.treeBatch(ctx, commit, []string{base})
	if err != nil {
		return nil, err
	}
	t := trees[base]
	for _, c := range comps[i:] {
		e, ok := t[c]
		if !ok || !e.IsTree() {
			return nil, nil
		}
		// By id: the name holds no newline.
		if trees, err = g.treeBatch(ctx, e.ID, []string{""}); err != nil {
			return nil, err
		}
		t = trees[""]
	}
	return t, nil
}

// ParseTreeBatch parses `git cat-file --batch` output for trees asked in
// order dirs.
func ParseTreeBatch(out []byte, dirs []string) (map[string]map[string]TreeEntry, error) {
	trees := make(map[string]map[string]TreeEntry, len(dirs))
	r := bufio.NewReader(bytes.NewReader(out))
	for _, d := range dirs {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("cat-file: short output for %q", d)
		}
		f := strings.Fields(header)
		if len(f) == 2 && f[1] == "missing" {
			trees[d] = nil
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("cat-file: bad header %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("cat-file: bad size in %q", header)
		}
		body := make([]byte, size+1) // object plus its trailing newline
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("cat-file: short object for %q", d)
		}
		if f[1] != "tree" {
			trees[d] = nil
			continue
		}
		entries, err := ParseTree(body[:size])
		if err != nil {
			return nil, err
		}
		trees[d] = entries
	}
	return trees, nil
}

// ParseTree parses a raw tree object: "<mode> <name>\0<20-byte id>"...
func ParseTree(raw []byte) (map[string]TreeEntry, error) {
	entries := map[string]TreeEntry{}
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp < 0 || nul < sp || len(raw) < nul+21 {
			return nil, fmt.Errorf("malformed tree object")
		}
		mode, name := string(raw[:sp]), string(raw[sp+1:nul])
		entries[name] = TreeEntry{Mode: mode, ID: hex.EncodeToString(raw[nul+1 : nul+21])}
		raw = raw[nul+21:]
	}
	return entries, nil
}

// BlobID is the id git gives a blob with this content (SHA-1 repositories).
func BlobID(content []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
