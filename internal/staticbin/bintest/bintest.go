// Package bintest checks a staticbin.Set in its package's tests: that the
// embedded builds are what `go generate` makes of the current source, that
// each is a static executable of its platform, and that a platform without
// one is an error naming those there are.
package bintest

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/internal/staticbin"
)

// UpToDate regenerates the builds with the generator at gen (a path from the
// test's package, "../scanbin/gen") and compares them with the embedded ones
// byte for byte: the build is reproducible, and nobody changed the source
// without running go generate in pkgDir.
func UpToDate(t *testing.T, s *staticbin.Set, gen, pkgDir string) {
	if testing.Short() {
		t.Skipf("cross-builds the %s twice", s.What)
	}
	want, err := s.FS.ReadFile("bin/GOVERSION")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := append([]string{"run", gen, "-pkg", s.Pkg, "-name", s.Name, "-o", out}, s.Platforms...)
	if msg, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	for _, p := range s.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		embedded, err := s.For(goos, goarch)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(filepath.Join(out, s.FileName(goos, goarch)))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := s.Sum(goos, goarch)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(embedded)); sum != got {
			t.Errorf("bin/SUMS names %s for %s, whose SHA-256 is %s: run `go generate ./%s`", sum, p, got, pkgDir)
		}
		if !bytes.Equal(embedded, fresh) {
			t.Errorf("the embedded %s for %s differs from a fresh build (committed with %s, this is %s): run `go generate ./%s` and commit %s/bin",
				s.What, p, strings.TrimSpace(string(want)), runtime.Version(), pkgDir, pkgDir)
		}
	}
}

// Static checks that every embedded build is a static ELF executable of its
// platform, so it runs in an image without a C library.
func Static(t *testing.T, s *staticbin.Set) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, p := range s.Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		b, err := s.For(goos, goarch)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if f.Machine != machines[goarch] || f.Type != elf.ET_EXEC {
			t.Errorf("%s: machine %v type %v", p, f.Machine, f.Type)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked", p)
			}
		}
	}
}

// Unsupported checks that a platform without a build is an error naming the
// platforms there are.
func Unsupported(t *testing.T, s *staticbin.Set) {
	if s.Supported("linux", "riscv64") {
		t.Fatal("riscv64 supported")
	}
	_, err := s.For("linux", "riscv64")
	if err == nil || !strings.Contains(err.Error(), "linux/amd64 or linux/arm64") {
		t.Fatalf("err = %v", err)
	}
	if !s.Supported("linux", "arm64") {
		t.Fatal("arm64 not supported")
	}
}
