package docker_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider/contract"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// engine is one engine the contract suite runs against.
type engine struct {
	name    string
	options docker.Options
	// ensure is the script that brings the engine up.
	ensure string
	// netns, when set, is the network namespace (under /run/netns) the
	// engine runs in: its published ports are reachable only there.
	netns string
	// dead is an endpoint of the same kind where no engine answers; a
	// socket that does not exist when empty.
	dead string
	// runtime, when set, is the runtime every sandbox of the suite runs
	// under; the engine must offer it. kernel checks what a sandbox sees
	// of its kernel (contract.Engine.Kernel).
	runtime string
	kernel  func(t *testing.T, inside string)
	// lacks is contract.Engine.Lacks.
	lacks map[string]string
}

// engines are the engines the contract suite runs against, each brought up
// by its script. Adding one is one line.
var engines = []engine{
	{name: "docker", options: docker.Options{Engine: docker.EngineDocker}, ensure: "scripts/ensure-docker.sh"},
	{name: "podman", options: docker.Options{Engine: docker.EnginePodman, Host: cmp.Or(os.Getenv("CONTAINER_HOST"), "unix:///run/litterbox-podman/podman.sock")},
		ensure: "scripts/ensure-podman.sh", netns: "litterbox-podman"},
	// A Docker engine on "another host" reached over ssh: its ports are
	// forwarded here by the provider, so they are reached from here.
	{name: "ssh", options: docker.Options{Engine: docker.EngineDocker, Host: "ssh://litterbox-remote"},
		ensure: "scripts/ensure-ssh-engine.sh", dead: "ssh://litterbox-remote-down"},
	// The local Docker engine with every sandbox under gVisor.
	{name: "docker+gvisor", options: docker.Options{Engine: docker.EngineDocker}, ensure: "scripts/ensure-gvisor.sh",
		runtime: "runsc", kernel: contract.GVisorKernel,
		lacks: map[string]string{contract.LacksPidsVisible: "gVisor's cgroup files show no pids limit; the host's cgroup of the sandbox holds it, and ends the sandbox at it"}},
}

// TestContract runs the provider contract against every engine that is up.
// With CI=true an engine that does not answer fails the test instead of
// skipping it: in CI every engine must be tested.
func TestContract(t *testing.T) {
	logger := log.New(io.Discard)
	run := runner.Exec{Log: logger}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			err := up(e)
			if err == nil && e.runtime != "" {
				err = offers(e)
			}
			if err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true but the %s engine does not answer (%v): run %s first", e.name, err, e.ensure)
				}
				t.Skipf("the %s engine does not answer (%v); %s brings it up", e.name, err, e.ensure)
			}
			o := e.options
			o.Runner = run
			p, err := docker.New(o)
			if err != nil {
				t.Fatal(err)
			}
			dead := e.options
			dead.Runner, dead.Host = run, cmp.Or(e.dead, "unix:///nonexistent-litterbox-contract.sock")
			dp, err := docker.New(dead)
			if err != nil {
				t.Fatal(err)
			}
			contract.Run(t, contract.Engine{
				Provider: p, Kind: e.options.Engine, Dead: dp,
				Reach:   reach(e.netns),
				Label:   fmt.Sprintf("dev.litterbox.test=contract-%d-%s", os.Getpid(), e.name),
				Runtime: e.runtime, Kernel: e.kernel, Lacks: e.lacks,
			})
		})
	}
}

// up checks that the engine answers.
func up(e engine) error {
	args := []string{"version", "--format", "{{.Server.Version}}"}
	if e.options.Host != "" {
		args = append([]string{"--host", e.options.Host}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// reach fetches a URL from this machine, or from inside network namespace
// netns with nsenter and curl.
func reach(netns string) func(ctx context.Context, url string) (string, error) {
	if netns == "" {
		return contract.Get
	}
	return func(ctx context.Context, url string) (string, error) {
		out, err := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+netns, "curl", "-sS", "--max-time", "5", url).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, out)
		}
		return string(out), nil
	}
}

// offers checks that the engine offers e's runtime.
func offers(e engine) error {
	args := []string{"info", "--format", "{{json .Runtimes}}"}
	if e.options.Host != "" {
		args = append([]string{"--host", e.options.Host}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		return err
	}
	if !strings.Contains(string(out), fmt.Sprintf("%q:", e.runtime)) {
		return fmt.Errorf("the engine offers no runtime %s (it offers %s)", e.runtime, strings.TrimSpace(string(out)))
	}
	return nil
}
