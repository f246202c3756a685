package kubernetes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// oneShot is a one-shot command's provider of kubeconfig kc, in a state
// directory of its own (short: the socket's path is bounded).
func oneShotProvider(t *testing.T, f *runnertest.Fake, kc, ns string) *Provider {
	t.Helper()
	state, err := os.MkdirTemp("", "lbk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	p, err := New(Options{Kubectl: "kubectl", Runner: f, Kubeconfig: kc, Namespace: ns, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeKubeconfig(t *testing.T, text string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kc, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}

// Every process of the user with the same kubeconfig, context and
// namespace finds the same shared proxy; another namespace, or the
// kubeconfig edited (another current context), another one. Its socket's
// path stays short.
func TestSharedProxyDir(t *testing.T) {
	kc := writeKubeconfig(t, "current-context: a\n")
	dir := func(o Options) string {
		o.Kubectl, o.StateDir = "kubectl", "/run/user/1000/litterbox/kubernetes"
		p, _ := New(o)
		return p.sharedDir()
	}
	a := dir(Options{Kubeconfig: kc, Namespace: "ns1"})
	if b := dir(Options{Kubeconfig: kc, Namespace: "ns1"}); a != b || a == "" {
		t.Errorf("two processes' directories: %q and %q", a, b)
	}
	if filepath.Dir(a) != "/run/user/1000/litterbox/kubernetes" || len(filepath.Join(a, proxySocket)) > 60 {
		t.Errorf("directory %q", a)
	}
	for what, o := range map[string]Options{
		"another namespace": {Kubeconfig: kc, Namespace: "ns2"},
		"another context":   {Kubeconfig: kc, Namespace: "ns1", Context: "b"},
	} {
		if b := dir(o); b == a {
			t.Errorf("%s: the same directory %q", what, a)
		}
	}
	if err := os.WriteFile(kc, []byte("current-context: b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b := dir(Options{Kubeconfig: kc, Namespace: "ns1"}); b == a {
		t.Errorf("an edited kubeconfig: the same directory %q", a)
	}
}

// shareProxy makes p's shared proxy directory, mode 0700, saying
// namespace ns1, and returns its socket's path.
func shareProxy(t *testing.T, p *Provider) string {
	t.Helper()
	dir := p.sharedDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, proxyNS), []byte("ns1"), 0o600); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, proxySocket)
}

// A one-shot command's claim runs no kubectl when the shared proxy
// answers, and marks it used.
func TestOneShotClaimThroughTheSharedProxy(t *testing.T) {
	p := oneShotProvider(t, runnertest.New(t), writeKubeconfig(t, "x"), "ns1")
	sock := shareProxy(t, p)
	fp := newFakeProxyAt(t, sock, map[string]string{"pool-1": runningPod("pool-1")})
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(sock, old, old); err != nil {
		t.Fatal(err)
	}
	if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{}, "a"); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	want := []string{`PATCH localhost /api/v1/namespaces/ns1/pods/pool-1 application/merge-patch+json {"metadata":{"annotations":{"dev.litterbox.claimed-by":"a"}}}`}
	if !slices.Equal(fp.reqs, want) {
		t.Errorf("the proxy was asked %q, want %q", fp.reqs, want)
	}
	if fi, err := os.Stat(sock); err != nil || fi.ModTime().Before(time.Now().Add(-time.Minute)) {
		t.Errorf("the claim did not mark the proxy used: %v", err)
	}
}

// A shared proxy that is gone (a socket left by a kill -9), or a directory
// others can open, leaves the claim to kubectl annotate: the create never
// fails because of it.
func TestOneShotClaimWithoutTheSharedProxy(t *testing.T) {
	for _, what := range []string{"none", "stale", "open to others"} {
		f := runnertest.New(t)
		p := oneShotProvider(t, f, writeKubeconfig(t, "x"), "ns1")
		switch what {
		case "stale":
			sock := shareProxy(t, p)
			if err := os.WriteFile(sock, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		case "open to others":
			fp := newFakeProxyAt(t, shareProxy(t, p), map[string]string{"pool-1": runningPod("pool-1")})
			if err := os.Chmod(filepath.Dir(fp.sock), 0o755); err != nil {
				t.Fatal(err)
			}
			defer func() {
				if len(fp.reqs) > 0 {
					t.Errorf("%s: the proxy was asked %q", what, fp.reqs)
				}
			}()
		}
		f.Expect([]string{"kubectl", "--kubeconfig", p.o.Kubeconfig, "--namespace", "ns1", "annotate", "--overwrite", "pod", "pool-1", "dev.litterbox.claimed-by=a", "-o", "json"}, runningPod("pool-1"), nil)
		if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{}, "a"); err != nil {
			t.Errorf("%s: Claim = %v", what, err)
		}
	}
}

// A fill starts the process that keeps the shared proxy (litterbox again,
// with the proxy's argv and its directory in the environment), once
// however many fills ask; delete --pool ends it and its directory goes.
func TestSharedProxyLifecycle(t *testing.T) {
	p := oneShotProvider(t, runnertest.New(t), writeKubeconfig(t, "x"), "ns1")
	out := filepath.Join(t.TempDir(), "started")
	// The stand-in records how it was started, and holds the lock (its
	// file descriptor 3) until it is ended.
	daemon := filepath.Join(t.TempDir(), "litterbox")
	script := "#!/bin/sh\necho \"$" + ProxyDaemonEnv + " $*\" >> " + out + "\nexec sleep 60\n"
	if err := os.WriteFile(daemon, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	p.o.Daemon = daemon
	dir := p.sharedDir()
	p.KeepClaims(context.Background())
	p.KeepClaims(context.Background())
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(got) == 0; time.Sleep(20 * time.Millisecond) {
		got, _ = os.ReadFile(out)
	}
	want := dir + " " + strings.Join(p.proxyArgs(filepath.Join(dir, proxySocket), "ns1"), " ") + "\n"
	if string(got) != want {
		t.Errorf("started %q, want %q once", got, want)
	}
	if err := private(dir); err != nil {
		t.Error(err)
	}
	if ns, _ := os.ReadFile(filepath.Join(dir, proxyNS)); string(ns) != "ns1" {
		t.Errorf("namespace %q", ns)
	}
	p.EndClaims(context.Background())
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory is still there: %v", err)
	}
	// Read again once it ended: a second start, had the second fill made
	// one, has written its line by now.
	if got, _ := os.ReadFile(out); string(got) != want {
		t.Errorf("started %q, want %q once", got, want)
	}
}

// The proxies' namespace is the one kubectl's own calls go to: the
// provider's when it has one (no kubectl asked), else the kubeconfig's
// current context's, else "default".
func TestNamespace(t *testing.T) {
	for _, c := range []struct{ set, view, want string }{
		{"ns1", "", "ns1"},
		{"", "team\n", "team"},
		{"", "", "default"},
	} {
		f := runnertest.New(t)
		p := oneShotProvider(t, f, writeKubeconfig(t, "x"), c.set)
		if c.set == "" {
			f.Expect([]string{"kubectl", "--kubeconfig", p.o.Kubeconfig, "config", "view", "--minify", "-o", "jsonpath={..namespace}"}, c.view, nil)
		}
		if got, err := p.namespace(context.Background()); err != nil || got != c.want {
			t.Errorf("namespace %q, kubeconfig's %q: %q, %v; want %q", c.set, c.view, got, err, c.want)
		}
	}
}
