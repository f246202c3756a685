// Command litterbox gives coding agents disposable Docker sandboxes holding a
// copy of the repository, and keeps their work on git branches litterbox/<name>.
// Its body is internal/cli.
package main

import (
	"os"

	"github.com/litterbox-dev/litterbox/internal/cli"
)

func main() {
	os.Exit(cli.Main())
}
