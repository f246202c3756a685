package egress_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// TestGatewayBuildImage proves, on every engine (Podman's compatible API
// included), that BuildImage makes an image that holds the program at
// ImageProgram, root's and read-only to others, which a container of it
// runs.
func TestGatewayBuildImage(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			if err := engineUp(e); err != nil {
				need(t, "the %s engine does not answer (%v): run %s first", e.name, err, e.ensure)
			}
			o := e.options
			o.Runner = runner.Exec{Log: log.New(io.Discard)}
			p, err := docker.New(o)
			if err != nil {
				t.Fatal(err)
			}
			c := p.Client()
			ctx := context.Background()
			tag := fmt.Sprintf("litterbox-gateway-test:%d", os.Getpid())
			t.Cleanup(func() { _, _ = c.Run(ctx, c.Cmd("rmi", "-f", tag).As(runner.Work)) })
			program := []byte("#!/bin/sh\necho gateway program \"$@\"\n")
			if err := egress.BuildImage(ctx, p, image, tag, program); err != nil {
				t.Fatalf("BuildImage: %v", err)
			}
			res, err := c.Run(ctx, c.Cmd("run", "--rm", "--entrypoint", "sh", tag, "-c",
				"stat -c '%u:%g %a' "+egress.ImageProgram+" && "+egress.ImageProgram+" ran").As(runner.Work))
			if err != nil {
				t.Fatalf("run the image: %v", err)
			}
			if got, want := strings.TrimSpace(string(res.Stdout)), "0:0 755\ngateway program ran"; got != want {
				t.Errorf("the image's program: got %q, want %q", got, want)
			}
		})
	}
}
