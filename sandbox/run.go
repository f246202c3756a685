package sandbox

import (
	"context"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/harnessrun"
)

type (
	// HarnessOptions describe a harness run (`litterbox run`).
	HarnessOptions = harnessrun.Options
	// HarnessRun is what a harness run did.
	HarnessRun = harnessrun.Result
)

// RunHarness runs o.Harness in sandbox name of r, the one of that name or
// one it makes (docs/run.md).
func (s *Sandboxes) RunHarness(ctx context.Context, r *api.Repo, name string, o HarnessOptions) (*HarnessRun, error) {
	return s.harness.Run(ctx, r, name, o)
}
