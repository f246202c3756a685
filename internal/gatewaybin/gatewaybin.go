// Package gatewaybin holds the egress gateway (gateway/cmd/litterbox-gateway)
// built static for every Linux platform an engine can run, embedded, so
// that any litterbox binary can copy the right one into a sandbox's gateway
// container (and, through the volume they share, its relay into the
// sandbox). The binaries are committed, as internal/scanbin's are, for the
// same reasons: `go install` runs no generator, and a release archive must
// work on a machine without Go. TestUpToDate says they are what `go
// generate` makes of the current source.
package gatewaybin

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

// Keep the platforms here and in Platforms the same.
//go:generate go run ../scanbin/gen -pkg github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway -name litterbox-gateway -o bin linux/amd64 linux/arm64

//go:embed bin/litterbox-gateway-linux-*
var bins embed.FS

// Platforms are the platforms a gateway is embedded for, "os/arch".
var Platforms = []string{"linux/amd64", "linux/arm64"}

// FileName is the name of the gateway for os/arch in bin/.
func FileName(os, arch string) string { return "litterbox-gateway-" + os + "-" + arch }

// For returns the gateway for an engine of platform os/arch, or an error
// naming the platforms there are.
func For(os, arch string) ([]byte, error) {
	b, err := bins.ReadFile("bin/" + FileName(os, arch))
	if err != nil {
		return nil, fmt.Errorf("no egress gateway for %s/%s: litterbox runs gateways on %s only", os, arch, strings.Join(Platforms, " or "))
	}
	return b, nil
}

// Supported reports whether there is a gateway for os/arch.
func Supported(os, arch string) bool {
	i := sort.SearchStrings(Platforms, os+"/"+arch)
	return i < len(Platforms) && Platforms[i] == os+"/"+arch
}
