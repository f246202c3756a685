package netgate

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// TestCreateMakesMissingImage: a create's gateway runs from the gateway
// image without asking the engine for it first (Tag); on an engine that
// lacks it, the gateway's create makes it, then the gateway, and the
// engine never tries to pull it from a registry.
func TestCreateMakesMissingImage(t *testing.T) {
	enginetest.DockerOrSkip(t)
	ctx := context.Background()
	id := fmt.Sprintf("netgate-%d", os.Getpid())
	tag := "litterbox-gateway:test-" + id
	old := imageTag
	imageTag = func() string { return tag }
	t.Cleanup(func() {
		imageTag = old
		_ = exec.Command("docker", "rm", "-f", id).Run()
		_ = exec.Command("docker", "image", "rm", tag).Run()
	})
	p, err := docker.New(docker.Options{Runner: runner.Exec{}})
	if err != nil {
		t.Fatal(err)
	}
	g := New(&core.Common{Provider: p, Runner: runner.Exec{}, Log: log.New(io.Discard)})
	if out, err := exec.Command("docker", "image", "inspect", g.Tag()).CombinedOutput(); err == nil {
		t.Fatalf("the test's image %s exists already: %s", tag, out)
	}
	gw := provider.Spec{Name: id, Image: g.Tag(), NoPull: true, Network: provider.NetworkNone,
		Labels: map[string]string{"dev.litterbox.test": id}, Cmd: []string{"sleep", "300"}}
	if err := g.Create(ctx, gw); err != nil {
		t.Fatalf("Create of a gateway whose image the engine lacks: %v", err)
	}
	out, err := exec.Command("docker", "inspect", "--format", "{{.State.Running}} {{.Config.Image}}", id).Output()
	if err != nil || strings.TrimSpace(string(out)) != "true "+tag {
		t.Fatalf("the gateway is not running from %s: %q %v", tag, out, err)
	}
}
