package docker

import (
	"context"
	"io"

	"github.com/litterbox-dev/litterbox/runner"
)

// Build makes image tag from the build context tarball, whose Dockerfile is
// at dockerfile in it. --force-rm: no container of the build is left, even
// when it fails; no --pull: FROM's image is the engine's own when it holds
// it. DOCKER_BUILDKIT=0: BuildKit asks the registry about FROM's image even
// when the engine holds it, and an engine may have no registry to reach;
// the classic builder uses what is there.
func (c *Client) Build(ctx context.Context, tag, dockerfile string, tarball io.Reader) error {
	_, err := c.Run(ctx, c.Cmd("build", "-q", "--force-rm", "-f", dockerfile, "-t", tag, "-").WithStdin(tarball).WithEnv("DOCKER_BUILDKIT=0").As(runner.Work))
	return err
}
