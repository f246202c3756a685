package gatewaybin

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestUpToDate regenerates the gateways and compares them with the embedded
// ones byte for byte: the build is reproducible, and nobody changed the
// gateway's source without running `go generate ./internal/gatewaybin`.
func TestUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds the gateway twice")
	}
	want, err := os.ReadFile("bin/GOVERSION")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	args := append([]string{"run", "../scanbin/gen", "-pkg", "github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway", "-name", "litterbox-gateway", "-o", out}, Platforms...)
	if msg, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	for _, p := range Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		embedded, err := For(goos, goarch)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := os.ReadFile(filepath.Join(out, FileName(goos, goarch)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded, fresh) {
			t.Errorf("the embedded gateway for %s differs from a fresh build (committed with %s, this is %s): run `go generate ./internal/gatewaybin` and commit internal/gatewaybin/bin",
				p, strings.TrimSpace(string(want)), runtime.Version())
		}
	}
}

// TestStatic: every embedded gateway is a static ELF executable of its
// platform, so it runs in an image without a C library.
func TestStatic(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, p := range Platforms {
		goos, goarch, _ := strings.Cut(p, "/")
		b, err := For(goos, goarch)
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

// TestUnsupported: a platform without a gateway is an error naming those
// there are.
func TestUnsupported(t *testing.T) {
	if Supported("linux", "riscv64") {
		t.Fatal("riscv64 supported")
	}
	_, err := For("linux", "riscv64")
	if err == nil || !strings.Contains(err.Error(), "linux/amd64 or linux/arm64") {
		t.Fatalf("err = %v", err)
	}
	if !Supported("linux", "arm64") {
		t.Fatal("arm64 not supported")
	}
}
