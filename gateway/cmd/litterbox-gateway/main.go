// Command litterbox-gateway is a sandbox's way out (package gateway): the
// proxy and resolver that run in the gateway's container, judged by the
// policy the host sets, and the relay that runs inside the sandbox. It is
// built static for each Linux platform by `go generate
// ./internal/gatewaybin` and embedded in litterbox, which copies it into the
// gateway's container; nobody runs it by hand.
package main

import (
	"fmt"
	"os"

	// The gateway verifies the real servers of the hosts secrets are
	// bound to itself, in a container whose image (busybox) has no CA
	// certificates: Mozilla's roots, as Go's module mirrors them, are
	// used where the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/litterbox-dev/litterbox/gateway"
)

func main() {
	if err := gateway.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "litterbox-gateway:", err)
		os.Exit(1)
	}
}
