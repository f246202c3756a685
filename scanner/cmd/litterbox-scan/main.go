// Command litterbox-scan is the half of a snapshot that runs inside a
// sandbox (package scanner). It is built static for each Linux platform by `go
// generate ./internal/scanbin` and embedded in litterbox, which copies the
// one matching the sandbox's platform into it; nobody runs it by hand.
package main

import (
	"fmt"
	"os"

	"github.com/litterbox-dev/litterbox/scanner"
)

func main() {
	if err := scanner.Main(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
