// Package enginetest holds what tests against a real engine (Docker,
// Kubernetes) share.
package enginetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// ProcessAlive reports whether pid is a running process: it exists and is no
// zombie (a killed process waiting for its reaper counts as gone).
func ProcessAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// DockerOrSkip skips the test when no Docker engine answers. Package tests
// skip; the testscript suite is the one that fails in CI without an engine.
func DockerOrSkip(tb testing.TB) {
	tb.Helper()
	if exec.Command("docker", "info").Run() != nil {
		tb.Skip("needs a Docker engine")
	}
}

// CommitRepo makes dir a git repository whose one commit holds whatever dir
// already contains (nothing, if it is new), with a fixed identity.
func CommitRepo(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "."},
		{"-c", "user.name=Litterbox Test", "-c", "user.email=test@litterbox.dev", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
