// Package kubernetes is the provider that runs sandboxes as pods on a
// Kubernetes cluster, by shelling out to kubectl: every call is an argv built
// here and run through a runner.Runner, so it is logged and can be pasted
// into a shell. kubectl's failures are told apart by their stderr, once, in
// classify; what leaves this package is a neutral provider error.
//
// A sandbox is a pod named after the sandbox, a NetworkPolicy of the same
// name (its "network": it denies traffic from and to other sandboxes' pods),
// and, while it is paused, a ConfigMap of the same name that records the pod
// (a pod cannot be frozen: pause deletes it, resume makes it again). All
// three carry the spec's labels as annotations (Kubernetes label values
// cannot hold a path), and as labels those that are valid as such, so that
// List selects on the cluster and filters the rest here. See
// docs/kubernetes.md.
package kubernetes

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/atomicfile"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// Engine is what Info calls this engine.
const Engine = "kubernetes"

// Options configure New.
type Options struct {
	// Kubectl is the kubectl binary; LITTERBOX_KUBECTL, else "kubectl".
	Kubectl string
	// Kubeconfig, Context and Namespace go into every argv when set
	// (--kubeconfig, --context, --namespace); empty means kubectl's own
	// choice (KUBECONFIG, the current context and its namespace).
	Kubeconfig string
	Context    string
	Namespace  string
	// Runner runs the commands.
	Runner runner.Runner
	// StateDir keeps the records of the port-forwards litterbox started;
	// $XDG_RUNTIME_DIR/litterbox/kubernetes, else /tmp/litterbox-UID/kubernetes.
	StateDir string
	// LongLived says the process serves many calls (the MCP server): its
	// claims go through a kubectl proxy it keeps (claimproxy.go).
	LongLived bool
	// Daemon is the program that keeps a shared proxy of the claims of
	// one-shot commands when run with ProxyDaemonEnv (ServeProxy):
	// litterbox itself, which the CLI sets. Empty: none is started.
	Daemon string
	// Log is where the proxy's requests are logged (at debug level, as
	// the runner logs each command); log.Default() when nil.
	Log *log.Logger
}

// Provider runs sandboxes as pods through kubectl.
type Provider struct {
	o Options

	epOnce sync.Once
	ep     string

	// classes keeps the RuntimeClasses found (runtimeClass), by the
	// runtime asked: a create's checks and the create ask once.
	classes sync.Map

	// nodesAsk is the listing of the nodes under way (nodes).
	nodesMu  sync.Mutex
	nodesAsk *nodesAsk

	// proxy is a long-lived process's kubectl proxy, once it listens
	// (claimProxy); proxyEnd the pipe's end that keeps it running.
	proxyOnce sync.Once
	proxy     atomic.Pointer[claimProxy]
	proxyEnd  *os.File
}

var _ provider.Provider = (*Provider)(nil)

// New returns the provider o describes.
func New(o Options) (*Provider, error) {
	if o.Kubectl == "" {
		o.Kubectl = os.Getenv("LITTERBOX_KUBECTL")
	}
	if o.Kubectl == "" {
		o.Kubectl = "kubectl"
	}
	if o.StateDir == "" {
		base := os.Getenv("XDG_RUNTIME_DIR")
		if base != "" {
			base += "/litterbox"
		} else {
			base = fmt.Sprintf("%s/litterbox-%d", os.TempDir(), os.Getuid())
		}
		o.StateDir = base + "/kubernetes"
	}
	if o.Log == nil {
		o.Log = log.Default()
	}
	return &Provider{o: o}, nil
}

// Cmd starts a kubectl command line with the provider's kubeconfig, context
// and namespace: a control call, which a healthy apiserver answers at once.
func (p *Provider) Cmd(args ...string) *runner.Cmd {
	cmd := runner.New(p.o.Kubectl).As(runner.Control)
	if p.o.Kubeconfig != "" {
		cmd.Arg("--kubeconfig", p.o.Kubeconfig)
	}
	if p.o.Context != "" {
		cmd.Arg("--context", p.o.Context)
	}
	if p.o.Namespace != "" {
		cmd.Arg("--namespace", p.o.Namespace)
	}
	return cmd.Arg(args...)
}

// run runs a kubectl command and translates its well-known failures.
func (p *Provider) run(ctx context.Context, cmd *runner.Cmd) (runner.Result, error) {
	res, err := p.o.Runner.Run(ctx, oneShot(cmd))
	return res, p.classify(err)
}

// oneShot is cmd, a call kubectl answers at once (runner.Control), run
// without garbage collection below a heap of 256 MiB: such a call
// allocates some tens of MB, most of it kubectl's start, and exits, and
// its collections were a quarter of its CPU (a claim's annotate: 54 ms,
// 39 ms without), which ten creates at once on two cores queue for. The
// bound keeps a call that reads a large list from growing without end. A
// GOGC or GOMEMLIMIT of the user's is left as it is; an exec or a
// port-forward, which may run long, is never a control call made here.
func oneShot(cmd *runner.Cmd) *runner.Cmd {
	if cmd.Kind == runner.Control {
		return withoutGC(cmd)
	}
	return cmd
}

// withoutGC is cmd run without garbage collection below a heap of 256 MiB
// (oneShot), unless the user set GOGC or GOMEMLIMIT: also a watch of one
// pod (watchPod), which prints a few versions of it and ends.
func withoutGC(cmd *runner.Cmd) *runner.Cmd {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		cmd.WithEnv("GOGC=off", "GOMEMLIMIT=256MiB")
	}
	return cmd
}

// endpoint is the apiserver's URL as the kubeconfig names it (a local
// reading of the kubeconfig, no call to the cluster), with the context.
// kubectl is asked once per kubeconfig: what it said is kept in the state
// directory under the identity of the kubeconfig files (endpointFile), so
// the next process (a create that claims a confined pooled sandbox keys
// the engine host's addresses by it) reads it without a kubectl of its
// own. A reading that failed is not kept.
func (p *Provider) endpoint() string {
	p.epOnce.Do(func() {
		kept := p.endpointFile()
		if b, err := os.ReadFile(kept); kept != "" && err == nil && len(b) > 0 {
			p.ep = string(b)
			return
		}
		res, err := p.o.Runner.Run(context.Background(), oneShot(p.Cmd("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server} {.contexts[0].name}")))
		server, ctxName, _ := strings.Cut(strings.TrimSpace(string(res.Stdout)), " ")
		switch {
		case err != nil || server == "":
			p.ep = "the cluster of kubectl's current context"
			if p.o.Kubeconfig != "" {
				p.ep = "the cluster of " + p.o.Kubeconfig
			}
			return
		case ctxName != "":
			p.ep = server + " (context " + ctxName + ")"
		default:
			p.ep = server
		}
		if kept != "" {
			_ = atomicfile.Write(kept, []byte(p.ep), 0o600)
		}
	})
	return p.ep
}

// endpointFile is where endpoint keeps what kubectl said of the
// kubeconfig: a name made of everything that decides it (kubectl, the
// options, KUBECONFIG, and each kubeconfig file's path and contents), so
// an edit of a kubeconfig, or another one, is asked anew. The contents,
// not the size and time of change: `kubectl config use-context` to a
// context whose name is as long keeps the size, and a file system may
// not tell the times of two quick edits apart (a kubeconfig is a few
// KB: reading it is cheap). Empty when a file cannot be read.
func (p *Provider) endpointFile() string {
	files := filepath.SplitList(os.Getenv("KUBECONFIG"))
	if p.o.Kubeconfig != "" {
		files = []string{p.o.Kubeconfig}
	}
	if len(files) == 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		files = []string{filepath.Join(home, ".kube", "config")}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q\n", p.o.Kubectl, p.o.Kubeconfig, p.o.Context, os.Getenv("KUBECONFIG"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(h, "%q none\n", f)
		case err != nil:
			return ""
		default:
			fmt.Fprintf(h, "%q %d %x\n", f, len(b), sha256.Sum256(b))
		}
	}
	return filepath.Join(p.o.StateDir, "endpoint-"+hex.EncodeToString(h.Sum(nil)[:8]))
}

// classify maps a kubectl failure to the neutral provider errors, keeping
// the original error inside. Other failures pass through unchanged.
func (p *Provider) classify(err error) error {
	if err == nil {
		return nil
	}
	var ni *runner.NotInstalledError
	if errors.As(err, &ni) {
		return &provider.UnreachableError{Endpoint: p.o.Kubectl, Err: err,
			Reason: fmt.Sprintf("kubectl is not installed (looked for %q): install it (https://kubernetes.io/docs/tasks/tools/), or set LITTERBOX_KUBECTL to its path", p.o.Kubectl)}
	}
	var te *runner.TimeoutError
	if errors.As(err, &te) {
		return &provider.UnreachableError{Endpoint: p.endpoint(), Err: err,
			Reason: fmt.Sprintf("the Kubernetes cluster at %s is not answering: %s: no answer within %s, so litterbox stopped it. Check it with `%s`; if it is only slow, raise %s",
				p.endpoint(), te.Command, te.Limit, p.Cmd("cluster-info"), te.Setting())}
	}
	stderr := runner.Stderr(err)
	if m := quotaRE().FindStringSubmatch(stderr); m != nil {
		ns := "the kubeconfig's namespace"
		if p.o.Namespace != "" {
			ns = "namespace " + p.o.Namespace
		}
		return &provider.Error{Kind: provider.ErrQuota, Err: err,
			Msg: fmt.Sprintf("%s's ResourceQuota %s is used up (%s): delete sandboxes you no longer need (`litterbox list`; every pod of the namespace counts), or have the quota raised (`%s`)",
				ns, m[1], m[2], p.Cmd("describe", "resourcequota", m[1]))}
	}
	switch {
	case notReached(stderr):
		return &provider.UnreachableError{Endpoint: p.endpoint(), Err: err,
			Reason: fmt.Sprintf("cannot reach the Kubernetes cluster at %s: %s\nCheck it with `%s`", p.endpoint(), firstLine(stderr), p.Cmd("cluster-info"))}
	case strings.Contains(stderr, "(NotFound)"):
		return &provider.Error{Kind: provider.ErrNotFound, Msg: serverMessage(stderr), Err: err}
	case strings.Contains(stderr, "(AlreadyExists)"):
		return &provider.Error{Kind: provider.ErrConflict, Msg: serverMessage(stderr), Err: err}
	case strings.Contains(stderr, "cannot exec into a container in a completed pod"),
		strings.Contains(stderr, "container not found"),
		strings.Contains(stderr, "is not running"):
		return &provider.Error{Kind: provider.ErrStopped, Msg: serverMessage(stderr), Err: err}
	}
	return err
}

// quotaRE is the apiserver's refusal of an object over a ResourceQuota:
// the quota's name, then what was requested, used and the limit.
var quotaRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`exceeded quota: ([^,\s]+), (requested: [^\n]*)`) })

// notReached reports whether kubectl's stderr says it never reached the
// apiserver: then it made nothing.
func notReached(stderr string) bool {
	for _, s := range []string{"Unable to connect to the server", "The connection to the server", "connection refused",
		"no such host", "i/o timeout", "couldn't get current server API group list", "error loading config file"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// serverMessage is the apiserver's own words in kubectl's stderr: the line
// after "Error from server (Reason): ", else the first line.
func serverMessage(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if _, msg, ok := strings.Cut(line, "Error from server "); ok {
			if _, rest, ok := strings.Cut(msg, ": "); ok {
				return strings.TrimSpace(rest)
			}
			return strings.TrimSpace(msg)
		}
	}
	return firstLine(stderr)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// errWatchDone stops a watch whose caller has what it waited for.
var errWatchDone = errors.New("the watch is done")

// watchPod follows pod name with one kubectl, `get --watch` of the pods of
// that name (which waits for one that does not exist yet, where `kubectl
// wait` fails at once), and hands see each version of the pod it prints,
// until see says it is done or fails, ctx ends, or limit passes (then
// errWatchTimeout). A wait for a pod's address or readiness was a `kubectl
// wait` of 4 s, a look at the pod after each that timed out, and a try
// again every 200 ms while the pod did not exist: at load, where a pod
// takes seconds to start, 3 to 6 kubectl processes a pod (a process start
// each, on the cores the claims of a warm pool wait for); now one, which
// sees a failure (a missing image) as soon as the kubelet reports it.
func (p *Provider) watchPod(ctx context.Context, name string, limit time.Duration, see func(*podObject) (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		wctx, cancel := context.WithDeadline(ctx, deadline)
		pr, pw := io.Pipe()
		cmd := withoutGC(p.Cmd("get", "pods", "--field-selector", "metadata.name="+name, "--watch", "-o", "json").As(runner.Stream).WithStdout(pw))
		ran := make(chan error, 1)
		go func() {
			_, err := p.run(wctx, cmd)
			pw.CloseWithError(cmp.Or(err, io.EOF))
			ran <- err
		}()
		done, err := false, error(nil)
		for d := json.NewDecoder(pr); !done && err == nil; {
			o := new(podObject)
			if derr := d.Decode(o); derr != nil {
				break
			}
			done, err = see(o)
		}
		cancel()
		pr.CloseWithError(errWatchDone)
		werr := <-ran
		switch {
		case done || err != nil:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return errWatchTimeout
		case werr != nil:
			return werr
		}
		// The apiserver ended the watch (its own time limit): follow on,
		// after a pause, so that a watch that keeps ending at once is not
		// a busy loop.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// errWatchTimeout is a watchPod that reached its limit.
var errWatchTimeout = errors.New("timed out")
