package egress_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/egresstest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// engine is one engine the gateway is proven on.
type engine struct {
	name    string
	options docker.Options
	ensure  string
	// netns is the path of the engine's network namespace, "" for this
	// one: where its containers' traffic leaves, and its ports are
	// published.
	netns string
	// runtime, when set, is the runtime the sandboxes (not their
	// gateways) run under.
	runtime string
}

var engines = []engine{
	{name: "docker", options: docker.Options{Engine: docker.EngineDocker}, ensure: "scripts/ensure-docker.sh"},
	{name: "podman", options: docker.Options{Engine: docker.EnginePodman, Host: cmp.Or(os.Getenv("CONTAINER_HOST"), "unix:///run/litterbox-podman/podman.sock")},
		ensure: "scripts/ensure-podman.sh", netns: "/run/netns/litterbox-podman"},
	{name: "ssh", options: docker.Options{Engine: docker.EngineDocker, Host: "ssh://litterbox-remote"},
		ensure: "scripts/ensure-ssh-engine.sh", netns: "/run/netns/litterbox-remote"},
	// The local Docker engine with the sandboxes under gVisor (runsc run
	// with --host-uds=all): the relay carries the bytes there.
	{name: "gvisor", options: docker.Options{Engine: docker.EngineDocker}, ensure: "scripts/ensure-gvisor.sh", runtime: "runsc"},
}

const image = "busybox:latest"

// need fails the test in CI, where everything must run, and skips it
// elsewhere.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but "+format, args...)
	}
	t.Skipf(format, args...)
}

func engineUp(e engine) error {
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

// buildDir holds the programs the tests build, for the whole run.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "litterbox-egress-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds a static program of this module for the engines' platform
// (this machine's).
func build(t *testing.T, pkg string) string {
	t.Helper()
	out := filepath.Join(buildDir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

var (
	buildOnce          sync.Once
	gatewayBin, client string
)

// rig is one engine with everything the tests make on it.
type rig struct {
	t     *testing.T
	e     engine
	p     *docker.Provider
	label string
	in    *egresstest.Internet
	host  int // the host service's port
}

func newRig(t *testing.T, e engine) *rig {
	if os.Geteuid() != 0 {
		need(t, "the egress tests make network namespaces: run them as root")
	}
	if err := engineUp(e); err != nil {
		need(t, "the %s engine does not answer (%v): run %s first", e.name, err, e.ensure)
	}
	if e.netns != "" {
		if _, err := os.Stat(e.netns); err != nil {
			need(t, "the %s engine's namespace %s is missing: run %s first", e.name, e.netns, e.ensure)
		}
	}
	buildOnce.Do(func() {
		gatewayBin = build(t, "github.com/litterbox-dev/litterbox/gateway/cmd/litterbox-gateway")
		client = build(t, "./testdata/e2eclient")
	})
	if gatewayBin == "" {
		t.Fatal("the build failed")
	}
	o := e.options
	o.Runner = runner.Exec{Log: log.New(io.Discard)}
	p, err := docker.New(o)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, e: e, p: p, label: fmt.Sprintf("dev.litterbox.test=egress-%d-%s", os.Getpid(), e.name)}
	t.Cleanup(r.cleanup)
	r.in = egresstest.NewInternet(t, e.netns, map[string][]string{
		"allowed.test": {"NET.10"},
		"other.test":   {"NET.11"},
		"x.wild.test":  {"NET.10"},
		"loop.test":    {"127.0.0.1"},
		"hosty.test":   {"NET.1"},
		"meta.test":    {"169.254.169.254"},
		"private.test": {"10.1.2.3"},
		"v6only.test":  {"2606:4700::1111"},
		"big.test":     {"NET.12"},
		// The secrets test's (secrets_test.go): a git server and an API
		// that want a token, and a server whose certificate is of a CA
		// nobody trusts.
		"git.test":     {"NET.10"},
		"api.test":     {"NET.10"},
		"sub.test":     {"NET.10"},
		"badcert.test": {"NET.14"},
	})
	r.host = egresstest.HostService(t, e.netns)
	return r
}

func (r *rig) docker(args ...string) (string, error) {
	c := r.p.Client()
	res, err := c.Run(context.Background(), c.Cmd(args...).As(runner.Work))
	return string(res.Stdout), err
}

func (r *rig) cleanup() {
	ctx := context.Background()
	ids, _ := r.docker("ps", "-aq", "--filter", "label="+r.label)
	if f := strings.Fields(ids); len(f) > 0 {
		_, _ = r.docker(append([]string{"rm", "-f"}, f...)...)
	}
	nets, _ := r.docker("network", "ls", "-q", "--filter", "label="+r.label)
	for _, n := range strings.Fields(nets) {
		_, _ = r.docker("network", "rm", n)
	}
	vols, _ := r.docker("volume", "ls", "-q", "--filter", "label="+r.label)
	for _, v := range strings.Fields(vols) {
		_ = r.p.Client().VolumeRemove(ctx, v)
	}
}

// hostAddrs are the engine host's addresses, from a probe container.
func (r *rig) hostAddrs() []string {
	addrs, err := r.p.HostAddrs(context.Background(), image)
	if err != nil {
		r.t.Fatalf("probe the host's addresses: %v", err)
	}
	return addrs
}

// box is one confined sandbox and its gateway.
type box struct {
	r         *rig
	name      string
	plan      egress.Plan
	sb, gw    provider.Ref
	gwAddr    string
	cursor    egress.Cursor
	records   []control.Record
	collectMu sync.Mutex
}

// sandboxSpec is a sandbox as litterbox makes one (spec.For, in sandbox/internal/spec),
// with a named port.
func sandboxSpec(name, label string) provider.Spec {
	k, v, _ := strings.Cut(label, "=")
	return provider.Spec{
		Name: name, Image: image, Network: provider.NetworkIsolated, Hostname: "sandbox",
		User: "1000:1000", Workdir: "/tmp", Labels: map[string]string{k: v},
		Env:          []string{"HOME=/tmp"},
		Tmpfs:        []provider.Tmpfs{{Path: "/tmp", Exec: true, Mode: 0o1777, Size: 256 << 20}},
		ReadOnlyRoot: true, Init: true, DropCaps: true, NoNewPrivileges: true, NoHealthcheck: true,
		Limits: provider.Limits{Pids: 1024, Memory: 1 << 30},
		Ports:  []provider.PortSpec{{Name: "web", Port: 8080}},
		Cmd:    []string{"sleep", "infinity"},
	}
}

// confine makes a sandbox behind a gateway, as create will: the volume,
// then the two containers at once, then the program and the relay.
func (r *rig) confine(name string, p policy.Policy) *box {
	r.t.Helper()
	return r.confineSpec(sandboxSpec(name, r.label), p)
}

// confineSpec is confine of a sandbox made from spec.
func (r *rig) confineSpec(spec provider.Spec, p policy.Policy) *box {
	t := r.t
	t.Helper()
	ctx := context.Background()
	name := spec.Name
	k, v, _ := strings.Cut(r.label, "=")
	spec.Runtime = r.e.runtime
	plan, err := egress.Confine(spec, image, p, map[string]string{k: v})
	if err != nil {
		t.Fatal(err)
	}
	// The gateway resolves through the engine, which asks the test's DNS.
	plan.Gateway.DNS = []string{r.in.DNS}
	if err := r.p.Client().VolumeCreate(ctx, plan.Volume); err != nil {
		t.Fatal(err)
	}
	var gw, sb *provider.Sandbox
	var gwErr, sbErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); gw, gwErr = r.p.Create(ctx, plan.Gateway) }()
	go func() { defer wg.Done(); sb, sbErr = r.p.Create(ctx, plan.Sandbox) }()
	wg.Wait()
	if gwErr != nil || sbErr != nil {
		t.Fatalf("create: gateway %v, sandbox %v", gwErr, sbErr)
	}
	bin, err := os.ReadFile(gatewayBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := egress.Install(ctx, r.p, gw.Ref, bytes.NewReader(bin)); err != nil {
		t.Fatal(err)
	}
	// It holds its policy (and no secret yet): it serves the sandbox.
	if err := egress.Ready(ctx, r.p, gw.Ref); err != nil {
		t.Fatal(err)
	}
	b := &box{r: r, name: name, plan: plan, sb: sb.Ref, gw: gw.Ref}
	// The sandbox's main process starts the relay once the install put it
	// on the volume.
	if out, code := b.sh(egress.WaitRelay + " && [ -e " + egress.Dir + "/relay.ready ]"); code != 0 {
		t.Fatalf("the relay did not start: %s", out)
	}
	b.gwAddr = strings.TrimSpace(b.mustDocker("inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", gw.Ref.ID))
	b.gwAddr = strings.Fields(b.gwAddr)[0]
	// The client and the CA, into the sandbox's /tmp.
	b.put(client, "/tmp/c", 0o755)
	b.putBytes(r.in.CAPEM, "/tmp/ca.pem", 0o644)
	return b
}

func (b *box) mustDocker(args ...string) string {
	out, err := b.r.docker(args...)
	if err != nil {
		b.r.t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (b *box) put(path, dst string, mode os.FileMode) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.r.t.Fatal(err)
	}
	b.putBytes(data, dst, mode)
}

func (b *box) putBytes(data []byte, dst string, mode os.FileMode) {
	res, err := b.r.p.Exec(context.Background(), provider.ExecRequest{Ref: b.sb, Stdin: bytes.NewReader(data),
		Cmd: []string{"sh", "-c", fmt.Sprintf("cat > %s && chmod %o %s", dst, mode, dst)}})
	if err != nil || res.ExitCode != 0 {
		b.r.t.Fatalf("copy %s into the sandbox: %v %s", dst, err, res.Stderr)
	}
}

// sh runs a shell command in the sandbox, as the agent's user, with the
// environment litterbox gives every command there.
func (b *box) sh(cmd string) (string, int) {
	res, err := b.r.p.Exec(context.Background(), provider.ExecRequest{Ref: b.sb, Cmd: []string{"sh", "-c", cmd}, Env: egress.Env()})
	if err != nil {
		b.r.t.Fatalf("exec %q: %v", cmd, err)
	}
	return string(res.Stdout) + string(res.Stderr), res.ExitCode
}

// result is what the client says.
type result struct {
	Status  int     `json:"status"`
	Body    string  `json:"body"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error"`
}

func (b *box) client(args ...string) result {
	out, _ := b.sh("/tmp/c " + strings.Join(args, " "))
	var r result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		b.r.t.Fatalf("client %v: %q", args, out)
	}
	return r
}

func (b *box) policy(p policy.Policy) {
	if err := egress.SetPolicy(context.Background(), b.r.p, b.gw, p); err != nil {
		b.r.t.Fatal(err)
	}
}

// collect takes the records the gateway has that the host does not.
func (b *box) collect() []control.Record {
	b.collectMu.Lock()
	defer b.collectMu.Unlock()
	for {
		batch, err := egress.Collect(context.Background(), b.r.p, b.gw, b.cursor)
		if err != nil {
			b.r.t.Fatal(err)
		}
		b.records = append(b.records, batch.Records...)
		if n := len(batch.Records); n > 0 {
			b.cursor = egress.Cursor{Boot: batch.Boot, Seq: batch.Records[n-1].Seq}
		}
		if len(batch.Records) == 0 || b.cursor.Seq >= batch.Last {
			return b.records
		}
	}
}
