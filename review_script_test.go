package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	scriptCmds["snap"] = cmdSnap
}

// snap NAME DIR MESSAGE
//
// Commits the files under DIR, as the whole tree (.gitignore honoured), on
// top of litterbox/NAME in the repository of the current directory, the way
// a snapshot does: a private index, write-tree, commit-tree and a
// compare-and-swap update-ref. No hooks run and nothing is signed. It stands
// in for the snapshot engine so review can be tested on its own.
func cmdSnap(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: snap NAME DIR MESSAGE")
	}
	ref := "refs/heads/litterbox/" + args[0]
	repo := ts.MkAbs(".")
	dir := ts.MkAbs(args[1])
	index := filepath.Join(repo, ".git", "snap-index-"+args[0])
	defer os.Remove(index)
	git := func(in string, env []string, a ...string) string {
		c := exec.Command("git", a...)
		c.Dir = in
		c.Env = append([]string{"HOME=" + ts.Getenv("HOME"), "PATH=" + ts.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1"}, env...)
		out, err := c.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				ts.Fatalf("git %s: %v: %s", strings.Join(a, " "), err, ee.Stderr)
			}
			ts.Fatalf("git %s: %v", strings.Join(a, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	tip := git(repo, nil, "rev-parse", "--verify", ref)
	priv := []string{"GIT_INDEX_FILE=" + index, "GIT_DIR=" + filepath.Join(repo, ".git"), "GIT_WORK_TREE=" + dir}
	git(dir, priv, "read-tree", tip)
	git(dir, priv, "add", "-A", ".")
	tree := git(dir, priv, "write-tree")
	commit := git(repo, nil, "commit-tree", "--no-gpg-sign", "-p", tip, "-m", args[2], tree)
	git(repo, nil, "update-ref", ref, commit, tip)
}
