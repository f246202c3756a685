package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdEnvFile is the script command envfile (scriptcmds_test.go).
func cmdEnvFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: envfile VAR FILE")
	}
	line, _, _ := strings.Cut(ts.ReadFile(args[1]), "\n")
	ts.Setenv(args[0], strings.TrimSpace(line))
}

// gitShimScript is a git stand-in that kills litterbox (its parent) with
// SIGKILL at one step of merge or apply, and passes everything else to the
// real git. LB_GITSHIM picks the step:
//
//	killref       as merge moves the branch (update-ref --stdin), which never
//	              runs: the working tree and index are merged, HEAD is not
//	killafterref  right after merge moved the branch
//	killapply     right after apply wrote the working tree
//	moveref       as merge moves the working tree (read-tree -m -u), a
//	              snapshot lands on litterbox/$LB_GITSHIM_SANDBOX first
const gitShimScript = `#!/bin/sh
real=%q
mode="${LB_GITSHIM:-}"
case "$mode:$*" in
  moveref:*" read-tree -m -u "*)
    b=refs/heads/litterbox/$LB_GITSHIM_SANDBOX
    c=$("$real" commit-tree -p $b -m 'bash: late' $b^{tree}) && "$real" update-ref $b $c || exit 99
    exec "$real" "$@" ;;
  killref:*" update-ref "*" --stdin") kill -9 $PPID; exit 137 ;;
  killafterref:*" update-ref "*" --stdin") "$real" "$@"; kill -9 $PPID; exit 137 ;;
  killapply:*" apply --whitespace=nowarn") "$real" "$@"; kill -9 $PPID; exit 137 ;;
esac
exec "$real" "$@"
`

// cmdGitShim is the script command gitshim (scriptcmds_test.go).
func cmdGitShim(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: gitshim killref|killafterref|killapply|moveref|off")
	}
	if ts.Getenv("LB_GIT_SAVED_PATH") == "" {
		ts.Setenv("LB_GIT_SAVED_PATH", ts.Getenv("PATH"))
	}
	path := ts.Getenv("LB_GIT_SAVED_PATH")
	if args[0] == "off" {
		ts.Setenv("PATH", path)
		ts.Setenv("LB_GITSHIM", "")
		return
	}
	real, err := lookPath(path, "git")
	ts.Check(err)
	dir := filepath.Join(ts.Getenv("WORK"), ".gitshim")
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(os.WriteFile(filepath.Join(dir, "git"), fmt.Appendf(nil, gitShimScript, real), 0o755))
	ts.Setenv("PATH", dir+string(os.PathListSeparator)+path)
	ts.Setenv("LB_GITSHIM", args[0])
}

// cmdSnap is the script command snap (scriptcmds_test.go).
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
