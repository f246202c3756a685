package commands

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// Log lists a sandbox's commits.
type Log struct {
	sandboxName
	JSON bool `name:"json" help:"Print JSON: {\"name\", \"branch\", \"base\", \"commits\": [...]}."`
}

// Run prints one line per commit since the base, newest first: short id,
// date and subject.
func (l *Log) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	h, err := env.Sandboxes.History(ctx, r, l.Name)
	if err != nil {
		return err
	}
	if l.JSON {
		return writeJSON(env, h)
	}
	if len(h.Commits) == 0 {
		env.errf("No commits on %s since its base %s: the sandbox has changed nothing yet.\n", h.Branch, shortID(h.Base))
		return nil
	}
	tw := newTable(env.Stdout)
	for _, c := range h.Commits {
		// Subjects are the agent's words: stored escaped, and escaped again
		// here for commits made elsewhere.
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Short(), c.Date.Local().Format("2006-01-02 15:04"), termtext.Escape(c.Subject))
	}
	return tw.Flush()
}

// Diff shows a sandbox's changes against its base.
type Diff struct {
	sandboxName
	Stat bool `name:"stat" help:"Show a diffstat instead of the patch."`
	Raw  bool `name:"raw" help:"On a terminal, write the diff as git writes it, unescaped: what an agent wrote can then drive the terminal (set its title, switch screens)."`
}

// Run streams git diff to stdout. On a terminal (unless --raw) every line
// is escaped, as log escapes subjects, and coloured by its kind when the
// user's git config colours diffs; elsewhere it is git's output as it is.
// Then it names the commit it showed, on stderr, for merge --at.
func (d *Diff) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	f, ok := env.Stdout.(*os.File)
	term := ok && isTerminal(f)
	opts := git.DiffOptions{Stat: d.Stat, Color: term && d.Raw}
	out := env.Stdout
	var td *termDiff
	if term && !d.Raw {
		td = &termDiff{w: env.Stdout, color: r.Git.ColorsDiff(ctx)}
		out = td
	}
	res, err := env.Sandboxes.Diff(ctx, r, d.Name, opts, out)
	if td != nil {
		if cerr := td.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	if res.Empty {
		env.errf("No changes: sandbox %s changes nothing against its base %s.\n", res.Name, shortID(res.Base))
	} else {
		env.errf("litterbox: this is sandbox %s at commit %s, %s against its base %s. Land exactly this with `litterbox merge %s --at %s` (or `apply --at`): either refuses if the branch moved.\n",
			res.Name, shortID(res.Tip), plural(len(res.Paths), "path changed", "paths changed"), shortID(res.Base), res.Name, shortID(res.Tip))
	}
	if len(res.ConfigFiles) > 0 {
		env.errf("warning: sandbox %s changes files that steer git or litterbox, and an agent wrote them: read them before you apply or merge it.\n%s\n", res.Name, configList(res.ConfigFiles))
	}
	return nil
}

// configList lists changed files that steer git or litterbox, one a line,
// each with what it decides.
func configList(paths []string) string {
	var b strings.Builder
	for i, p := range paths {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %s: %s", termtext.Quote(p), sandbox.ConfigRole(p))
		if config.IsLocalFile(p) {
			b.WriteString(" (apply and merge refuse it)")
		}
	}
	return b.String()
}

// at is the --at flag of apply and merge.
type at struct {
	At string `name:"at" placeholder:"COMMIT" help:"Land exactly this commit of the sandbox's branch, the one litterbox diff showed; refused, changing nothing, if the branch moved since."`
}

// Apply brings a sandbox's changes into the working tree, uncommitted.
type Apply struct {
	sandboxName
	at
}

// Run applies and names the files changed.
func (a *Apply) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Apply(ctx, r, a.Name, a.At)
	if err != nil {
		return err
	}
	switch {
	case res.Empty:
		env.errf("Nothing to apply: sandbox %s changes nothing against its base %s.\n", res.Name, shortID(res.Base))
		return nil
	case res.Already:
		env.errf("Nothing to apply: the working tree already holds the changes of sandbox %s.\n", res.Name)
		return nil
	}
	env.outf("Applied sandbox %s at %s to the working tree, uncommitted (%d file(s)):\n%s\n", res.Name, shortID(res.Tip), len(res.Files), indent(res.Files))
	env.errf("The index and HEAD are unchanged and the sandbox is kept: review with `git status` and `git diff`, then commit.\nApply copies the changes, so the sandbox's own commits stay unmerged: once done, remove it with `litterbox delete --force %s`.\n", res.Name)
	if len(res.ConfigFiles) > 0 {
		env.errf("warning: sandbox %s changes files that steer git or litterbox, and an agent wrote them: read them (`git diff`; new ones whole) before you commit them.\n%s\n", res.Name, configList(res.ConfigFiles))
	}
	return nil
}

// Merge merges a sandbox's branch into the current branch and deletes it.
type Merge struct {
	sandboxName
	at
}

// Run merges, then reports the merge and the delete.
func (m *Merge) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Merge(ctx, r, m.Name, m.At)
	if res != nil {
		switch {
		case res.NothingToMerge:
			env.outf("Nothing to merge: %s%s has no commits that are not in %s.\n", api.BranchPrefix, res.Name, res.Into)
		case res.FastForward:
			env.outf("Merged sandbox %s into %s (fast-forward to %s, %d file(s) changed)\n", res.Name, res.Into, shortID(res.Commit), len(res.Files))
		default:
			env.outf("Merged sandbox %s into %s (merge commit %s of %s, %d file(s) changed)\n", res.Name, res.Into, shortID(res.Commit), shortID(res.Tip), len(res.Files))
		}
		if len(res.ConfigFiles) > 0 {
			env.errf("warning: sandbox %s changed files that steer git or litterbox, and an agent wrote them: read them (`git diff %s %s`) before you build on the merge.\n%s\n", res.Name, shortID(res.From), shortID(res.Commit), configList(res.ConfigFiles))
		}
		if len(res.Unnormalized) > 0 {
			env.errf("warning: these merged files are not stored as .gitattributes asks (line endings, most often: the sandbox recorded them as the agent wrote them), so git status shows them modified until you commit them normalized:\n%s\nStage them with `git add --renormalize` and their names, then commit.\n", indent(res.Unnormalized))
		}
		if res.Unsigned {
			env.errf("warning: commit.gpgSign is on but signing failed, so merge commit %s is unsigned: %s\nSign it with `git commit --amend --no-edit -S` once signing works.\n", shortID(res.Commit), firstLine(res.SignFailure))
		}
		if res.Deleted != nil && len(res.Deleted.Removed) > 0 {
			env.outf("Deleted %s (%s)\n", res.Deleted.Name, strings.Join(res.Deleted.Removed, ", "))
		}
	}
	return err
}

func shortID(id string) string { return id[:min(12, len(id))] }

// plural is "1 file changed" or "3 files changed".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// indent lists paths one a line, quoted as git quotes names.
func indent(paths []string) string {
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = termtext.Quote(p)
	}
	return "  " + strings.Join(quoted, "\n  ")
}
