package provision

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/sandboxtest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
)

// fixture is a repository named "repo" with one commit, and a provisioner
// over a fake engine whose commands behave as a busybox sandbox's would for
// what create runs.
type fixture struct {
	t   *testing.T
	ctx context.Context
	p   *sandboxtest.Engine
	s   *Provisioner
	r   *api.Repo
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	dir := sandboxtest.Repo(t, files)
	f := &fixture{t: t, ctx: context.Background(), p: sandboxtest.NewEngine()}
	c := &core.Common{Provider: f.p, Runner: runner.Exec{}, Log: log.New(io.Discard), Options: api.Options{Image: api.DefaultImage, ExtraLabels: map[string]string{}}}
	g := guest.New(c)
	iso := isolation.New(c, g)
	gate := netgate.New(c)
	pl := pool.New(c, g, iso, gate)
	inv := inventory.New(c, pl, gate)
	sv := services.New(c)
	f.s = New(c, g, iso, pl, inv, sv, recording.New(c, g, inv, sv), gate)
	r, err := core.OpenRepo(f.ctx, c.Runner, dir)
	if err != nil {
		t.Fatal(err)
	}
	f.r = r
	return f
}

// git runs git in the repository and returns its trimmed output.
func (f *fixture) git(args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", f.r.Root()}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

func (f *fixture) mustCreate(name string) *api.Created {
	f.t.Helper()
	c, err := f.s.Create(f.ctx, f.r, name, api.CreateOptions{})
	if err != nil {
		f.t.Fatalf("create %s: %v", name, err)
	}
	return c
}
