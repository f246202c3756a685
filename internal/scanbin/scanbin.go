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
	"fmt"
	"sort"
	"strings"
)

// Keep the platforms here and in Platforms the same.
//go:generate go run ./gen -o bin linux/amd64 linux/arm64

//go:embed bin/litterbox-scan-linux-*
var bins embed.FS

// Platforms are the platforms a scanner is embedded for, "os/arch".
var Platforms = []string{"linux/amd64", "linux/arm64"}

// FileName is the name of the scanner for os/arch in bin/.
func FileName(os, arch string) string { return "litterbox-scan-" + os + "-" + arch }

// For returns the scanner for a sandbox of platform os/arch, or an error
// naming the platforms there are.
func For(os, arch string) ([]byte, error) {
	b, err := bins.ReadFile("bin/" + FileName(os, arch))
	if err != nil {
		return nil, fmt.Errorf("no snapshot scanner for %s/%s: litterbox runs sandboxes on %s only; use an image for one of those", os, arch, strings.Join(Platforms, " or "))
	}
	return b, nil
}

// Supported reports whether there is a scanner for os/arch.
func Supported(os, arch string) bool {
	i := sort.SearchStrings(Platforms, os+"/"+arch)
	return i < len(Platforms) && Platforms[i] == os+"/"+arch
}
