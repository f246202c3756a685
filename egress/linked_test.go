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
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// A linked gateway (a warm pool's, which holds no secret) is installed and
// told ready in one exec: once InstallLinkedReady returns, it serves its
// sandbox, with no `ctl ready` of its own.
func TestInstallLinkedReady(t *testing.T) {
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
	ctx := context.Background()
	label := fmt.Sprintf("dev.litterbox.test=egress-linked-%d", os.Getpid())
	k, v, _ := strings.Cut(label, "=")
	plan, err := egress.ConfineLinked(sandboxSpec(fmt.Sprintf("lb-linked-%d", os.Getpid()), label), image,
		policy.Policy{Mode: policy.ModeAllowlist}, map[string]string{k: v}, "litterbox-gateway", "/tmp/sandbox.name")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, p: p, label: label}
	t.Cleanup(r.cleanup)
	gw, err := p.Create(ctx, plan.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	if ready, err := egress.IsReady(ctx, p, gw.Ref); err == nil && ready {
		t.Fatal("the gateway answers ready before its program is installed")
	}
	if err := egress.InstallLinkedReady(ctx, p, gw.Ref, bytes.NewReader(bin)); err != nil {
		t.Fatal(err)
	}
	if ready, err := egress.IsReady(ctx, p, gw.Ref); err != nil || !ready {
		t.Fatalf("after InstallLinkedReady the gateway is ready: %v (%v); want true", ready, err)
	}
}
