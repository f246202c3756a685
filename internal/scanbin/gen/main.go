// Command gen builds the embedded snapshot scanners (go generate
// ./internal/scanbin): litterbox-scan, static (CGO_ENABLED=0), for every
// platform named in its arguments (os/arch), into the directory -o; with -pkg
// and -name, another program the same way (internal/gatewaybin's gateway).
// The flags make the bytes a function of the source and the Go version alone (no paths, no VCS
// stamp, no build id), so a second run gives identical files; the Go
// version is written beside them in GOVERSION, because another one gives
// other bytes, and each build's SHA-256 in SUMS (as sha256sum prints it),
// so that litterbox names a build without reading it (staticbin.Set.Sum).
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

func main() {
	out := flag.String("o", "bin", "directory to write the scanners into")
	pkg := flag.String("pkg", "github.com/litterbox-dev/litterbox/scanner/cmd/litterbox-scan", "the package to build")
	name := flag.String("name", "litterbox-scan", "the file name before -OS-ARCH")
	flag.Parse()
	if err := run(*out, *pkg, *name, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, pkg, name string, platforms []string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, p := range platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("platform %q: want os/arch", p)
		}
		file := name + "-" + goos + "-" + goarch
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=",
			"-o", filepath.Join(abs, file), pkg)
		// Only what is set here decides the output: not the caller's
		// GOFLAGS, cgo or microarchitecture levels.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch,
			"GOFLAGS=", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build %s for %s: %w", name, p, err)
		}
		b, err := os.ReadFile(filepath.Join(abs, file))
		if err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%x  %s\n", sha256.Sum256(b), file)
	}
	if err := os.WriteFile(filepath.Join(out, "SUMS"), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "GOVERSION"), []byte(runtime.Version()+"\n"), 0o644)
}
