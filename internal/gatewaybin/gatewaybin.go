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

	"github.com/litterbox-dev/litterbox/internal/staticbin"
)

// Keep the platforms here and in Platforms the same.
//go:generate go run ../scanbin/gen -pkg github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway -name litterbox-gateway -o bin linux/amd64 linux/arm64

//go:embed bin/litterbox-gateway-linux-* bin/GOVERSION bin/SUMS
var bins embed.FS

// Set is the embedded gateways.
var Set = &staticbin.Set{FS: bins, Name: "litterbox-gateway", What: "egress gateway", Only: "litterbox runs gateways on %s only",
	Pkg: "github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway", Platforms: []string{"linux/amd64", "linux/arm64"}}

// For returns the gateway for an engine of platform os/arch, or an error
// naming the platforms there are.
func For(os, arch string) ([]byte, error) { return Set.For(os, arch) }
