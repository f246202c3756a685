package git

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/runner"
)

// This file holds what undoing a cut-short change of the user's working tree
// needs: the exact entries a change moves between, the object ids of files as
// they are on disk, and writing chosen entries back to the index and the
// working tree. Paths are bytes throughout (NUL-separated, never quoted).

// Entry is a tree or index entry: its mode ("100644", "100755", "120000",
// "160000") and object id. The zero Entry is "no entry".
type Entry struct {
	Mode string `json:"mode,omitempty"`
	ID   string `json:"id,omitempty"`
}

// Present reports whether e is an entry rather than its absence.
func (e Entry) Present() bool { return e.Mode != "" && e.Mode != "000000" }

// RawChange is one path that differs between two trees, with its entry on
// each side.
type RawChange struct {
	Path     string
	Old, New Entry
}

// RawDiff lists the paths that differ between commits or trees a and b, with
// both entries, renames split into a deletion and an addition.
func (g *Repo) RawDiff(ctx context.Context, a, b string) ([]RawChange, error) {
	res, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "-z", "--raw", "--no-abbrev", "--no-renames", "--end-of-options", a, b))
	if err != nil {
		return nil, err
	}
	return ParseRaw(res.Stdout)
}

// ParseRaw parses `git diff-tree -r -z --raw --no-abbrev` (and diff-index)
// output: ":oldmode newmode oldid newid status" NUL path NUL, per path.
func ParseRaw(out []byte) ([]RawChange, error) {
	var list []RawChange
	f := bytes.Split(out, []byte{0})
	for i := 0; i < len(f); i++ {
		head := string(f[i])
		if head == "" {
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(head, ":"))
		if !strings.HasPrefix(head, ":") || len(fields) != 5 || i+1 >= len(f) || len(f[i+1]) == 0 {
			return nil, fmt.Errorf("unexpected git raw diff record %q", head)
		}
		i++
		c := RawChange{Path: string(f[i]), Old: Entry{fields[0], fields[2]}, New: Entry{fields[1], fields[3]}}
		if !c.Old.Present() {
			c.Old = Entry{}
		}
		if !c.New.Present() {
			c.New = Entry{}
		}
		list = append(list, c)
	}
	return list, nil
}

// ApplyPreview is what applying patch to HEAD would change: for each path,
// its entry at HEAD and after the patch. It works on a private index and
// changes nothing the user sees.
func (g *Repo) ApplyPreview(ctx context.Context, patch []byte) ([]RawChange, error) {
	tmp, err := os.CreateTemp(g.gitDir(), "litterbox-preview-*.index")
	if err != nil {
		return nil, err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	env := "GIT_INDEX_FILE=" + tmp.Name()
	if _, err := g.R.Run(ctx, g.Cmd("read-tree", "HEAD").WithEnv(env)); err != nil {
		return nil, err
	}
	if _, err := g.R.Run(ctx, g.applyCmd(patch).Arg("--cached").WithEnv(env)); err != nil {
		return nil, err
	}
	res, err := g.R.Run(ctx, g.Cmd("diff-index", "--cached", "-z", "--raw", "--no-abbrev", "--no-renames", "HEAD").WithEnv(env))
	if err != nil {
		return nil, err
	}
	return ParseRaw(res.Stdout)
}

// HashFiles returns the blob id each regular file at paths (relative to the
// working tree root) would get from `git add`, the repository's filters
// applied.
func (g *Repo) HashFiles(ctx context.Context, paths []string) ([]string, error) {
	return g.hashFiles(ctx, paths, false)
}

// StoreFiles is HashFiles that also writes the blobs into the repository,
// so the files can be written back as they are (WriteFiles).
func (g *Repo) StoreFiles(ctx context.Context, paths []string) ([]string, error) {
	return g.hashFiles(ctx, paths, true)
}

func (g *Repo) hashFiles(ctx context.Context, paths []string, write bool) ([]string, error) {
	ids := make([]string, len(paths))
	var viaGit []int
	var in bytes.Buffer
	for i, p := range paths {
		if strings.ContainsAny(p, "\n\r") || strings.HasPrefix(p, "\"") {
			// --stdin-paths reads lines and unquotes C-style names: hash
			// these here, without filters.
			data, err := os.ReadFile(filepath.Join(g.Root, p))
			if err != nil {
				return nil, err
			}
			ids[i] = BlobID(data)
			if write {
				if _, err := g.R.Run(ctx, g.Cmd("hash-object", "-w", "--stdin").WithStdin(bytes.NewReader(data))); err != nil {
					return nil, err
				}
			}
			continue
		}
		viaGit = append(viaGit, i)
		in.WriteString(p + "\n")
	}
	if len(viaGit) == 0 {
		return ids, nil
	}
	res, err := g.R.Run(ctx, g.Cmd("hash-object").ArgIf(write, "-w").Arg("--stdin-paths").WithStdin(&in))
	if err != nil {
		return nil, err
	}
	out := strings.Fields(string(res.Stdout))
	if len(out) != len(viaGit) {
		return nil, fmt.Errorf("git hash-object: %d ids for %d files", len(out), len(viaGit))
	}
	for k, i := range viaGit {
		ids[i] = out[k]
	}
	return ids, nil
}

// SetIndexEntries sets the index entries of paths to the given ones, removing
// the paths whose entry is absent. indexFile is a private index to write
// instead of the user's, or "".
func (g *Repo) SetIndexEntries(ctx context.Context, indexFile string, paths []string, entries []Entry) error {
	var in bytes.Buffer
	for i, p := range paths {
		e := entries[i]
		if !e.Present() {
			e = Entry{"0", ZeroID}
		}
		fmt.Fprintf(&in, "%s %s\t%s\x00", e.Mode, e.ID, p)
	}
	c := g.Cmd("update-index", "-z", "--index-info").WithStdin(&in)
	if indexFile != "" {
		c.WithEnv("GIT_INDEX_FILE=" + indexFile)
	}
	_, err := g.R.Run(ctx, c)
	return err
}

// WriteFiles writes the given entries of paths into the working tree, over
// whatever is there, through a private index: the user's index is not read
// or written. Gitlinks (submodules) are left alone.
func (g *Repo) WriteFiles(ctx context.Context, paths []string, entries []Entry) error {
	var ps []string
	var es []Entry
	for i, p := range paths {
		if entries[i].Present() && entries[i].Mode != "160000" {
			ps, es = append(ps, p), append(es, entries[i])
		}
	}
	if len(ps) == 0 {
		return nil
	}
	tmp, err := os.CreateTemp(g.gitDir(), "litterbox-restore-*.index")
	if err != nil {
		return err
	}
	tmp.Close()
	os.Remove(tmp.Name()) // update-index makes a new index where there is none
	defer os.Remove(tmp.Name())
	if err := g.SetIndexEntries(ctx, tmp.Name(), ps, es); err != nil {
		return err
	}
	var in bytes.Buffer
	for _, p := range ps {
		in.WriteString(p + "\x00")
	}
	_, err = g.R.Run(ctx, g.Cmd("checkout-index", "-f", "-z", "--stdin").WithEnv("GIT_INDEX_FILE="+tmp.Name()).WithStdin(&in))
	return err
}

// IndexLock is the path of the working tree's index lock file.
func (g *Repo) IndexLock() string { return filepath.Join(g.gitDir(), "index.lock") }

func (g *Repo) gitDir() string {
	if g.GitDir != "" {
		return g.GitDir
	}
	return g.CommonDir
}

// IndexEntries returns the stage-0 entries of the user's index for the given
// paths; a path with none (or only conflict stages) is absent from the map.
func (g *Repo) IndexEntries(ctx context.Context, paths []string) (map[string]Entry, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	res, err := g.R.Run(ctx, g.Cmd("ls-files", "--stage", "-z"))
	if err != nil {
		return nil, err
	}
	out := map[string]Entry{}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok || !want[string(path)] {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) == 3 && f[2] == "0" {
			out[string(path)] = Entry{Mode: f[0], ID: f[1]}
		}
	}
	return out, nil
}

// Marks are the index flags that make git ignore a file's content in the
// working tree: `git update-index --skip-worktree` and
// `--assume-unchanged`.
type Marks struct {
	SkipWorktree    bool `json:"skipWorktree,omitempty"`
	AssumeUnchanged bool `json:"assumeUnchanged,omitempty"`
}

// IndexMarks returns the marks of those of paths that have any (`git
// ls-files -v`: S for skip-worktree, a lowercase tag for assume-unchanged).
func (g *Repo) IndexMarks(ctx context.Context, paths []string) (map[string]Marks, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	res, err := g.R.Run(ctx, g.Cmd("ls-files", "-v", "-z"))
	if err != nil {
		return nil, err
	}
	out := map[string]Marks{}
	for _, rec := range bytes.Split(res.Stdout, []byte{0}) {
		if len(rec) < 3 || rec[1] != ' ' || !want[string(rec[2:])] {
			continue
		}
		m := Marks{SkipWorktree: rec[0] == 'S' || rec[0] == 's', AssumeUnchanged: rec[0] >= 'a' && rec[0] <= 'z'}
		if m != (Marks{}) {
			out[string(rec[2:])] = m
		}
	}
	return out, nil
}

// SetIndexMarks sets the marks of paths in the user's index.
func (g *Repo) SetIndexMarks(ctx context.Context, paths []string, marks []Marks) error {
	for _, flag := range []string{"--skip-worktree", "--assume-unchanged"} {
		var in bytes.Buffer
		for i, p := range paths {
			if (flag == "--skip-worktree" && marks[i].SkipWorktree) || (flag == "--assume-unchanged" && marks[i].AssumeUnchanged) {
				in.WriteString(p + "\x00")
			}
		}
		if in.Len() == 0 {
			continue
		}
		if _, err := g.R.Run(ctx, g.Cmd("update-index", flag, "-z", "--stdin").WithStdin(&in)); err != nil {
			return err
		}
	}
	return nil
}

// IgnoredMatching lists the untracked files of the working tree that match
// the gitignore patterns of the file from (relative to the root; skipped
// when "") and patterns, and that git's own rules ignore (.gitignore files,
// info/exclude, core.excludesFile): git decides both, never a matcher of
// ours. Paths are relative to the root, in git's order.
func (g *Repo) IgnoredMatching(ctx context.Context, from string, patterns []string) ([]string, error) {
	args := []string{"ls-files", "-z", "--others", "--ignored"}
	if from != "" {
		args = append(args, "--exclude-from="+filepath.Join(g.Root, from))
	}
	for _, p := range patterns {
		args = append(args, "--exclude="+p)
	}
	res, err := g.R.Run(ctx, g.Cmd(args...))
	if err != nil {
		return nil, fmt.Errorf("list the files %s names: %w", cmp.Or(from, "the patterns"), err)
	}
	listed := splitZ(string(res.Stdout))
	if len(listed) == 0 {
		return nil, nil
	}
	in := []byte(strings.Join(listed, "\x00") + "\x00")
	res, err = g.R.Run(ctx, g.Cmd("check-ignore", "-z", "--stdin").WithStdin(bytes.NewReader(in)))
	if runner.ExitCode(err) == 1 {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, fmt.Errorf("ask git which of them it ignores: %w", err)
	}
	ignored := map[string]bool{}
	for _, p := range splitZ(string(res.Stdout)) {
		ignored[p] = true
	}
	return slices.DeleteFunc(listed, func(p string) bool { return !ignored[p] }), nil
}
