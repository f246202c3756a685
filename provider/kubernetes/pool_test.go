package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// Pods as kubectl annotate -o json prints them.
func runningPod(name string) string {
	return `{"kind":"Pod","metadata":{"name":"` + name + `"},"status":{"phase":"Running","containerStatuses":[{"name":"sandbox","state":{"running":{}}}]}}`
}

func deletingPod(name string) string {
	return `{"kind":"Pod","metadata":{"name":"` + name + `","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Running","containerStatuses":[{"name":"sandbox","state":{"running":{}}}]}}`
}

func endedPod(name string) string {
	return `{"kind":"Pod","metadata":{"name":"` + name + `"},"status":{"phase":"Failed"}}`
}

// A claim is one kubectl call, which also says whether the pod runs: one
// being deleted (a grace period still running its container) or not
// running is ErrStopped, so the create takes another member.
func TestClaimReadsThePodBack(t *testing.T) {
	argv := []string{"kubectl", "annotate", "--overwrite", "pod", "pool-1", "dev.litterbox.claimed-by=a", "-o", "json"}
	for _, c := range []struct {
		pod  string
		want error
	}{{runningPod("pool-1"), nil}, {deletingPod("pool-1"), provider.ErrStopped}, {endedPod("pool-1"), provider.ErrStopped}} {
		f := runnertest.New(t)
		p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		f.Expect(argv, c.pod, nil)
		if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{}, "a"); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("Claim of %s = %v, want %v", c.pod, err, c.want)
		}
	}
}

// A confined member's claim annotates its gateway's pod in the same call
// (the gateway reads the name from it), and reads both back from what
// kubectl prints (one object after the other): either pod gone, being
// deleted or not running fails the claim as the member's own would, so
// the create goes cold. It used to be a kubectl exec into the gateway
// beside the annotate.
func TestClaimWithGateway(t *testing.T) {
	argv := []string{"kubectl", "annotate", "--overwrite", "pod", "pool-1", "pool-1-gw", "dev.litterbox.claimed-by=fix-login", "-o", "json"}
	notFound := &runner.ExitError{Command: "kubectl annotate", ExitCode: 1, Stderr: `Error from server (NotFound): pods "pool-1-gw" not found`}
	for _, c := range []struct {
		what, out string
		err       error
		want      error
	}{
		{"both run", runningPod("pool-1") + "\n" + runningPod("pool-1-gw") + "\n", nil, nil},
		{"the gateway is being deleted", runningPod("pool-1") + "\n" + deletingPod("pool-1-gw"), nil, provider.ErrStopped},
		{"the gateway ended", runningPod("pool-1") + endedPod("pool-1-gw"), nil, provider.ErrStopped},
		{"the member ended", endedPod("pool-1") + runningPod("pool-1-gw"), nil, provider.ErrStopped},
		{"the gateway is gone", runningPod("pool-1"), notFound, provider.ErrNotFound},
		{"the gateway is not printed", runningPod("pool-1"), nil, provider.ErrNotFound},
	} {
		f := runnertest.New(t)
		p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		f.Expect(argv, c.out, c.err)
		err = p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{ID: "pool-1-gw", NetworkID: "pool-1-gw"}, "fix-login")
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: Claim = %v, want %v", c.what, err, c.want)
		}
	}
	f := runnertest.New(t)
	p, _ := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(argv, "{not json", nil)
	if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{ID: "pool-1-gw"}, "fix-login"); err == nil || !strings.Contains(err.Error(), "parse kubectl annotate") {
		t.Errorf("output that is not JSON: %v", err)
	}
}

// A gateway pod reads its own claim annotation from a downwardAPI volume,
// read-only, at the directory GatewayNameFile names; its sandbox's pod
// mounts no such volume.
func TestGatewayPodMountsItsClaim(t *testing.T) {
	link := &provider.Link{Sandbox: "pool-1", Gateway: "pool-1-gw", TCP: []int{3128}}
	mounts := func(s provider.Spec) (claim map[string]any, volumes int) {
		t.Helper()
		b, err := podManifest(s, "10.0.0.9")
		if err != nil {
			t.Fatal(err)
		}
		var pod struct {
			Spec struct {
				Volumes    []map[string]any
				Containers []struct {
					Name         string
					VolumeMounts []map[string]any
				}
			}
		}
		if err := json.Unmarshal(b, &pod); err != nil {
			t.Fatal(err)
		}
		for _, v := range pod.Spec.Volumes {
			if v["downwardAPI"] != nil {
				volumes++
			}
		}
		for _, c := range pod.Spec.Containers {
			for _, m := range c.VolumeMounts {
				if m["mountPath"] == claimDir {
					if c.Name != mainContainer || m["readOnly"] != true {
						t.Errorf("claim mounted in %s: %v", c.Name, m)
					}
					claim = m
				}
			}
		}
		return claim, volumes
	}
	gw := provider.Spec{Name: "pool-1-gw", Image: "busybox:latest", User: "65532:1000", Link: link, Cmd: []string{"sh"}}
	if m, n := mounts(gw); m == nil || n != 1 {
		t.Errorf("gateway pod: claim mount %v, %d downwardAPI volumes", m, n)
	}
	if got := (&Provider{}).GatewayNameFile(); !strings.HasPrefix(got, claimDir+"/") {
		t.Errorf("GatewayNameFile %q is not under %s", got, claimDir)
	}
	sb := provider.Spec{Name: "pool-1", Image: "busybox:latest", User: "1000:1000", Link: link, Cmd: []string{"sh"}}
	if m, n := mounts(sb); m != nil || n != 0 {
		t.Errorf("sandbox pod: claim mount %v, %d downwardAPI volumes", m, n)
	}
}

// A linked sandbox's pod waits for its gateway's address with one kubectl,
// a watch of the pod that waits for it to be made, and ends once it has
// its address: no try again while it does not exist, no look at it after
// a wait that timed out.
func TestGatewayIPWaits(t *testing.T) {
	watch := []string{"kubectl", "get", "pods", "--field-selector", "metadata.name=gw", "--watch", "-o", "json"}
	pending := `{"kind":"Pod","metadata":{"name":"gw"},"status":{"phase":"Pending"}}`
	withIP := `{"kind":"Pod","metadata":{"name":"gw"},"status":{"phase":"Pending","podIP":"10.244.0.7"}}`

	f := runnertest.New(t)
	p, _ := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(watch, pending+"\n"+withIP+"\n"+withIP, nil)
	if ip, err := p.gatewayIP(context.Background(), "gw"); ip != "10.244.0.7" || err != nil {
		t.Errorf("gatewayIP = %q, %v", ip, err)
	}

	// A pod that cannot start is given up as soon as it says so.
	failed := `{"kind":"Pod","metadata":{"name":"gw"},"status":{"phase":"Pending","containerStatuses":[{"state":{"waiting":{"reason":"ErrImagePull"}}}]}}`
	f = runnertest.New(t)
	p, _ = New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(watch, pending+failed, nil)
	if ip, err := p.gatewayIP(context.Background(), "gw"); err == nil || !strings.Contains(err.Error(), "cannot start") {
		t.Errorf("a gateway pod that cannot start: gatewayIP = %q, %v; want it given up", ip, err)
	}

	// An earlier gateway of the name, being deleted, is not the one
	// waited for.
	going := `{"kind":"Pod","metadata":{"name":"gw","deletionTimestamp":"2026-11-30T10:00:00Z"},"status":{"phase":"Running","podIP":"10.244.0.3"}}`
	f = runnertest.New(t)
	p, _ = New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(watch, going+pending+withIP, nil)
	if ip, err := p.gatewayIP(context.Background(), "gw"); ip != "10.244.0.7" || err != nil {
		t.Errorf("an earlier gateway going: gatewayIP = %q, %v", ip, err)
	}

	// A watch the apiserver ended is followed by another.
	f = runnertest.New(t)
	p, _ = New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(watch, pending, nil).Expect(watch, withIP, nil)
	if ip, err := p.gatewayIP(context.Background(), "gw"); ip != "10.244.0.7" || err != nil {
		t.Errorf("a watch ended: gatewayIP = %q, %v", ip, err)
	}

	// A pod that never gets an address (unschedulable: the node is full)
	// is given up once the time is up.
	f = runnertest.New(t)
	p, _ = New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect(watch, pending, nil)
	if ip, err := p.gatewayIPWithin(context.Background(), "gw", 0); err == nil || !strings.Contains(err.Error(), "has no address") {
		t.Errorf("a pod with no address past the time: gatewayIP = %q, %v; want it given up", ip, err)
	}
}

// A pod's start is waited for with one watch of it, whatever it takes: a
// pod that is ready ends it, one that cannot start or is deleted fails it
// at once.
func TestWaitReadyWatches(t *testing.T) {
	watch := []string{"kubectl", "get", "pods", "--field-selector", "metadata.name=sb", "--watch", "-o", "json"}
	pending := `{"kind":"Pod","metadata":{"name":"sb"},"status":{"phase":"Pending"}}`
	ready := `{"kind":"Pod","metadata":{"name":"sb"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`
	failed := `{"kind":"Pod","metadata":{"name":"sb"},"status":{"phase":"Pending","containerStatuses":[{"name":"sandbox","state":{"waiting":{"reason":"ImagePullBackOff"}}}]}}`
	deleted := `{"kind":"Pod","metadata":{"name":"sb","deletionTimestamp":"2026-11-30T10:00:00Z"},"status":{"phase":"Pending"}}`
	for _, c := range []struct {
		out, want string
	}{{pending + pending + ready + pending, ""}, {pending + failed, "cannot start"}, {pending + deleted, "being deleted"}} {
		f := runnertest.New(t)
		p, _ := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
		f.Expect(watch, c.out, nil)
		err := p.waitReady(context.Background(), "sb")
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("waitReady of %s = %v, want %q", c.out, err, c.want)
		}
	}
}
