package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// In a long-lived process (Options.LongLived: the MCP server), a claim is
// no kubectl process of its own: the annotation goes through one
// `kubectl proxy` that the process starts at its first claim, on a Unix
// socket in a directory only its user can open, and keeps while it runs
// (started at its first pod's create or claim).
// There a warm pool's refill takes most of a small machine's CPU at a
// claim a second (a confined member is two pods), and a kubectl process,
// which needs some 60 ms of CPU to start and read its caches, waited
// 200-1,200 ms for it; a request through the proxy needs a few ms of
// ours. It is the same merge of one annotation into each pod, which the
// apiserver answers with the pod, read as kubectl annotate's.

// proxyPrefix is the URL the proxy is asked at: kubectl proxy refuses a
// request whose host is not a local one.
const proxyPrefix = "http://localhost"

// claimProxy is a running `kubectl proxy` and the namespace its claims go
// to.
type claimProxy struct {
	ns   string
	sock string
	hc   *http.Client
	log  *log.Logger
	// mark, when set, is touched after each claim it carried: the shared
	// proxy's socket, whose time says when it was used last
	// (sharedproxy.go).
	mark string
}

// errProxy is a claim the proxy did not carry (it does not answer): the
// claim is made by kubectl instead.
var errProxy = errors.New("kubectl proxy does not answer")

// proxyScript runs kubectl proxy ("$@") until its stdin ends, which it
// does when the process that started it ends, however it ends (the pipe's
// other end is that process's alone); then removes its directory ($0)
// and ends the proxy. The directory goes first: the shell's stdout and
// stderr are pipes to a process that may be gone, and a shell that writes
// to one (a job's "Terminated") dies of it.
const proxyScript = `"$@" </dev/null & k=$!; cat >/dev/null; rm -rf "$0"; kill $k 2>/dev/null; wait $k 2>/dev/null`

// proxyArgs is the argv of the proxy on Unix socket sock: it carries the
// pods of namespace ns and nothing else (not their exec, attach, logs or
// any other subresource), whatever reaches the socket.
func (p *Provider) proxyArgs(sock, ns string) []string {
	return p.Cmd("proxy", "--unix-socket", sock, "--accept-paths", "^/api/v1/namespaces/"+regexp.QuoteMeta(ns)+"/pods/[^/]+$").Args
}

// claimProxy is the proxy of a long-lived process once it listens; nil
// while it starts (the first claims go through kubectl), when it could not
// be started, or outside a long-lived process.
func (p *Provider) claimProxy() *claimProxy {
	if !p.o.LongLived {
		return nil
	}
	p.proxyOnce.Do(func() { go p.startProxy() })
	return p.proxy.Load()
}

// startProxy starts the proxy and, once its socket is there, hands it to
// the claims that follow, in the provider's namespace (namespace).
func (p *Provider) startProxy() {
	ctx := context.Background()
	ns, err := p.namespace(ctx)
	if err != nil {
		p.o.Log.Debug("claims go through kubectl annotate: no namespace for the proxy", "err", err)
		return
	}
	dir, err := os.MkdirTemp("", "litterbox-kubectl-proxy-")
	if err != nil {
		p.o.Log.Debug("claims go through kubectl annotate: no directory for the proxy", "err", err)
		return
	}
	sock := filepath.Join(dir, "s")
	r, w, err := os.Pipe()
	if err != nil {
		p.o.Log.Debug("claims go through kubectl annotate: no pipe for the proxy", "err", err)
		os.RemoveAll(dir)
		return
	}
	// w is kept open, unwritten, while the process runs: its end is the
	// proxy's.
	p.proxyEnd = w
	go func() {
		defer r.Close()
		cmd := runner.New("sh", append([]string{"-c", proxyScript, dir}, p.proxyArgs(sock, ns)...)...).As(runner.Stream).WithStdin(r)
		_, _ = p.o.Runner.Run(ctx, cmd)
	}()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			p.proxy.Store(newClaimProxy(sock, ns, p.o.Log))
			return
		}
	}
	p.o.Log.Debug("claims go through kubectl annotate: the proxy did not listen within 30 s", "socket", sock)
}

// namespace is the namespace the provider's kubectl calls go to: the
// provider's, else the kubeconfig's current context's, else "default".
// The proxy's URLs name it, where kubectl's calls read it themselves.
func (p *Provider) namespace(ctx context.Context) (string, error) {
	if p.o.Namespace != "" {
		return p.o.Namespace, nil
	}
	res, err := p.run(ctx, p.Cmd("config", "view", "--minify", "-o", "jsonpath={..namespace}"))
	if err != nil {
		return "", err
	}
	return cmp.Or(strings.TrimSpace(string(res.Stdout)), "default"), nil
}

// newClaimProxy is the client of the proxy listening on sock; each request
// it makes is logged at debug level, as every command is.
func newClaimProxy(sock, ns string, l *log.Logger) *claimProxy {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	return &claimProxy{ns: ns, sock: sock, log: l, hc: &http.Client{Transport: tr, Timeout: runner.DefaultControlLimit}}
}

// annotate sets annotationClaimed of pod to sandbox and returns the pod as
// the apiserver has it then: ErrNotFound when it is gone, errProxy when the
// proxy did not answer it, or answered another error.
func (c *claimProxy) annotate(ctx context.Context, pod, sandbox string) (*podObject, error) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annotationClaimed: sandbox}}})
	if err != nil {
		return nil, err
	}
	u := proxyPrefix + "/api/v1/namespaces/" + url.PathEscape(c.ns) + "/pods/" + url.PathEscape(pod)
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/merge-patch+json")
	start := time.Now()
	resp, err := c.hc.Do(req)
	what := "kubectl proxy: PATCH " + req.URL.Path + " " + string(body)
	if err != nil {
		c.log.Debug("ran", "cmd", what, "err", err, "ms", time.Since(start).Milliseconds())
		return nil, fmt.Errorf("%w: %w", errProxy, err)
	}
	c.log.Debug("ran", "cmd", what, "status", resp.StatusCode, "ms", time.Since(start).Milliseconds())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errProxy, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		var st struct{ Message string }
		_ = json.Unmarshal(data, &st)
		return nil, provider.Errorf(provider.ErrNotFound, "%s", cmp.Or(st.Message, "pod "+pod+" not found"))
	default:
		// A refusal (the user may not patch pods) or a cluster that does
		// not answer the proxy: kubectl's own call says what it is, in
		// the words of every other call.
		return nil, fmt.Errorf("%w: %s", errProxy, resp.Status)
	}
	o := new(podObject)
	if err := json.Unmarshal(data, o); err != nil {
		return nil, fmt.Errorf("annotate pod %s: %w", pod, err)
	}
	return o, nil
}

// annotateAll is annotate of each pod at once, by name; the first error
// wins (errProxy when any was not carried, so the claim is made again by
// kubectl).
func (c *claimProxy) annotateAll(ctx context.Context, pods []string, sandbox string) (map[string]*podObject, error) {
	type got struct {
		o   *podObject
		err error
	}
	res := make([]chan got, len(pods))
	for i, name := range pods {
		res[i] = make(chan got, 1)
		go func() {
			o, err := c.annotate(ctx, name, sandbox)
			res[i] <- got{o, err}
		}()
	}
	objs := map[string]*podObject{}
	var errs []error
	for i, name := range pods {
		g := <-res[i]
		if g.err != nil {
			errs = append(errs, g.err)
			continue
		}
		objs[name] = g.o
	}
	for _, err := range errs {
		if errors.Is(err, errProxy) {
			return nil, err
		}
	}
	if c.mark != "" {
		now := time.Now()
		_ = os.Chtimes(c.mark, now, now)
	}
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return objs, nil
}
