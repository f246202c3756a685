package gatewaybin

import (
	"testing"

	"github.com/litterbox-dev/litterbox/internal/staticbin/bintest"
)

// TestUpToDate regenerates the gateways and compares them with the embedded
// ones byte for byte: the build is reproducible, and nobody changed the
// gateway's source without running `go generate ./internal/gatewaybin`.
func TestUpToDate(t *testing.T) { bintest.UpToDate(t, Set, "../scanbin/gen", "internal/gatewaybin") }

// TestStatic: every embedded gateway is a static ELF executable of its
// platform, so it runs in an image without a C library.
func TestStatic(t *testing.T) { bintest.Static(t, Set) }

// TestUnsupported: a platform without a gateway is an error naming those
// there are.
func TestUnsupported(t *testing.T) { bintest.Unsupported(t, Set) }
