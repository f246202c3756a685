// Package scanbin holds the snapshot scanner (scanner/cmd/litterbox-scan)
// built static for every Linux platform a sandbox can run on, embedded, so
// that any litterbox binary (cgo or not, Linux or macOS, whatever its
// architecture) can copy the right one into a sandbox. The binaries are
// committed: `go install` runs no generator, and a release archive must
// work on a machine without Go. docs/architecture.md says why; TestUpToDate
// says they are what `go generate` makes of the current source.
package scanbin

import (
	"embed"

	"github.com/litterbox-dev/litterbox/internal/staticbin"
)

// Keep the platforms here and in Platforms the same.
//go:generate go run ./gen -o bin linux/amd64 linux/arm64

//go:embed bin/litterbox-scan-linux-* bin/GOVERSION bin/SUMS
var bins embed.FS

// Platforms are the platforms a scanner is embedded for, "os/arch".
var Platforms = []string{"linux/amd64", "linux/arm64"}

// Set is the embedded scanners.
var Set = &staticbin.Set{FS: bins, Name: "litterbox-scan", What: "snapshot scanner",
	Only: "litterbox runs sandboxes on %s only; use an image for one of those",
	Pkg:  "github.com/litterbox-dev/litterbox/scanner/cmd/litterbox-scan", Platforms: Platforms}

// FileName is the name of the scanner for os/arch in bin/.
func FileName(os, arch string) string { return Set.FileName(os, arch) }

// For returns the scanner for a sandbox of platform os/arch, or an error
// naming the platforms there are.
func For(os, arch string) ([]byte, error) { return Set.For(os, arch) }

// Supported reports whether there is a scanner for os/arch.
func Supported(os, arch string) bool { return Set.Supported(os, arch) }
