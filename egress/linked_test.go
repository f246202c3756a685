package egress_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// A linked gateway (a warm pool's, which holds no secret) is installed and
// told ready in one exec: once InstallLinkedReady returns, it serves its
// sandbox, with no `ctl ready` of its own.
func TestInstallLinkedReady(t *testing.T) {
	p, gw, bin := linkedGateway(t, "ready", nil)
	ctx := context.Background()
	if ready, err := egress.IsReady(ctx, p, gw); err == nil && ready {
		t.Fatal("the gateway answers ready before its program is installed")
	}
	if err := egress.InstallLinkedReady(ctx, p, gw, bytes.NewReader(bin)); err != nil {
		t.Fatal(err)
	}
	if ready, err := egress.IsReady(ctx, p, gw); err != nil || !ready {
		t.Fatalf("after InstallLinkedReady the gateway is ready: %v (%v); want true", ready, err)
	}
}

// A linked gateway whose program never starts (its main process does not
// run it) is waited for a bounded time, and InstallLinkedReady then says
// that the gateway does not answer.
func TestInstallLinkedReadyGivesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the gateway's whole wait (20 s)")
	}
	p, gw, bin := linkedGateway(t, "mute", []string{"sleep", "3600"})
	err := egress.InstallLinkedReady(context.Background(), p, gw, bytes.NewReader(bin))
	if err == nil || !strings.Contains(err.Error(), "does not answer on its control socket") {
		t.Fatalf("install into a gateway that never answers = %v; want it to say the gateway does not answer", err)
	}
}

// linkedGateway makes a linked gateway on docker (its main process cmd
// instead of the one that starts the program, if set), with no program
// yet, and the program to install.
func linkedGateway(t *testing.T, what string, cmd []string) (*docker.Provider, provider.Ref, []byte) {
	t.Helper()
	e := engines[0]
	if err := engineUp(e); err != nil {
		need(t, "the docker engine does not answer (%v): run %s first", err, e.ensure)
	}
	bin, err := os.ReadFile(build(t, "github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway"))
	if err != nil {
		t.Fatal(err)
	}
	o := e.options
	o.Runner = runner.Exec{Log: log.New(io.Discard)}
	p, err := docker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	label := fmt.Sprintf("dev.litterbox.test=egress-linked-%s-%d", what, os.Getpid())
	k, v, _ := strings.Cut(label, "=")
	plan, err := egress.ConfineLinked(sandboxSpec(fmt.Sprintf("lb-linked-%s-%d", what, os.Getpid()), label), image,
		policy.Policy{Mode: policy.ModeAllowlist}, map[string]string{k: v}, "litterbox-gateway", "/tmp/sandbox.name")
	if err != nil {
		t.Fatal(err)
	}
	if cmd != nil {
		plan.Gateway.Cmd = cmd
	}
	r := &rig{t: t, p: p, label: label}
	t.Cleanup(r.cleanup)
	gw, err := p.Create(context.Background(), plan.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	return p, gw.Ref, bin
}
