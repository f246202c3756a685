package e2e

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
)

// TestVersionGoBuild builds litterbox the way `go build` or `go install` from
// a clone does, with no -ldflags, and checks that --version still says which
// commit it is: the module version, revision and commit time the toolchain
// recorded. The source is copied into a fresh repository so the commit is
// known and the tree clean; -buildvcs=true because go's default (auto)
// stamps only where .git is a directory, and a git worktree's is a file.
func TestVersionGoBuild(t *testing.T) {
	src := t.TempDir()
	copySource(t, src)
	enginetest.CommitRepo(t, src)
	head := gitOut(t, src, "rev-parse", "HEAD")

	bin := filepath.Join(t.TempDir(), "litterbox")
	goBuild(t, src, "-buildvcs=true", "-o", bin, ".")
	ct, err := strconv.ParseInt(gitOut(t, src, "log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	when := time.Unix(ct, 0).UTC().Format(time.RFC3339)
	want := regexp.MustCompile(`^litterbox v0\.0\.0-\d{14}-` + head[:12] + ` \(commit ` + head + `, ` + when + `\)\n$`)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if got := runOut(t, bin, args...); !want.MatchString(got) {
			t.Errorf("litterbox %s = %q, want %v", args[0], got, want)
		}
	}
}

// TestRelease runs scripts/release.sh (make release) for one target the
// machine can run and one that cannot build: the failing target is named,
// the run exits non-zero and writes no SHA256SUMS; the good run's archive
// checks against SHA256SUMS, and holds a static binary whose --version is the
// VERSION and COMMIT given.
func TestRelease(t *testing.T) {
	dist := t.TempDir()
	env := []string{"VERSION=v9.8.7-test", "COMMIT=0123456789abcdef", "DIST=" + dist}

	cmd := exec.Command("bash", filepath.Join(moduleRoot, "scripts/release.sh"))
	cmd.Env = append(os.Environ(), append(env, "TARGETS=linux/amd64 linux/nonesuch")...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("release with a target that cannot build exited 0:\n%s", out)
	}
	if !strings.Contains(string(out), "release: FAILED linux/nonesuch") || !strings.Contains(string(out), "1 of 2 targets failed: linux/nonesuch") {
		t.Errorf("the failing target is not named:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dist, "SHA256SUMS")); err == nil {
		t.Error("SHA256SUMS written although a target failed")
	}

	cmd = exec.Command("bash", filepath.Join(moduleRoot, "scripts/release.sh"))
	cmd.Env = append(os.Environ(), append(env, "TARGETS=linux/amd64")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}
	name := "litterbox_v9.8.7-test_linux_amd64"
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}  ` + name + `\.tar\.gz\n$`).Match(sums) {
		t.Errorf("SHA256SUMS = %q, want one line for %s.tar.gz", sums, name)
	}
	runOutIn(t, dist, "sha256sum", "--check", "SHA256SUMS")
	runOutIn(t, dist, "tar", "-xzf", name+".tar.gz")
	bin := filepath.Join(dist, name, "litterbox")
	if got, want := runOut(t, bin, "--version"), "litterbox v9.8.7-test (commit 0123456789abcdef)\n"; got != want {
		t.Errorf("--version = %q, want %q", got, want)
	}
	// Static: no program interpreter (dynamic loader) to find in a sandbox.
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the release binary is dynamically linked")
		}
	}
	if _, err := os.Stat(filepath.Join(dist, name, "README.md")); err != nil {
		t.Errorf("the archive has no README.md: %v", err)
	}
}

// copySource copies the module's files (tracked, or new and not ignored) into
// dst.
func copySource(t *testing.T, dst string) {
	t.Helper()
	for _, f := range strings.Split(gitOut(t, moduleRoot, "ls-files", "--cached", "--others", "--exclude-standard"), "\n") {
		data, err := os.ReadFile(filepath.Join(moduleRoot, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func goBuild(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %v: %v\n%s", args, err, out)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(runOutIn(t, dir, "git", args...))
}

func runOut(t *testing.T, name string, args ...string) string {
	t.Helper()
	return runOutIn(t, "", name, args...)
}

func runOutIn(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}
