package kubernetes

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// fakeProxy serves the pods of pods (as the apiserver prints them, by
// name; a name missing is 404) on a Unix socket, as kubectl proxy would,
// and records each request.
type fakeProxy struct {
	sock   string
	status int // a status to answer every request with; 0 for none
	mu     sync.Mutex
	reqs   []string
}

func newFakeProxy(t *testing.T, pods map[string]string) *fakeProxy {
	t.Helper()
	dir, err := os.MkdirTemp("", "lbproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return newFakeProxyAt(t, filepath.Join(dir, "s"), pods)
}

// newFakeProxyAt is newFakeProxy on socket sock.
func newFakeProxyAt(t *testing.T, sock string, pods map[string]string) *fakeProxy {
	t.Helper()
	fp := &fakeProxy{sock: sock}
	l, err := net.Listen("unix", fp.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fp.mu.Lock()
		fp.reqs = append(fp.reqs, r.Method+" "+r.Host+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
		status := fp.status
		fp.mu.Unlock()
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		pod, ok := pods[filepath.Base(r.URL.Path)]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","message":"pods \"`+filepath.Base(r.URL.Path)+`\" not found","code":404}`)
			return
		}
		_, _ = io.WriteString(w, pod)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return fp
}

// withProxy is a long-lived process's provider whose proxy is fp (none is
// started): it runs no kubectl unless f expects one.
func withProxy(t *testing.T, f *runnertest.Fake, sock string) *Provider {
	t.Helper()
	p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir(), Namespace: "ns1", LongLived: true})
	if err != nil {
		t.Fatal(err)
	}
	p.proxyOnce.Do(func() {})
	p.proxy.Store(newClaimProxy(sock, "ns1", log.Default()))
	return p
}

// In a long-lived process a claim runs no kubectl: it merges the claim's
// annotation into each pod through the process's proxy, and reads the
// pods the apiserver answers with as it reads kubectl annotate's.
func TestClaimThroughTheProxy(t *testing.T) {
	for _, c := range []struct {
		what string
		pods map[string]string
		want error
	}{
		{"both run", map[string]string{"pool-1": runningPod("pool-1"), "pool-1-gw": runningPod("pool-1-gw")}, nil},
		{"the gateway is being deleted", map[string]string{"pool-1": runningPod("pool-1"), "pool-1-gw": deletingPod("pool-1-gw")}, provider.ErrStopped},
		{"the member ended", map[string]string{"pool-1": endedPod("pool-1"), "pool-1-gw": runningPod("pool-1-gw")}, provider.ErrStopped},
		{"the gateway is gone", map[string]string{"pool-1": runningPod("pool-1")}, provider.ErrNotFound},
	} {
		fp := newFakeProxy(t, c.pods)
		p := withProxy(t, runnertest.New(t), fp.sock)
		err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{ID: "pool-1-gw"}, "fix-login")
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: Claim = %v, want %v", c.what, err, c.want)
		}
		slices.Sort(fp.reqs)
		want := []string{
			`PATCH localhost /api/v1/namespaces/ns1/pods/pool-1 application/merge-patch+json {"metadata":{"annotations":{"dev.litterbox.claimed-by":"fix-login"}}}`,
			`PATCH localhost /api/v1/namespaces/ns1/pods/pool-1-gw application/merge-patch+json {"metadata":{"annotations":{"dev.litterbox.claimed-by":"fix-login"}}}`,
		}
		if !slices.Equal(fp.reqs, want) {
			t.Errorf("%s: the proxy was asked\n%q\nwant\n%q", c.what, fp.reqs, want)
		}
	}
}

// A proxy that does not answer (it ended), or answers with an error of
// its own or the apiserver's other than a pod not found, leaves the claim
// to kubectl annotate, as in a process without one: kubectl says what is
// wrong as every other call does.
func TestClaimWithoutAnAnsweringProxy(t *testing.T) {
	failing := newFakeProxy(t, map[string]string{"pool-1": "{}"})
	failing.status = http.StatusServiceUnavailable
	for what, sock := range map[string]string{"gone": filepath.Join(t.TempDir(), "gone"), "503": failing.sock} {
		f := runnertest.New(t)
		p := withProxy(t, f, sock)
		f.Expect([]string{"kubectl", "--namespace", "ns1", "annotate", "--overwrite", "pod", "pool-1", "dev.litterbox.claimed-by=a", "-o", "json"}, runningPod("pool-1"), nil)
		if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{}, "a"); err != nil {
			t.Errorf("%s: Claim = %v", what, err)
		}
	}
}

// A one-shot command starts no proxy: its claim is kubectl annotate.
func TestOneShotClaimStartsNoProxy(t *testing.T) {
	f := runnertest.New(t)
	p, _ := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
	f.Expect([]string{"kubectl", "annotate", "--overwrite", "pod", "pool-1", "dev.litterbox.claimed-by=a", "-o", "json"}, runningPod("pool-1"), nil)
	if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, provider.Ref{}, "a"); err != nil {
		t.Errorf("Claim = %v", err)
	}
	if p.proxy.Load() != nil {
		t.Error("a one-shot command started a proxy")
	}
}

// The proxy is kubectl's, with the provider's kubeconfig and namespace, on
// a Unix socket; it ends with the process that started it, however that
// ends (its stdin, the one end of a pipe that process holds, closes), and
// its directory goes with it.
func TestProxyEndsWithItsProcess(t *testing.T) {
	p, _ := New(Options{Kubectl: "kubectl", Kubeconfig: "/k", Namespace: "ns1"})
	want := []string{"kubectl", "--kubeconfig", "/k", "--namespace", "ns1", "proxy", "--unix-socket", "/d/s", "--accept-paths", `^/api/v1/namespaces/ns\.1/pods/[^/]+$`}
	if got := p.proxyArgs("/d/s", "ns.1"); !slices.Equal(got, want) {
		t.Errorf("proxy argv %q, want %q", got, want)
	}
	dir := filepath.Join(t.TempDir(), "proxy")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", proxyScript, dir, "sleep", "1000")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Its stdout and stderr are pipes to the process that started it,
	// which is gone when its stdin ends.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r.Close()
	in.Close()
	_ = cmd.Wait()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its directory is still there: %v", err)
	}
}
