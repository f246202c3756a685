package egresstest

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The host's go downloads every module from the proxy, and a second
// download with the same module cache asks it nothing.
func TestGoProxy(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go on PATH")
	}
	p := NewGoProxy(3)
	logPath := filepath.Join(t.TempDir(), "log")
	srv := httptest.NewServer(p.Handler("/goproxy/", logPath))
	defer srv.Close()
	dir, cache := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(p.GoMod()), 0o644); err != nil {
		t.Fatal(err)
	}
	download := func() {
		t.Helper()
		cmd := exec.Command("go", "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY="+srv.URL+"/goproxy", "GOSUMDB=off", "GOMODCACHE="+cache, "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go mod download: %v\n%s", err, out)
		}
	}
	download()
	logged, _ := os.ReadFile(logPath)
	if n := strings.Count(string(logged), ".zip\n"); n != 3 {
		t.Fatalf("the proxy served %d zips, want 3:\n%s", n, logged)
	}
	asked := p.Requests()
	download()
	if p.Requests() != asked {
		t.Fatalf("the second download asked the proxy %d times", p.Requests()-asked)
	}
}
