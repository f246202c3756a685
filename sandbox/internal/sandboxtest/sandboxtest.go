// Package sandboxtest is what the service's unit tests share: a fake engine
// whose commands behave as a busybox sandbox's would for what create runs,
// and a repository to make sandboxes of.
package sandboxtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/fake"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
)

// Engine is provider/fake with a shell that stands in for the sandbox's:
// it runs the copy-and-setup script and the services' install as a busybox
// sandbox would, and anything else succeeds.
type Engine struct {
	*fake.Provider
	// SetupExit is the exit code of the setup command; InstallExit that of
	// the services' install.
	SetupExit, InstallExit int
	// NoStamp: the copy reports no scan stamp; CopyFails: the copy fails.
	NoStamp, CopyFails bool
}

// NewEngine is an empty fake engine.
func NewEngine() *Engine {
	e := &Engine{Provider: &fake.Provider{}}
	e.Run = e.run
	return e
}

func (e *Engine) run(_ context.Context, req provider.ExecRequest) (provider.ExecResult, error) {
	if req.Stdin != nil {
		_, _ = io.Copy(io.Discard, req.Stdin)
	}
	script := ""
	if len(req.Cmd) > 2 && req.Cmd[0] == "sh" {
		script = req.Cmd[2]
	}
	switch {
	case script == services.InstallScript:
		return provider.ExecResult{ExitCode: e.InstallExit}, nil
	case strings.Contains(script, "tar -x -f -"):
		if e.CopyFails {
			fmt.Fprintln(req.Stderr, guest.CopyMarker)
			return provider.ExecResult{ExitCode: guest.CopyExitCode}, nil
		}
		if !e.NoStamp {
			fmt.Fprintln(req.Stdout, guest.StampMarker+"2026-11-23 14:00:00.123456789 +0000")
		}
		fmt.Fprintln(req.Stdout, strings.Join(req.Cmd[5:], " "))
		return provider.ExecResult{ExitCode: e.SetupExit}, nil
	}
	return provider.ExecResult{}, nil
}

// Repo makes a repository named "repo" holding files and a.txt, with one
// commit, and returns its directory.
func Repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files["a.txt"] = "a\n"
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	enginetest.CommitRepo(t, dir)
	return dir
}
