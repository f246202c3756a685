package git

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
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

// Trees reads the trees at dirs ("" for the root) of commit. A dir that is
// missing or not a tree maps to nil; every dir asked for is a key.
//
// Trees are asked for by id, never by path, one at a time from one
// `git cat-file --batch`, walking down from the root: a name is bytes, and a
// path in an object name is parsed by git (a newline ends the request, a CR
// before it is dropped, and suffixes such as "^{tree}", "~1" or "@{-1}" mean
// something), so no name of the sandbox's ever reaches git as text.
func (g *Repo) Trees(ctx context.Context, commit string, dirs []string) (map[string]map[string]TreeEntry, error) {
	if len(dirs) == 0 {
		return map[string]map[string]TreeEntry{}, nil
	}
	o := g.Objects(ctx)
	defer o.Close()
	out, err := o.Trees(commit, dirs)
	if err != nil {
		return nil, err
	}
	return out, o.Close()
}

// Objects is one `git cat-file --batch` asked several questions in turn
// (a ref's commit, then trees of that commit), so a snapshot that reads
// its branch starts one git process, not one per question. Close ends it.
type Objects struct{ cf *batch }

// Objects starts a reader of the repository's objects.
func (g *Repo) Objects(ctx context.Context) *Objects { return &Objects{g.startBatch(ctx)} }

// Close ends the reader and says whether git failed.
func (o *Objects) Close() error { return o.cf.close() }

// Commit is the commit ref (a full ref name, such as refs/heads/main)
// points to, as ResolveRef says it, or ok=false when there is none.
func (o *Objects) Commit(ref string) (id string, ok bool, err error) {
	if ref == "" || strings.ContainsAny(ref, "\n\r\x00") {
		return "", false, fmt.Errorf("cat-file: bad ref name %q", ref)
	}
	name := ref + "^{commit}"
	if _, err := io.WriteString(o.cf.in, name+"\n"); err != nil {
		return "", false, o.cf.fail(err)
	}
	id, typ, _, err := readBatch(o.cf.out, name)
	if err != nil {
		return "", false, o.cf.fail(err)
	}
	if typ != "commit" {
		return "", false, nil
	}
	return id, true, nil
}

// Trees is Repo.Trees, asked of this reader.
func (o *Objects) Trees(commit string, dirs []string) (map[string]map[string]TreeEntry, error) {
	out := make(map[string]map[string]TreeEntry, len(dirs))
	if len(dirs) == 0 {
		return out, nil
	}
	w := &treeWalker{cf: o.cf, cache: map[string]map[string]TreeEntry{}}
	root, err := o.cf.tree(commit + "^{tree}")
	if err != nil {
		return nil, err
	}
	w.cache[""] = root
	for _, d := range dirs {
		t, err := w.get(d)
		if err != nil {
			return nil, err
		}
		out[d] = t
	}
	return out, nil
}

// TreeFiles lists what lies under each of dirs (all levels) in commit:
// the directories (dirs themselves included, when they are trees) and the
// files, as full paths. Names are bytes, as in Trees.
func (g *Repo) TreeFiles(ctx context.Context, commit string, dirs []string) (trees, files []string, err error) {
	if len(dirs) == 0 {
		return nil, nil, nil
	}
	o := g.Objects(ctx)
	defer o.Close()
	if trees, files, err = o.TreeFiles(commit, dirs); err != nil {
		return nil, nil, err
	}
	return trees, files, o.Close()
}

// TreeFiles is Repo.TreeFiles, asked of this reader.
func (o *Objects) TreeFiles(commit string, dirs []string) (trees, files []string, err error) {
	if len(dirs) == 0 {
		return nil, nil, nil
	}
	cf := o.cf
	w := &treeWalker{cf: cf, cache: map[string]map[string]TreeEntry{}}
	root, err := cf.tree(commit + "^{tree}")
	if err != nil {
		return nil, nil, err
	}
	w.cache[""] = root
	var walk func(d string, t map[string]TreeEntry) error
	walk = func(d string, t map[string]TreeEntry) error {
		trees = append(trees, d)
		for name, e := range t {
			p := path.Join(d, name)
			switch {
			case e.IsTree():
				sub, err := w.get(p)
				if err != nil {
					return err
				}
				if err := walk(p, sub); err != nil {
					return err
				}
			case e.Mode != "160000":
				files = append(files, p)
			}
		}
		return nil
	}
	for _, d := range dirs {
		t, err := w.get(d)
		if err != nil {
			return nil, nil, err
		}
		if t != nil {
			if err := walk(d, t); err != nil {
				return nil, nil, err
			}
		}
	}
	return trees, files, nil
}

// treeWalker reads trees by path, each once, by the ids of their parents'
// entries.
type treeWalker struct {
	cf    *batch
	cache map[string]map[string]TreeEntry
}

func (w *treeWalker) get(d string) (map[string]TreeEntry, error) {
	if t, ok := w.cache[d]; ok {
		return t, nil
	}
	dir, name := "", d
	if i := strings.LastIndexByte(d, '/'); i >= 0 {
		dir, name = d[:i], d[i+1:]
	}
	parent, err := w.get(dir)
	if err != nil {
		return nil, err
	}
	var t map[string]TreeEntry
	if e, ok := parent[name]; ok && e.IsTree() {
		if t, err = w.cf.tree(e.ID); err != nil {
			return nil, err
		}
	}
	w.cache[d] = t
	return t, nil
}

// batch is a `git cat-file --batch` asked one object at a time.
type batch struct {
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan error
	err  error
	shut bool
}

func (g *Repo) startBatch(ctx context.Context) *batch {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	b := &batch{in: inW, out: bufio.NewReaderSize(outR, 1<<16), done: make(chan error, 1)}
	go func() {
		_, err := g.R.Run(ctx, g.Cmd("cat-file", "--batch").WithStdin(inR).WithStdout(outW))
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
		if err == io.EOF {
			err = nil
		}
		b.done <- err
	}()
	return b
}

// tree reads the object named name (an id, or "<id>^{tree}"): its entries
// when it is a tree, nil when it is missing or not a tree.
func (b *batch) tree(name string) (map[string]TreeEntry, error) {
	if _, err := io.WriteString(b.in, name+"\n"); err != nil {
		return nil, b.fail(err)
	}
	typ, body, err := ReadBatchObject(b.out, name)
	if err != nil {
		return nil, b.fail(err)
	}
	if typ != "tree" {
		return nil, nil
	}
	return ParseTree(body)
}

// fail prefers the process's own error (its stderr) to a broken pipe.
func (b *batch) fail(err error) error {
	if perr := b.close(); perr != nil {
		return perr
	}
	return err
}

func (b *batch) close() error {
	if !b.shut {
		b.shut = true
		b.in.Close()
		b.err = <-b.done
	}
	return b.err
}

// ReadBatchObject reads one answer of `git cat-file --batch` to a request
// for name: the header "<oid> <type> <size>" and the object with its
// trailing newline, or "<name> missing" (also "ambiguous"), for which typ is
// "". Only the answer's own shape is trusted: the name is compared whole,
// never split, since it may hold any byte.
func ReadBatchObject(r *bufio.Reader, name string) (typ string, body []byte, err error) {
	_, typ, body, err = readBatch(r, name)
	return typ, body, err
}

// readBatch is ReadBatchObject, with the object's id.
func readBatch(r *bufio.Reader, name string) (oid, typ string, body []byte, err error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return "", "", nil, fmt.Errorf("cat-file: short output for %q", name)
	}
	header = strings.TrimSuffix(header, "\n")
	if header == name+" missing" || header == name+" ambiguous" {
		return "", "", nil, nil
	}
	oid, typ, size, err := ParseBatchHeader(header)
	if err != nil {
		return "", "", nil, err
	}
	body = make([]byte, 0, min(size, 1<<20))
	buf := bytes.NewBuffer(body)
	if _, err := io.CopyN(buf, r, size); err != nil {
		return "", "", nil, fmt.Errorf("cat-file: short object for %q", name)
	}
	if nl, err := r.ReadByte(); err != nil || nl != '\n' {
		return "", "", nil, fmt.Errorf("cat-file: no newline after the object for %q", name)
	}
	return oid, typ, buf.Bytes(), nil
}

// ParseBatchHeader parses the header of a found object, "<oid> <type>
// <size>": exactly three fields and a decimal size. Callers that know the
// id they asked for compare it.
func ParseBatchHeader(header string) (oid, typ string, size int64, err error) {
	f := strings.Split(header, " ")
	if len(f) != 3 || f[0] == "" || f[1] == "" {
		return "", "", 0, fmt.Errorf("cat-file: bad header %q", header)
	}
	size, err = strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != f[2] {
		return "", "", 0, fmt.Errorf("cat-file: bad size in %q", header)
	}
	return f[0], f[1], size, nil
}

// ParseTree parses a raw tree object: "<mode> <name>\0<20-byte id>"...
// A name is any bytes but NUL (git itself keeps '/' out of them).
func ParseTree(raw []byte) (map[string]TreeEntry, error) {
	entries := map[string]TreeEntry{}
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp <= 0 || nul < sp || len(raw) < nul+21 {
			return nil, errors.New("malformed tree object")
		}
		mode, name := string(raw[:sp]), string(raw[sp+1:nul])
		entries[name] = TreeEntry{Mode: mode, ID: hex.EncodeToString(raw[nul+1 : nul+21])}
		raw = raw[nul+21:]
	}
	return entries, nil
}

// BlobID is the id git gives a blob with this content (SHA-1 repositories).
func BlobID(content []byte) string {
	h := NewBlobHash(int64(len(content)))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

// NewBlobHash starts the id of a blob of size bytes: write the content to
// it, as it streams, then Sum.
func NewBlobHash(size int64) hash.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}
