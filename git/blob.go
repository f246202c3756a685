package git

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// FileAt returns the content of the file at path in commit's tree, or
// ok=false when there is none, with one `git cat-file --batch`, which answers
// "missing" instead of failing. Reading from a commit, not the working tree,
// gives what a sandbox made from that commit holds.
func (g *Repo) FileAt(ctx context.Context, commit, path string) (content []byte, ok bool, err error) {
	res, err := g.R.Run(ctx, g.Cmd("cat-file", "--batch").WithStdin(strings.NewReader(commit+":"+path+"\n")))
	if err != nil {
		return nil, false, err
	}
	return ParseCatFileBlob(res.Stdout, path)
}

// ParseCatFileBlob reads one answer of `git cat-file --batch`: "<id> blob
// <size>\n<content>\n", or "<name> missing". Anything but a blob (a
// directory, a submodule) is an error naming path.
func ParseCatFileBlob(out []byte, path string) (content []byte, ok bool, err error) {
	header, rest, _ := bytes.Cut(out, []byte("\n"))
	// "<commit>:<path> missing" repeats the path, which may hold spaces; a
	// found object's header ends in its size instead.
	if bytes.HasSuffix(header, []byte(" missing")) {
		return nil, false, nil
	}
	_, typ, size, err := ParseBatchHeader(string(header))
	if err != nil {
		return nil, false, fmt.Errorf("unexpected git cat-file answer %q", header)
	}
	if typ != "blob" {
		return nil, false, fmt.Errorf("%s is a %s, not a file", path, typ)
	}
	if size > int64(len(rest)) {
		return nil, false, fmt.Errorf("unexpected git cat-file answer %q", header)
	}
	return rest[:size], true, nil
}

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
