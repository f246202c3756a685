package docker

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// A full shared bridge does not stop a create: the sandbox that finds no
// address left on it gets a network of its own, and nothing else is left.
// The bridge here is a test's own, with room for one container (a /30).
func TestSharedBridgeFull(t *testing.T) {
	if err := exec.Command("docker", "version").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but Docker does not answer: %v", err)
		}
		t.Skip("needs a Docker engine")
	}
	ctx := context.Background()
	label := fmt.Sprintf("dev.litterbox.test=sharedfull-%d", os.Getpid())
	bridge := fmt.Sprintf("lbtest-full-%d", os.Getpid())
	defer func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
		for _, id := range splitFields(out) {
			_ = exec.Command("docker", "rm", "-f", id).Run()
		}
		_ = exec.Command("docker", "network", "rm", bridge).Run()
		out, _ = exec.Command("docker", "network", "ls", "-q", "--filter", "label="+label).Output()
		for _, id := range splitFields(out) {
			_ = exec.Command("docker", "network", "rm", id).Run()
		}
	}()
	if out, err := exec.Command("docker", "network", "create", "--label", label, "--opt", "com.docker.network.bridge.enable_icc=false", "--subnet", "10.251.93.0/30", bridge).CombinedOutput(); err != nil {
		t.Skipf("cannot make a /30 bridge here: %v: %s", err, out)
	}
	d := *DockerDialect
	d.SharedNetwork = bridge
	p, err := New(Options{Runner: runner.Exec{}})
	if err != nil {
		t.Fatal(err)
	}
	p.c.Dialect = &d
	spec := func(name string) provider.Spec {
		return provider.Spec{Name: name, Image: "busybox:latest", Network: provider.NetworkIsolated,
			Labels: map[string]string{"dev.litterbox.test": label[len("dev.litterbox.test="):], "dev.litterbox.slug": name},
			Cmd:    []string{"sleep", "300"}}
	}
	first, err := p.Create(ctx, spec(bridge+"-a"))
	if err != nil {
		t.Fatalf("create on the bridge: %v", err)
	}
	if first.Network != bridge || first.Ref.NetworkID != "" {
		t.Fatalf("first sandbox %+v; want it on %s", first, bridge)
	}
	second, err := p.Create(ctx, spec(bridge+"-b"))
	if err != nil {
		t.Fatalf("create with the bridge full: %v; want a network of its own", err)
	}
	if second.Ref.NetworkID == "" || second.Network != bridge+"-b" || second.State != provider.StateRunning {
		t.Errorf("second sandbox %+v; want it running on its own network %s-b", second, bridge)
	}
	list, err := p.List(ctx, provider.Selector{Labels: map[string]string{"dev.litterbox.test": label[len("dev.litterbox.test="):]}})
	if err != nil || len(list) != 2 {
		t.Errorf("list = %+v, %v; want the two sandboxes and nothing else", list, err)
	}
}

func splitFields(b []byte) []string { return strings.Fields(string(b)) }
