package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// FileAt returns the content of the file at path in commit's tree, or
// ok=false when there is none, with one `git cat-file --batch`, which answers
// "missing" instead of failing. Reading from a commit, not the working tree,
// gives what a sandbox made from that commit holds.
func (g *Repo) FileAt(ctx context.Context, commit, path string) (content []byte, ok bool, err error) {
	fs, err := g.FilesAt(ctx, commit, path)
	if err != nil {
		return nil, false, err
	}
	return fs[0].Content, fs[0].OK, fs[0].Err
}

// FileContent is one file FilesAt read: OK is false when there is none,
// Err says the path names something else (a directory, a submodule).
type FileContent struct {
	Content []byte
	OK      bool
	Err     error
}

// FilesAt is FileAt for several paths (a path holding a line break is an
// error: git reads its input by lines), with one
// `git cat-file --batch`: each process saved is a few milliseconds of a
// create.
func (g *Repo) FilesAt(ctx context.Context, commit string, paths ...string) ([]FileContent, error) {
	var in strings.Builder
	if err := oneLine(commit); err != nil {
		return nil, err
	}
	for _, p := range paths {
		if err := oneLine(p); err != nil {
			return nil, err
		}
		in.WriteString(commit + ":" + p + "\n")
	}
	res, err := g.R.Run(ctx, g.Cmd("cat-file", "--batch").WithStdin(strings.NewReader(in.String())))
	if err != nil {
		return nil, err
	}
	out := res.Stdout
	fs := make([]FileContent, len(paths))
	for i, p := range paths {
		var f FileContent
		if f.Content, f.OK, f.Err, out, err = nextBlob(out, p); err != nil {
			return nil, err
		}
		fs[i] = f
	}
	return fs, nil
}

// ParseCatFileBlob reads one answer of `git cat-file --batch`: "<id> blob
// <size>\n<content>\n", or "<name> missing". Anything but a blob (a
// directory, a submodule) is an error naming path.
func ParseCatFileBlob(out []byte, path string) (content []byte, ok bool, err error) {
	content, ok, notFile, _, err := nextBlob(out, path)
	return content, ok, errors.Join(err, notFile)
}

// nextBlob is ParseCatFileBlob, and what follows the answer; notFile is
// an answer for something else than a blob, after which the next answer
// can still be read, err one that cannot be read.
func nextBlob(out []byte, path string) (content []byte, ok bool, notFile error, rest []byte, err error) {
	header, rest, _ := bytes.Cut(out, []byte("\n"))
	// "<commit>:<path> missing" repeats the path, which may hold spaces; a
	// found object's header ends in its size instead.
	if bytes.HasSuffix(header, []byte(" missing")) {
		return nil, false, nil, rest, nil
	}
	_, typ, size, err := ParseBatchHeader(string(header))
	if err != nil || size > int64(len(rest)) {
		return nil, false, nil, nil, fmt.Errorf("unexpected git cat-file answer %q", header)
	}
	content, rest = rest[:size], rest[size:]
	rest, _ = bytes.CutPrefix(rest, []byte("\n"))
	if typ != "blob" {
		return nil, false, notAFile(path, typ), rest, nil
	}
	return content, true, nil, rest, nil
}

// oneLine refuses a name that would be two lines of cat-file's input:
// every answer after it would fall a place off.
func oneLine(name string) error {
	if strings.ContainsAny(name, "\n\r") {
		return fmt.Errorf("cannot read %q with git cat-file: the name holds a line break", name)
	}
	return nil
}

// notAFile is the error of a cat-file answer for path that is not a blob
// (a directory, a submodule).
func notAFile(path, typ string) error { return fmt.Errorf("%s is a %s, not a file", path, typ) }

// TreeAt is the id of the tree at dir ("." for the root) in commit: it
// names the tree's whole content.
func (g *Repo) TreeAt(ctx context.Context, commit, dir string) (string, error) {
	spec := commit + "^{tree}"
	if dir != "." && dir != "" {
		spec = commit + ":" + dir
	}
	out, err := g.output(ctx, "rev-parse", "--verify", "--end-of-options", spec+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("find the tree %s in %s: %w", dir, commit, err)
	}
	return out, nil
}

// HeadFiles is Head, the commit each of refs names ("" for none, as
// ResolveRef's ok=false), and FilesAt of paths at that HEAD, from one `git
// cat-file --batch` asked one line at a time: HEAD is resolved first and
// the files are read from the commit it named, so a HEAD that moves
// meanwhile is not mixed in. A create asks this once where it took three
// git processes (rev-parse twice, cat-file), each a few milliseconds of
// CPU when ten creates share two cores.
func (g *Repo) HeadFiles(ctx context.Context, refs []string, paths ...string) (head string, ids []string, files []FileContent, err error) {
	for _, n := range append(slices.Clone(refs), paths...) {
		if err := oneLine(n); err != nil {
			return "", nil, nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := g.startBatch(ctx)
	defer b.close()
	ask := func(name string) (oid, typ string, body []byte, err error) {
		if _, err := io.WriteString(b.in, name+"\n"); err != nil {
			return "", "", nil, b.fail(err)
		}
		if oid, typ, body, err = readBatch(b.out, name); err != nil {
			return "", "", nil, b.fail(err)
		}
		return oid, typ, body, nil
	}
	if head, _, _, err = ask("HEAD^{commit}"); err != nil {
		return "", nil, nil, err
	}
	if head == "" {
		return "", nil, nil, g.noCommits()
	}
	ids = make([]string, len(refs))
	for i, ref := range refs {
		if ids[i], _, _, err = ask(ref + "^{commit}"); err != nil {
			return "", nil, nil, err
		}
	}
	files = make([]FileContent, len(paths))
	for i, p := range paths {
		_, typ, body, err := ask(head + ":" + p)
		switch {
		case err != nil:
			return "", nil, nil, err
		case typ == "":
		case typ != "blob":
			files[i].Err = notAFile(p, typ)
		default:
			files[i] = FileContent{Content: body, OK: true}
		}
	}
	if err := b.close(); err != nil {
		return "", nil, nil, err
	}
	return head, ids, files, nil
}
