package git

import (
	"bytes"
	"context"
	"fmt"
	"github.com/litterbox-dev/litterbox/internal/fsname"
	"io"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/runner"
)

// This file holds the history and working-tree operations behind the human
// review commands (log, diff, apply, merge). Readers are plumbing and ignore
// the user's porcelain config; the writers (apply, read-tree, update-ref) are
// the only commands in Litterbox that touch the user's working tree, and only
// when the user asked for it.

// Commit is one entry of Log.
type Commit struct {
	ID      string    `json:"id"`
	Date    time.Time `json:"date"`
	Subject string    `json:"subject"`
}

// Short is the commit id shortened for display.
func (c Commit) Short() string { return c.ID[:min(12, len(c.ID))] }

// Log lists the commits reachable from tip but not from base, newest first.
// Signatures are never verified (log.showSignature would print gpg output).
func (g *Repo) Log(ctx context.Context, base, tip string) ([]Commit, error) {
	out, err := g.R.Run(ctx, g.Cmd("log", "--no-show-signature", "--no-color", "-z", "--format=%H%x1f%cI%x1f%s", "--end-of-options", base+".."+tip, "--"))
	if err != nil {
		return nil, err
	}
	return ParseLog(string(out.Stdout))
}

// ParseLog parses `git log -z --format=%H%x1f%cI%x1f%s` output.
func ParseLog(out string) ([]Commit, error) {
	var commits []Commit
	for _, rec := range strings.Split(out, "\x00") {
		// Only a stray newline between records goes: the subject is kept
		// byte for byte, as git prints it (which already dropped trailing
		// ASCII blanks, but keeps, say, a no-break space).
		rec = strings.TrimLeft(rec, "\n")
		if rec == "" {
			continue
		}
		f := strings.SplitN(rec, "\x1f", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("unexpected git log record %q", rec)
		}
		date, err := time.Parse(time.RFC3339, f[1])
		if err != nil {
			return nil, fmt.Errorf("git log date %q: %w", f[1], err)
		}
		commits = append(commits, Commit{ID: f[0], Date: date, Subject: f[2]})
	}
	return commits, nil
}

// CommonAncestor returns the merge base of a and b; ok is false when the
// histories are unrelated.
func (g *Repo) CommonAncestor(ctx context.Context, a, b string) (id string, ok bool, err error) {
	id, err = g.output(ctx, "merge-base", "--end-of-options", a, b)
	if err != nil {
		if runner.ExitCode(err) == 1 {
			return "", false, nil
		}
		return "", false, err
	}
	return id, true, nil
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (g *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := g.output(ctx, "merge-base", "--is-ancestor", "--end-of-options", a, b)
	if err != nil {
		if runner.ExitCode(err) == 1 {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// DiffOptions tune Diff.
type DiffOptions struct {
	Stat bool
	// Color lets git colour the output as the user's config says; without it
	// colour is off whatever the config says.
	Color bool
	// Hold asks for every file listed first (DiffFiles), then the patch
	// as plumbing writes it (PlainPatch) held within these limits
	// (PatchCutter), for a screen; nothing is written to the writer.
	Hold *PatchLimits
}

// Diff writes `git diff base tip` to w, for a human to read: it honours the
// user's diff config (external tools, prefixes) and never starts a pager.
// Names are quoted whatever core.quotePath says: they are an agent's, and
// quotePath=false printed U+202E and C1 controls in them raw.
func (g *Repo) Diff(ctx context.Context, base, tip string, opts DiffOptions, w io.Writer) error {
	c := runner.New("git", "--no-pager", "-C", g.Root, "-c", "core.quotePath=true", "diff").WithEnv("GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0").
		ArgIf(opts.Stat, "--stat").
		ArgIf(!opts.Color, "--color=never").
		Arg("--end-of-options", base, tip, "--").
		WithStdout(w).
		As(runner.Stream) // w may be a pager the user reads at leisure
	_, err := g.R.Run(ctx, c)
	return err
}

// ChangedPaths lists the paths that differ between two trees or commits,
// renames shown as a deletion and an addition.
func (g *Repo) ChangedPaths(ctx context.Context, a, b string) ([]string, error) {
	res, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "--no-renames", "--name-only", "-z", "--end-of-options", a, b))
	if err != nil {
		return nil, err
	}
	return splitZ(string(res.Stdout)), nil
}

// Patch returns base..tip as a patch git apply takes whole: binary files in
// full, full object ids, no renames, and a/ b/ prefixes. diff-tree is
// plumbing, so diff.noprefix, diff.external and colour config cannot spoil it.
func (g *Repo) Patch(ctx context.Context, base, tip string) ([]byte, error) {
	res, err := g.R.Run(ctx, g.Cmd("diff-tree", "-r", "-p", "--binary", "--full-index", "--no-renames", "--no-color", "--end-of-options", base, tip))
	return res.Stdout, err
}

// ApplyCheck reports whether patch applies to the working tree, without
// changing anything. When it does not, the paths git names are returned with
// its message.
func (g *Repo) ApplyCheck(ctx context.Context, patch []byte, reverse bool) (ok bool, paths []string, msg string, err error) {
	_, err = g.R.Run(ctx, g.applyCmd(patch).Arg("--check").ArgIf(reverse, "--reverse"))
	if err != nil {
		if runner.ExitCode(err) == 1 {
			stderr := runner.Stderr(err)
			return false, ParseApplyErrors(stderr), strings.TrimSpace(stderr), nil
		}
		return false, nil, "", err
	}
	return true, nil, "", nil
}

// Apply applies patch to the working tree only (not the index). git apply is
// atomic: it writes nothing unless every hunk applies.
func (g *Repo) Apply(ctx context.Context, patch []byte) error {
	_, err := g.R.Run(ctx, g.applyCmd(patch))
	return err
}

// applyCmd ignores apply.whitespace from the user's config: the patch must
// land exactly as committed, trailing spaces and all.
func (g *Repo) applyCmd(patch []byte) *runner.Cmd {
	return g.Cmd("apply", "--whitespace=nowarn").WithStdin(bytes.NewReader(patch))
}

// ParseApplyErrors picks the paths out of git apply's error lines, such as
// "error: patch failed: a.txt:3", "error: a.txt: patch does not apply" and
// "error: new.txt: already exists in working directory".
func ParseApplyErrors(stderr string) []string {
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, line := range strings.Split(stderr, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "error: ")
		if !ok {
			continue
		}
		if p, ok := strings.CutPrefix(rest, "patch failed: "); ok {
			if i := strings.LastIndexByte(p, ':'); i > 0 {
				p = p[:i]
			}
			add(p)
			continue
		}
		if i := strings.LastIndex(rest, ": "); i > 0 {
			add(rest[:i])
		}
	}
	return paths
}

// Dirty lists the paths that differ from HEAD in the index or the working
// tree, plus untracked files (not ignored ones). Renames are split into their
// two paths. GIT_OPTIONAL_LOCKS=0 keeps status from rewriting the index.
func (g *Repo) Dirty(ctx context.Context) ([]string, error) {
	res, err := g.R.Run(ctx, g.Cmd("status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=all", "--ignore-submodules"))
	if err != nil {
		return nil, err
	}
	return ParseStatusPaths(string(res.Stdout)), nil
}

// ParseStatusPaths parses `git status --porcelain=v1 -z --no-renames`.
func ParseStatusPaths(out string) []string {
	var paths []string
	for _, rec := range splitZ(out) {
		if len(rec) > 3 {
			paths = append(paths, rec[3:])
		}
	}
	return paths
}

// MergeTree merges ours and theirs in memory (git merge-tree --write-tree),
// writing the result's objects but touching no ref, index or file. A clean
// merge returns its tree; a conflicted one returns the conflicted paths.
func (g *Repo) MergeTree(ctx context.Context, ours, theirs string) (tree string, conflicts []string, err error) {
	res, err := g.R.Run(ctx, g.Cmd("merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", "--end-of-options", ours, theirs))
	if err != nil && runner.ExitCode(err) != 1 {
		return "", nil, err
	}
	tree, conflicts, perr := ParseMergeTree(string(res.Stdout))
	if perr != nil {
		return "", nil, perr
	}
	if err != nil && len(conflicts) == 0 {
		// Exit 1 always means conflicts; never report such a merge as clean.
		conflicts = []string{"(git did not name the files)"}
	}
	return tree, conflicts, nil
}

// ParseMergeTree parses `git merge-tree --write-tree --name-only -z
// --no-messages`: the tree id, then each conflicted path, NUL-terminated.
func ParseMergeTree(out string) (tree string, conflicts []string, err error) {
	f := splitZ(out)
	if len(f) == 0 || len(f[0]) < 40 {
		return "", nil, fmt.Errorf("unexpected git merge-tree output %q", out)
	}
	seen := map[string]bool{}
	for _, p := range f[1:] {
		if !seen[p] {
			seen[p] = true
			conflicts = append(conflicts, p)
		}
	}
	return f[0], conflicts, nil
}

// CurrentBranch returns the full ref HEAD points at; ok is false on a
// detached HEAD.
func (g *Repo) CurrentBranch(ctx context.Context) (ref string, ok bool, err error) {
	ref, err = g.output(ctx, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		if runner.ExitCode(err) == 1 {
			return "", false, nil
		}
		return "", false, err
	}
	return ref, true, nil
}

// CommitMerge makes a commit of tree with the given parents as the user,
// signed (-S, with the user's signing key and format) when sign is set.
// commit-tree ignores commit.gpgSign, so the caller decides; no hooks run:
// it is plumbing.
func (g *Repo) CommitMerge(ctx context.Context, tree, msg string, sign bool, parents ...string) (string, error) {
	c := g.Cmd("commit-tree").ArgIf(sign, "-S").ArgIf(!sign, "--no-gpg-sign")
	for _, p := range parents {
		c.Arg("-p", p)
	}
	c.Arg("-m", msg, "--end-of-options", tree)
	return g.outputCmd(ctx, c)
}

// MergeFF returns the user's merge.ff setting: "true" (the default),
// "false" (always make a merge commit) or "only" (refuse anything else than a
// fast-forward).
func (g *Repo) MergeFF(ctx context.Context) string {
	out, err := g.output(ctx, "config", "--get", "merge.ff")
	switch {
	case err != nil:
		return "true"
	case out == "only":
		return out
	}
	if b, err := g.output(ctx, "config", "--type=bool", "--get", "merge.ff"); err == nil {
		return b
	}
	return "true"
}

// ColorsDiff reports whether the user's config colours a diff written to
// a terminal (color.diff, else color.ui; git's default is yes).
func (g *Repo) ColorsDiff(ctx context.Context) bool {
	out, err := g.output(ctx, "config", "--get-colorbool", "color.diff", "true")
	return err == nil && out == "true"
}

// SignsCommits reports whether commit.gpgSign is on in the user's config.
func (g *Repo) SignsCommits(ctx context.Context) bool {
	out, err := g.output(ctx, "config", "--type=bool", "--get", "commit.gpgSign")
	return err == nil && out == "true"
}

// CheckoutTree moves the index and working tree from commit from to commit to
// (git read-tree -m -u), carrying unrelated local changes forward. It refuses,
// writing nothing, when a file it would change has local changes or an
// untracked file is in the way. The stat cache is refreshed first so files
// that were only touched do not count as changed.
func (g *Repo) CheckoutTree(ctx context.Context, from, to string) error {
	_, _ = g.R.Run(ctx, g.Cmd("update-index", "-q", "--refresh"))
	_, err := g.R.Run(ctx, g.Cmd("read-tree", "-m", "-u", "--end-of-options", from, to))
	return err
}

func (g *Repo) outputCmd(ctx context.Context, c *runner.Cmd) (string, error) {
	res, err := g.R.Run(ctx, c)
	return strings.TrimSpace(string(res.Stdout)), err
}

func splitZ(out string) []string {
	var f []string
	for _, s := range strings.Split(out, "\x00") {
		if s != "" {
			f = append(f, s)
		}
	}
	return f
}

// Tracked reports whether path (relative to the root), or a name that is
// the same file on a case- or normalisation-insensitive file system
// (fsname.Same: .LITTERBOX.LOCAL.TOML for .litterbox.local.toml), is in the
// index, that is, tracked by git: committed, or staged to be. It returns the
// name tracked, path itself first. Only the last component is folded: the
// directory is compared as it is.
func (g *Repo) Tracked(ctx context.Context, path string) (string, bool, error) {
	dir, _ := splitDir(path)
	spec := ":(top,glob)*"
	if dir != "" {
		spec = ":(top,glob)" + globEscape(dir) + "/*"
	}
	res, err := g.R.Run(ctx, g.Cmd("ls-files", "-z", "--full-name", "--", spec))
	if err != nil {
		return "", false, err
	}
	found := ""
	for _, p := range splitZ(string(res.Stdout)) {
		if p == path {
			return p, true, nil
		}
		if d, _ := splitDir(p); d == dir && found == "" && fsname.Same(p, path) {
			found = p
		}
	}
	return found, found != "", nil
}

// splitDir splits p at its last slash: "" and p for a name at the top.
func splitDir(p string) (dir, name string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}

// globEscape quotes the characters a glob pathspec reads as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("*?[\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
