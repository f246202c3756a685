// Package testutil holds what tests against a real Docker engine share.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// StaticLitterbox builds a statically linked litterbox from the module
// directory dir into a temporary directory and returns its path. Snapshots
// copy that binary into the busybox sandbox, which has no C library, and a
// test binary links one whenever cgo is on; point LITTERBOX_SCANNER at it.
func StaticLitterbox(tb testing.TB, dir string) string {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "litterbox-static")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build a static litterbox: %v\n%s", err, msg)
	}
	return out
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
