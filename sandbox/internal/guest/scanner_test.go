package guest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/internal/scanbin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// TestInstallCutShort: an install whose stream ends early (litterbox
// killed mid-copy: a Ctrl-C, a cancelled MCP call, a kill -9 all close the
// exec's stdin, which the container reads as the end of the scanner) leaves
// no scanner behind, so the next snapshot installs it whole; a truncated
// one in place would crash every scan (exit 139).
func TestInstallCutShort(t *testing.T) {
	enginetest.DockerOrSkip(t)
	ctx := context.Background()
	label := fmt.Sprintf("dev.litterbox.test=guest-%d", os.Getpid())
	out, err := exec.Command("docker", "run", "-d", "--rm", "--label", label,
		"--tmpfs", api.RunDir+":exec,mode=755", "busybox:latest", "sleep", "300").Output()
	if err != nil {
		t.Fatalf("docker run: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	p, err := docker.New(docker.Options{Runner: runner.Exec{}})
	if err != nil {
		t.Fatal(err)
	}
	g := New(&core.Common{Provider: p, Runner: runner.Exec{}, Log: log.New(io.Discard)})
	h := &api.Handle{Slug: "cut", Ref: provider.Ref{ID: id}}

	whole, err := scanbin.For("linux", runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	full, half := filepath.Join(dir, "full"), filepath.Join(dir, "half")
	if err := os.WriteFile(full, whole, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(half, whole[:len(whole)/2], 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(whole)
	bin := Scanner{Path: api.RunDir + "/scan-test", host: full, size: int64(len(whole)), sum: hex.EncodeToString(sum[:])}
	cut := bin
	cut.host = half
	in := func(script string) string {
		t.Helper()
		out, err := exec.Command("docker", "exec", id, "sh", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", script, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	if err := g.InstallScanner(ctx, h, cut); err == nil || !strings.Contains(err.Error(), "cut short") {
		t.Errorf("an install whose stream ended at half the scanner: %v, want an error saying it was cut short", err)
	}
	if got := in(`ls -A ` + api.RunDir); got != "" {
		t.Fatalf("the cut install left %q in %s, want nothing", got, api.RunDir)
	}
	// An install whose litterbox is stopped mid-copy (its context
	// cancelled: the docker CLI is killed) leaves nothing either.
	fifo := filepath.Join(dir, "fifo")
	if err := exec.Command("mkfifo", fifo).Run(); err != nil {
		t.Fatal(err)
	}
	stalled := bin
	stalled.host = fifo
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		_, _ = w.Write(whole[:len(whole)/2])
		time.Sleep(time.Minute) // the rest never comes
		w.Close()
	}()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.InstallScanner(cctx, h, stalled) }()
	in(fmt.Sprintf(`until [ "$(cat %s/scan-test.* 2>/dev/null | wc -c)" -ge %d ]; do sleep 0.05; done`, api.RunDir, len(whole)/2))
	cancel()
	if err := <-done; err == nil {
		t.Error("an install stopped mid-copy returned no error")
	}
	in(`i=0; while ls ` + api.RunDir + `/scan-test.* >/dev/null 2>&1 && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`)
	if got := in(`ls -A ` + api.RunDir); got != "" {
		t.Fatalf("the stopped install left %q in %s, want nothing", got, api.RunDir)
	}

	// The next one installs it whole, and it runs.
	if err := g.InstallScanner(ctx, h, bin); err != nil {
		t.Fatal(err)
	}
	if got := in(`sha256sum ` + bin.Path); !strings.HasPrefix(got, bin.sum) {
		t.Errorf("installed scanner: %s, want sum %s", got, bin.sum)
	}
	if got := in(`ls -A ` + api.RunDir); got != "scan-test" {
		t.Errorf("%s holds %q, want the scanner only", api.RunDir, got)
	}
	// (it runs, and asks for its request on stdin)
	out, _ = exec.Command("docker", "exec", id, bin.Path, "scan-internal", "--root", "/tmp").CombinedOutput()
	if !strings.Contains(string(out), "read scan request") {
		t.Errorf("the installed scanner does not run: %s", out)
	}
}
