package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdTrailers is the script command trailers (scriptcmds_test.go).
func cmdTrailers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: trailers RANGE")
	}
	git := func(stdin []byte, args ...string) []byte {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = ts.MkAbs("."), scriptEnv(ts)
		cmd.Stdin = bytes.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			ts.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	for _, id := range strings.Fields(string(git(nil, "rev-list", args[0]))) {
		msg := git(nil, "log", "-n1", "--format=%B", id)
		subject, _, _ := strings.Cut(string(msg), "\n")
		fmt.Fprintf(ts.Stdout(), "commit %s\n", subject)
		for _, t := range strings.Split(strings.TrimSpace(string(git(msg, "interpret-trailers", "--parse"))), "\n") {
			if t != "" {
				fmt.Fprintf(ts.Stdout(), "  %s\n", t)
			}
		}
	}
}
