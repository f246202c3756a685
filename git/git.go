// Package git holds the typed git operations Litterbox uses, built as argv over
// a runner.Runner. Everything here is plumbing that leaves the user's working
// tree, index, HEAD, stash, config and hooks alone; the only refs it moves are
// the ones the caller names.
package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/runner"
)

// ErrNotRepository means the directory is not inside a git working tree.
var ErrNotRepository = errors.New("not inside a git repository")

// notRepository is an ErrNotRepository with a message of its own.
type notRepository string

func (e notRepository) Error() string { return string(e) }

// Is makes errors.Is(err, ErrNotRepository) hold.
func (e notRepository) Is(target error) bool { return target == ErrNotRepository }

// ErrNoCommits means the repository has no commit yet, so HEAD is unborn.
var ErrNoCommits = errors.New("the repository has no commits yet")

// ErrRefExists means a ref that was to be created already exists.
var ErrRefExists = errors.New("ref already exists")

// ZeroID is the object id git uses for "no object".
const ZeroID = "0000000000000000000000000000000000000000"

// Repo is one git working tree (a main one or a linked worktree).
type Repo struct {
	R         runner.Runner
	Root      string // top of the working tree
	CommonDir string // the git dir shared by all worktrees, absolute
	// GitDir is this working tree's own git dir (its HEAD and index live
	// there), absolute: CommonDir for the main working tree.
	GitDir string
}

// Open finds the repository that contains dir.
func Open(ctx context.Context, r runner.Runner, dir string) (*Repo, error) {
	g, _, err := open(ctx, r, dir, "")
	return g, err
}

// OpenBranches is Open, with the branches whose names start with prefix
// (refs/heads/prefix..., by full name, as Refs gives them) from the same
// git process: list asks for both as it starts, and a second git is a
// millisecond or two of CPU on a machine the engine's list shares.
func OpenBranches(ctx context.Context, r runner.Runner, dir, prefix string) (*Repo, map[string]string, error) {
	g, refs, err := open(ctx, r, dir, prefix)
	if err == nil && refs == nil {
		// Not paired (see open): as Refs has them, from a git of their own.
		refs, err = g.Refs(ctx, "refs/heads/"+prefix)
	}
	return g, refs, err
}

// open is Open, and with a prefix OpenBranches. rev-parse names the
// branches' ids, then (--symbolic-full-name) their names, each list in the
// order of the refs: the two are paired line by line. A name rev-parse
// cannot print (a tag of the same name makes it ambiguous), or a branch
// made or deleted between the two lists, leaves them of unequal length,
// and a symbolic branch is named by its target's name, which repeats one:
// refs is then nil.
func open(ctx context.Context, r runner.Runner, dir, prefix string) (g *Repo, refs map[string]string, err error) {
	// The common dir absolute: git prints it relative to the directory it
	// runs in, which is not the top in a subdirectory.
	args := []string{"-C", dir, "rev-parse", "--show-toplevel", "--path-format=absolute", "--git-common-dir", "--absolute-git-dir"}
	if prefix != "" {
		args = append(args, "--branches="+prefix+"*", "--symbolic-full-name", "--branches="+prefix+"*")
	}
	res, err := r.Run(ctx, runner.New("git", args...))
	if err != nil {
		var ni *runner.NotInstalledError
		if errors.As(err, &ni) {
			return nil, nil, fmt.Errorf("git is not installed or not on PATH: install git and try again")
		}
		stderr := runner.Stderr(err)
		if strings.Contains(stderr, "not a git repository") {
			return nil, nil, notRepository(dir + " is not inside a git repository: run litterbox inside one, or pass --repo")
		}
		if strings.Contains(stderr, "cannot change to") {
			return nil, nil, notRepository(dir + ": no such directory (check --repo or LITTERBOX_REPO)")
		}
		if strings.Contains(stderr, "must be run in a work tree") {
			return nil, nil, notRepository(dir + " is a bare repository: run litterbox in a working tree")
		}
		return nil, nil, err
	}
	// Not TrimSpace: a branch's name may end in a blank (see ParseRefs).
	lines := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	if len(lines) >= 3 && !(filepath.IsAbs(lines[0]) && filepath.IsAbs(lines[1]) && filepath.IsAbs(lines[2])) {
		// A git before 2.31 prints --path-format back, as a line of its own.
		return nil, nil, fmt.Errorf("git rev-parse printed %q, not absolute paths: litterbox needs git 2.38 or later (`litterbox doctor` checks)", res.Stdout)
	}
	if len(lines) < 3 || prefix == "" && len(lines) != 3 {
		return nil, nil, fmt.Errorf("unexpected output of git rev-parse: %q", res.Stdout)
	}
	g = &Repo{R: r, Root: lines[0], CommonDir: filepath.Clean(lines[1]), GitDir: lines[2]}
	if prefix == "" {
		return g, nil, nil
	}
	branches := lines[3:]
	if len(branches) == 1 && branches[0] == "" {
		branches = nil // none
	}
	n := len(branches) / 2
	if len(branches) != 2*n {
		return g, nil, nil
	}
	refs = make(map[string]string, n)
	for i, id := range branches[:n] {
		name := branches[n+i]
		if id == "" || !strings.HasPrefix(name, "refs/heads/"+prefix) {
			return g, nil, nil
		}
		refs[name] = id
	}
	if len(refs) != n {
		// A name twice: a symbolic branch, named by its target's.
		return g, nil, nil
	}
	return g, refs, nil
}

// Cmd starts a git command line that runs in the repository. Prompts are off:
// Litterbox is driven by scripts and agents with nobody at the terminal.
// Optional locks are off so that read-only commands such as status never
// rewrite the user's index to refresh its stat cache. Hooks are off: even
// plumbing runs the reference-transaction hook, and the user's hooks are for
// the user's own commits, not for Litterbox's.
func (g *Repo) Cmd(args ...string) *runner.Cmd {
	return runner.New("git", append([]string{"-C", g.Root, "-c", "core.hooksPath=/dev/null"}, args...)...).WithEnv("GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

func (g *Repo) output(ctx context.Context, args ...string) (string, error) {
	res, err := g.R.Run(ctx, g.Cmd(args...))
	return strings.TrimSpace(string(res.Stdout)), err
}

// Head returns the commit HEAD points at.
func (g *Repo) Head(ctx context.Context) (string, error) {
	id, err := g.output(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		if runner.ExitCode(err) == 1 {
			return "", g.noCommits()
		}
		return "", err
	}
	return id, nil
}

// noCommits is the error of a repository whose HEAD names no commit.
func (g *Repo) noCommits() error {
	return fmt.Errorf("%s: %w: make a first commit, then try again", g.Root, ErrNoCommits)
}

// Commits returns the commits revs name, in their order, from one git
// call; an error when any of them names none. A rev may not start with
// "-" (rev-parse of several takes no --end-of-options: it prints it).
func (g *Repo) Commits(ctx context.Context, revs ...string) ([]string, error) {
	args := []string{"rev-parse"}
	for _, r := range revs {
		if strings.HasPrefix(r, "-") {
			return nil, fmt.Errorf("git rev-parse: %q is not a revision", r)
		}
		args = append(args, r+"^{commit}")
	}
	out, err := g.output(ctx, args...)
	if err != nil {
		return nil, err
	}
	ids := strings.Fields(out)
	if len(ids) != len(revs) {
		return nil, fmt.Errorf("git rev-parse %s: %d commits, want %d", strings.Join(revs, " "), len(ids), len(revs))
	}
	return ids, nil
}

// ResolveRef returns the object id of ref, or ok=false when it does not exist.
func (g *Repo) ResolveRef(ctx context.Context, ref string) (id string, ok bool, err error) {
	id, err = g.output(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		if runner.ExitCode(err) == 1 {
			return "", false, nil
		}
		return "", false, err
	}
	return id, true, nil
}

// FullRefName is the full name of the ref rev names (refs/heads/main for
// "main", refs/stash for "stash"), or "" when rev is not a ref's name (a
// commit id, an expression such as main~2, an ambiguous name).
func (g *Repo) FullRefName(ctx context.Context, rev string) (string, error) {
	name, err := g.output(ctx, "rev-parse", "--symbolic-full-name", "--verify", "--quiet", "--end-of-options", rev)
	if runner.ExitCode(err) == 1 {
		return "", nil
	}
	return name, err
}

// RefsContaining lists the full names of the refs, of any kind, whose
// history holds commit (a full object id).
func (g *Repo) RefsContaining(ctx context.Context, commit string) ([]string, error) {
	out, err := g.output(ctx, "for-each-ref", "--format=%(refname)", "--contains="+commit)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// CreateRef creates ref at id, failing with ErrRefExists when it exists. The
// empty old value makes git itself check that, atomically.
func (g *Repo) CreateRef(ctx context.Context, ref, id, msg string) error {
	_, err := g.R.Run(ctx, g.Cmd("update-ref", "--create-reflog", "-m", msg, ref, id, ""))
	if err != nil && strings.Contains(runner.Stderr(err), "reference already exists") {
		return fmt.Errorf("%s: %w", ref, ErrRefExists)
	}
	return err
}

// UpdateRef moves ref from old to id, compare-and-swap: it fails when ref no
// longer points at old.
func (g *Repo) UpdateRef(ctx context.Context, ref, id, old, msg string) error {
	_, err := g.R.Run(ctx, g.Cmd("update-ref", "--create-reflog", "-m", msg, ref, id, old))
	return err
}

// UpdateRefIf moves ref from old to id, as UpdateRef does, if and only if
// the ref other still points at otherID: one git transaction locks both
// refs and checks both, so neither can move between the check and the
// move.
func (g *Repo) UpdateRefIf(ctx context.Context, ref, id, old, other, otherID, msg string) error {
	in := fmt.Sprintf("start\nverify %s %s\nupdate %s %s %s\ncommit\n", other, otherID, ref, id, old)
	_, err := g.R.Run(ctx, g.Cmd("update-ref", "--create-reflog", "-m", msg, "--stdin").WithStdin(strings.NewReader(in)))
	return err
}

// DeleteRef deletes ref if it still points at old. A ref that is already
// gone is not an error: the goal is met. A ref that moved on is.
func (g *Repo) DeleteRef(ctx context.Context, ref, old string) error {
	_, err := g.R.Run(ctx, g.Cmd("update-ref", "-d", ref, old))
	if err != nil && strings.Contains(runner.Stderr(err), "unable to resolve reference") {
		if _, ok, rerr := g.ResolveRef(ctx, ref); rerr == nil && !ok {
			return nil
		}
	}
	return err
}

// Refs lists the refs under prefix (e.g. refs/heads/litterbox/) with their ids.
func (g *Repo) Refs(ctx context.Context, prefix string) (map[string]string, error) {
	// Not output: trimming the whole answer would trim the last name.
	res, err := g.R.Run(ctx, g.Cmd("for-each-ref", "--format=%(objectname) %(refname)", prefix))
	if err != nil {
		return nil, err
	}
	return ParseRefs(string(res.Stdout)), nil
}

// ParseRefs parses "<id> <refname>" lines. A ref name holds no space or
// control character, but may end in other blanks (a no-break space): the
// line is taken as it is.
func ParseRefs(out string) map[string]string {
	refs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		id, name, ok := strings.Cut(line, " ")
		if ok {
			refs[name] = id
		}
	}
	return refs
}

// CountCommits counts the commits reachable from tip but not from base.
func (g *Repo) CountCommits(ctx context.Context, base, tip string) (int, error) {
	out, err := g.output(ctx, "rev-list", "--count", "--end-of-options", base+".."+tip)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// DirtyTracked reports whether tracked files differ from HEAD, in the index or
// the working tree. Untracked files do not count.
func (g *Repo) DirtyTracked(ctx context.Context) (bool, error) {
	out, err := g.output(ctx, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules")
	return out != "", err
}
