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
