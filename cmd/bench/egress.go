package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/egresstest"
	"github.com/litterbox-dev/litterbox/internal/gatewaybin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/secrets"
)

// The egress cases need root: they make the tests' own internet
// (internal/egresstest), a network namespace with HTTP, HTTPS and DNS
// servers, joined to the local engine.
var egressCases = append(slices.Clone(egressDownloadCases),
	"egress small request, https", "egress small request, http",
	"egress small request to a bound host (TLS terminated), https",
	"egress create 2500 files (sequence)", "egress pooled take: set the policy",
	"egress pieces: gateway run + install", "egress pieces: volume create",
	"egress per-engine gateway: network create --internal", "egress per-engine gateway: network connect",
)

var egressDownloadCases = []string{"egress 100 MB download, https", "egress 100 MB download, http", "egress 100 MB download, https, a 100 MB/s link",
	"bound: 100 MB through a bare splice forwarder / direct, https", "bound: 100 MB through a bare splice forwarder / direct, http"}

// benchT is what the internet fixture needs of a test: a failure ends the
// case, cleanups run at its end.
type benchT struct {
	cleanups []func()
	failed   error
}

func (t *benchT) Helper() {}

func (t *benchT) Fatalf(format string, args ...any) {
	t.failed = fmt.Errorf(format, args...)
	panic(t)
}

func (t *benchT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

func (t *benchT) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// egressBox is a sandbox the client runs in.
type egressBox struct {
	p   *docker.Provider
	ref provider.Ref
	env []string
}

func (x egressBox) client(ctx context.Context, args ...string) (clientResult, error) {
	res, err := x.p.Exec(ctx, provider.ExecRequest{Ref: x.ref, Env: x.env, Cmd: append([]string{"/tmp/c"}, args...)})
	if err != nil {
		return clientResult{}, err
	}
	return clientOutput(res.Stdout, res.Stderr, args)
}

// clientFunc runs the client in a sandbox with args.
type clientFunc func(ctx context.Context, args ...string) (clientResult, error)

// clientOutput reads the client's one JSON line (stdout), run with args;
// an error it reports is an error.
func clientOutput(stdout, stderr []byte, args []string) (clientResult, error) {
	var r clientResult
	if err := json.Unmarshal(stdout, &r); err != nil {
		return clientResult{}, fmt.Errorf("client %v: %q %s", args, stdout, stderr)
	}
	if r.Error != "" {
		return r, fmt.Errorf("client %v: %s", args, r.Error)
	}
	return r, nil
}

type clientResult struct {
	Status  int     `json:"status"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error"`
}

// egressRig is what the egress cases share: the tests' own internet, a
// sandbox on the open network and one behind a gateway, each with the
// client and the test CA in /tmp.
type egressRig struct {
	in            *egresstest.Internet
	p             *docker.Provider
	direct, viaGW egressBox
	gateway       provider.Ref
	program       []byte
	base          provider.Spec
	labels        map[string]string
	put           func(ref provider.Ref, path, dst string) error
}

// caseEgress times what the gateway costs: a download's throughput and a
// small request's latency through it against the same with a sandbox on the
// open network (today's), and a create's docker calls with a gateway beside
// the sandbox against without.
func (b *bench) caseEgress(ctx context.Context) error {
	return b.withEgressRig(ctx, egressCases, func(x *egressRig) error {
		if err := b.egressDownloads(ctx, x); err != nil {
			return err
		}
		// Latency: one small request on a new connection, the median of 20
		// in a row, each way in turn.
		for _, scheme := range []string{"https", "http"} {
			url := scheme + "://big.test/"
			gw, floor, err := b.eachWay(ctx, x.direct.client, x.viaGW.client, nil, "get", url, "-ca", "/tmp/ca.pem", "-n", "20")
			if err != nil {
				return err
			}
			b.rows = append(b.rows, row("egress small request, "+scheme, gw, floor, maxOverhead(2)))
		}
		if err := b.egressBound(ctx, x.viaGW, x.gateway, x.in, x.put, filepath.Join(b.tmp, "both.pem")); err != nil {
			return err
		}
		return b.egressCreate(ctx, x.p, x.program, x.base, x.labels, x.in)
	})
}

// caseEgressDownload is the egress group's downloads alone (group
// egress-download).
func (b *bench) caseEgressDownload(ctx context.Context) error {
	return b.withEgressRig(ctx, egressDownloadCases, func(x *egressRig) error { return b.egressDownloads(ctx, x) })
}

// withEgressRig makes the rig (cases are n/a without root), runs fn with it and removes what it made
// but the sandboxes (the run's cleanup removes them by label).
func (b *bench) withEgressRig(ctx context.Context, cases []string, fn func(*egressRig) error) error {
	return b.withInternet(cases, map[string][]string{"big.test": {"NET.10"}, "bound.test": {"NET.10"}}, func(in *egresstest.Internet) error {
		return b.egressRig(ctx, in, fn)
	})
}

// withInternet runs fn with the egress test internet (names as
// egresstest.NewInternet takes them), which it removes at the end; without
// root, cases are n/a.
func (b *bench) withInternet(cases []string, names map[string][]string, fn func(*egresstest.Internet) error) error {
	return b.withInternetIn(cases, "", names, fn)
}

// withInternetIn is withInternet joined to the network namespace at
// engineNS ("" for this one) instead of the local engine's.
func (b *bench) withInternetIn(cases []string, engineNS string, names map[string][]string, fn func(*egresstest.Internet) error) (err error) {
	if os.Geteuid() != 0 {
		b.skip(cases, "needs root (it makes a network namespace)")
		return nil
	}
	t := &benchT{}
	defer t.done()
	defer func() {
		if r := recover(); r != nil {
			if r != t {
				panic(r)
			}
			err = t.failed
		}
	}()
	return fn(egresstest.NewInternet(t, engineNS, names))
}

// egressRig makes the rig on internet in and runs fn with it.
func (b *bench) egressRig(ctx context.Context, in *egresstest.Internet, fn func(*egressRig) error) error {
	x := &egressRig{in: in}
	run := runner.Exec{Log: log.New(io.Discard)}
	p, err := docker.New(docker.Options{Runner: run})
	if err != nil {
		return err
	}
	x.p = p
	client, err := b.egressClient(ctx)
	if err != nil {
		return err
	}
	if x.program, err = gatewaybin.For("linux", runtime.GOARCH); err != nil {
		return err
	}
	k, v, _ := strings.Cut(b.label, "=")
	x.labels = map[string]string{k: v}
	x.base = provider.Spec{Image: api.DefaultImage, User: "1000:1000", Labels: x.labels, Workdir: "/tmp",
		Tmpfs:        []provider.Tmpfs{{Path: "/tmp", Exec: true, Mode: 0o1777, Size: 512 << 20}},
		ReadOnlyRoot: true, Init: true, DropCaps: true, NoNewPrivileges: true, NoHealthcheck: true,
		Limits: provider.Limits{Pids: 1024, Memory: 2 << 30}, Cmd: []string{"sleep", "infinity"}}
	x.put = func(ref provider.Ref, path, dst string) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = p.Exec(ctx, provider.ExecRequest{Ref: ref, Stdin: bytes.NewReader(data), Cmd: []string{"sh", "-c", "cat > " + dst + " && chmod 755 " + dst}})
		return err
	}
	caFile := filepath.Join(b.tmp, "ca.pem")
	if err := os.WriteFile(caFile, x.in.CAPEM, 0o644); err != nil {
		return err
	}

	// Today's sandbox, on the open network, resolving through the engine.
	open := x.base
	open.Name, open.Network, open.DNS = fmt.Sprintf("litterbox-bench-egress-open-%d", os.Getpid()), provider.NetworkIsolated, []string{x.in.DNS}
	osb, err := p.Create(ctx, open)
	if err != nil {
		return err
	}
	// The same behind a gateway.
	policy := policy.Policy{Sandbox: "bench", Mode: policy.ModeAllowlist, Allow: []string{"big.test", "bound.test"}}
	confined := x.base
	confined.Name = fmt.Sprintf("litterbox-bench-egress-gw-%d", os.Getpid())
	plan, err := egress.Confine(confined, api.DefaultImage, policy, x.labels)
	if err != nil {
		return err
	}
	plan.Gateway.DNS = []string{x.in.DNS}
	gsb, ggw, err := b.confine(ctx, p, plan, x.program) // its volume goes with the run's cleanup
	if err != nil {
		return err
	}
	x.gateway = ggw
	x.direct = egressBox{p: p, ref: osb.Ref}
	x.viaGW = egressBox{p: p, ref: gsb, env: egress.Env()}
	for _, box := range []egressBox{x.direct, x.viaGW} {
		for _, f := range [][2]string{{client, "/tmp/c"}, {caFile, "/tmp/ca.pem"}} {
			if err := x.put(box.ref, f[0], f[1]); err != nil {
				return err
			}
		}
	}
	return fn(x)
}

// egressClient builds the client the egress cases run in a sandbox
// (egress/testdata/e2eclient, static, for Linux) and returns its path.
func (b *bench) egressClient(ctx context.Context) (string, error) {
	client := filepath.Join(b.tmp, "e2eclient")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", client, "./egress/testdata/e2eclient")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the client: %v: %s", err, out)
	}
	return client, nil
}

// egressDownloads times 100 MB, each way of getting out in turn: as fast
// as the machine goes (the server is local: what is measured is the CPU
// each way costs), and from a server paced at 100 MB/s (a fast link, where
// the network is what limits).
func (b *bench) egressDownloads(ctx context.Context, x *egressRig) error {
	const size = 100 << 20
	// What the gateway's process spends carrying them, from the host's
	// /proc (the engine is local): the figure the machine's load moves
	// least.
	out, err := proc{args: []string{"docker", "inspect", "--format", "{{.State.Pid}}", x.gateway.ID}}.run(ctx)
	if err != nil {
		return err
	}
	gwPid := strings.TrimSpace(string(out))
	// The bound: the same downloads, in the same rounds, through a bare
	// forwarder where the gateway's hop is.
	fwd, err := b.startForwarder(ctx, x)
	if err != nil {
		return err
	}
	defer runCmd(context.WithoutCancel(ctx), "docker", "rm", "-f", fwd.id)
	for _, c := range []struct{ name, bound, scheme, rate string }{
		{egressDownloadCases[0], egressDownloadCases[3], "https", ""}, {egressDownloadCases[1], egressDownloadCases[4], "http", ""}, {egressDownloadCases[2], "", "https", "100"},
	} {
		query := fmt.Sprintf("/bytes?n=%d", size)
		if c.rate != "" {
			query += "&rate=" + c.rate
		}
		args := []string{"download", c.scheme + "://big.test" + query, "-ca", "/tmp/ca.pem", "-timeout", "120s"}
		ways := []clientCall{
			func(ctx context.Context) (clientResult, error) { return x.direct.client(ctx, args...) },
			func(ctx context.Context) (clientResult, error) { return x.viaGW.client(ctx, args...) },
		}
		if c.bound != "" {
			// The client dials the forwarder (no proxy: it carries
			// bytes, it does not speak CONNECT) and checks the server's
			// certificate for big.test all the same.
			ways = append(ways, func(ctx context.Context) (clientResult, error) {
				return x.direct.client(ctx, "download", c.scheme+"://"+fwd.listen[c.scheme]+query, "-noproxy", "-sni", "big.test", "-ca", "/tmp/ca.pem", "-timeout", "120s")
			})
		}
		cpu0, err := processCPU(gwPid)
		if err != nil {
			return err
		}
		fcpu0, err := processCPU(fwd.pid)
		if err != nil {
			return err
		}
		times, err := b.inTurn(ctx, wantBytes(size), ways...)
		if err != nil {
			return err
		}
		floor, gw := times[0], times[1]
		rw := row(c.name, gw, floor, target{"throughput >= 0.9x open (time <= 1.11x)", func(r Row) bool { return r.Ratio <= 1/0.9 }})
		cpu1, err := processCPU(gwPid)
		if err != nil {
			return err
		}
		fcpu1, err := processCPU(fwd.pid)
		if err != nil {
			return err
		}
		rw.Note = fmt.Sprintf("%.0f MB/s through the gateway, %.0f MB/s open; the gateway's CPU: %.0f ms a download",
			100/median(gw).Seconds(), 100/median(floor).Seconds(), ms(cpu1-cpu0)/float64(b.n+1))
		b.rows = append(b.rows, rw)
		if c.bound != "" {
			br := row(c.bound, times[2], floor, info)
			br.Note = fmt.Sprintf("bounds %s >= 0.9x: %.0f MB/s through the forwarder (%.2fx direct), %.0f MB/s open; the forwarder's CPU: %.0f ms a download",
				c.name, 100/median(times[2]).Seconds(), median(floor).Seconds()/median(times[2]).Seconds(), 100/median(floor).Seconds(), ms(fcpu1-fcpu0)/float64(b.n+1))
			b.rows = append(b.rows, br)
		}
	}
	return nil
}

// forwarder is the bare forwarder's container: its id, its process's pid
// on the host, and where the client finds it, by scheme.
type forwarder struct {
	id, pid string
	listen  map[string]string
}

// startForwarder runs the bench, built static, in its -forward mode
// (forward.go) in a container of its own that shares the open sandbox's
// network namespace: the client reaches it on the loopback, as the
// confined client reaches its relay, and it reaches the server across the
// bridge, as the gateway does. It forwards to big.test's address, HTTPS
// and HTTP, and is removed by the caller (or the run's cleanup).
func (b *bench) startForwarder(ctx context.Context, x *egressRig) (forwarder, error) {
	bin := filepath.Join(b.tmp, "bench-forward")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/bench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		return forwarder{}, fmt.Errorf("build the forwarder: %v: %s", err, out)
	}
	f := forwarder{listen: map[string]string{"https": "127.0.0.1:18443", "http": "127.0.0.1:18080"}}
	server := x.in.Addr(10)
	out, err := proc{args: []string{"docker", "run", "-d", "--label", b.label, "--network", "container:" + x.direct.ref.ID,
		"--user", "65532:65532", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"-v", bin + ":/forward:ro", "--entrypoint", "/forward", api.DefaultImage, "-forward",
		f.listen["https"] + "=" + server + ":443", f.listen["http"] + "=" + server + ":80"}}.run(ctx)
	if err != nil {
		return forwarder{}, err
	}
	f.id = strings.TrimSpace(string(out))
	if out, err = (proc{args: []string{"docker", "inspect", "--format", "{{.State.Pid}}", f.id}}).run(ctx); err != nil {
		return f, err
	}
	f.pid = strings.TrimSpace(string(out))
	// Listening once the client's connection goes through.
	for try := 0; ; try++ {
		_, err := x.direct.client(ctx, "tcp", f.listen["http"])
		if err == nil {
			return f, nil
		}
		if try == 50 {
			return f, fmt.Errorf("the forwarder does not listen: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// egressBound times a small request to a host a secret is bound to, on a
// new connection (the gateway terminates the sandbox's TLS with a
// certificate of its CA, makes its own to the server, adds the secret),
// against the same request to a host nothing is bound to, through the
// plain tunnel of the same gateway: the median of 20 in a row, each in
// turn.
func (b *bench) egressBound(ctx context.Context, x egressBox, gw provider.Ref, in *egresstest.Internet, put func(provider.Ref, string, string) error, both string) error {
	info, err := egress.SetSecrets(ctx, x.p, gw, control.Secrets{
		Secrets: []control.Secret{{Name: "bench", Placeholder: secrets.Placeholder("bench"), Value: "bench-token-0123456789",
			Hosts: []string{"bound.test"}, Header: "Authorization: Bearer {}"}},
		Roots: []string{string(in.CAPEM)},
	})
	if err != nil {
		return err
	}
	// The client trusts the test's CA (the plain tunnel's server) and the
	// gateway's (the bound host's certificate).
	if err := os.WriteFile(both, append(append([]byte(nil), in.CAPEM...), info.CA...), 0o644); err != nil {
		return err
	}
	if err := put(x.ref, both, "/tmp/both.pem"); err != nil {
		return err
	}
	var bound, plain []time.Duration
	for i := 0; i <= b.n; i++ {
		for _, c := range []struct {
			url  string
			into *[]time.Duration
		}{{"https://big.test/", &plain}, {"https://bound.test/", &bound}} {
			r, err := x.client(ctx, "get", c.url, "-ca", "/tmp/both.pem", "-n", "20")
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("%s: status %d", c.url, r.Status)
			}
			if err != nil {
				return err
			}
			if i > 0 {
				*c.into = append(*c.into, time.Duration(r.Seconds*float64(time.Second)))
			}
		}
	}
	rw := row("egress small request to a bound host (TLS terminated), https", bound, plain, maxOverhead(5))
	rw.Note = "floor: the same request to a host no secret is bound to, through the plain tunnel of the same gateway"
	b.rows = append(b.rows, rw)
	return nil
}

// eachWay runs the client with args in the open sandbox and in the confined
// one in turn, b.n times after one to warm up, each way first in every other
// round (what falls on a round's first run, or its second, falls on both
// ways alike), checks each result, and returns the seconds the client
// measured each way.
func (b *bench) eachWay(ctx context.Context, direct, viaGW clientFunc, check func(clientResult) error, args ...string) (gw, floor []time.Duration, err error) {
	times, err := b.inTurn(ctx, check,
		func(ctx context.Context) (clientResult, error) { return direct(ctx, args...) },
		func(ctx context.Context) (clientResult, error) { return viaGW(ctx, args...) })
	if err != nil {
		return nil, nil, err
	}
	return times[1], times[0], nil
}

// clientCall is one way of running the client, its arguments given.
type clientCall func(ctx context.Context) (clientResult, error)

// inTurn runs each way in turn, b.n times after one round to warm up, a
// different way first in each round, checks each result, and returns the
// seconds the client measured, by way.
func (b *bench) inTurn(ctx context.Context, check func(clientResult) error, ways ...clientCall) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(ways))
	for i := 0; i <= b.n; i++ {
		for k := range ways {
			w := (i + k) % len(ways)
			r, err := ways[w](ctx)
			if err == nil && check != nil {
				err = check(r)
			}
			if err != nil {
				return nil, err
			}
			if i > 0 {
				times[w] = append(times[w], time.Duration(r.Seconds*float64(time.Second)))
			}
		}
	}
	return times, nil
}

// wantBytes checks that a download got size bytes.
func wantBytes(size int64) func(clientResult) error {
	return func(r clientResult) error {
		if r.Bytes != size {
			return fmt.Errorf("downloaded %d bytes of %d", r.Bytes, size)
		}
		return nil
	}
}

// confine makes plan's volume, gateway and sandbox as create would, and
// returns the sandbox's and the gateway's refs.
func (b *bench) confine(ctx context.Context, p *docker.Provider, plan egress.Plan, program []byte) (provider.Ref, provider.Ref, error) {
	if err := p.Client().VolumeCreate(ctx, plan.Volume); err != nil {
		return provider.Ref{}, provider.Ref{}, err
	}
	var gw, sb *provider.Sandbox
	var gwErr, sbErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if gw, gwErr = p.Create(ctx, plan.Gateway); gwErr == nil {
			gwErr = installReady(ctx, p, gw.Ref, program)
		}
	}()
	go func() { defer wg.Done(); sb, sbErr = p.Create(ctx, plan.Sandbox) }()
	wg.Wait()
	if gwErr != nil || sbErr != nil {
		return provider.Ref{}, provider.Ref{}, fmt.Errorf("gateway: %v; sandbox: %v", gwErr, sbErr)
	}
	if _, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", egress.WaitRelay}}); err != nil {
		return provider.Ref{}, provider.Ref{}, err
	}
	return sb.Ref, gw.Ref, nil
}

// processCPU is the user and system time process pid has spent, from
// /proc/PID/stat (its threads' included).
func processCPU(pid string) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's name, which ends at the last ')':
	// utime and stime are the 12th and 13th of them, in clock ticks
	// (100 a second on Linux).
	_, rest, _ := strings.Cut(string(data), ")")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: %q", pid, data)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11]+" "+f[12], &utime, &stime); err != nil {
		return 0, fmt.Errorf("/proc/%s/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// installReady installs the gateway's program in gw and tells it it holds
// its policy (egress.Ready), as create does: only then does it listen for
// the relay.
func installReady(ctx context.Context, p *docker.Provider, gw provider.Ref, program []byte) error {
	if err := egress.Install(ctx, p, gw, bytes.NewReader(program)); err != nil {
		return err
	}
	return egress.Ready(ctx, p, gw)
}

// egressCreate times the docker calls of a create of the big repository
// with a gateway against without, interleaved: today's (run, copy, startup
// command) and the gateway's (volume create beside the branch; the sandbox's
// run and copy beside the gateway's run and install; the relay; the startup
// command), and the pieces that chose the design.
func (b *bench) egressCreate(ctx context.Context, p *docker.Provider, program []byte, base provider.Spec, labels map[string]string, in *egresstest.Internet) error {
	dir, r, err := b.openRepo(ctx, b.big)
	if err != nil {
		return err
	}
	head, err := r.Git.Head(ctx)
	if err != nil {
		return err
	}
	copyIn := func(name string) error {
		return pipe(ctx,
			proc{args: []string{"git", "-C", dir, "archive", "--format=tar", head}},
			proc{args: []string{"docker", "exec", "-i", name, "tar", "-x", "-f", "-", "-C", api.Workdir}})
	}
	remove := func(names ...string) {
		_ = runCmd(context.WithoutCancel(ctx), append([]string{"docker", "rm", "-f"}, names...)...)
	}
	var today, withGW, take, gwRun, volCreate, netCreate, netConnect []time.Duration
	// fallbacks count the runs where the shared bridge was full (other
	// sandboxes on the engine) and a network was made instead.
	var fallbacks, gwFallbacks int
	for i := 0; i <= b.n; i++ {
		slug := fmt.Sprintf("eg%d", i)
		spec := b.svc.ContainerSpec(r, slug, head)
		// Today: run (on the shared bridge, or a network of its own when
		// that is full, as the provider does), copy, startup.
		var made *provider.Sandbox
		d, err := timed(func() error {
			if err := runCmd(ctx, "git", "-C", dir, "branch", api.BranchPrefix+slug, head); err != nil {
				return err
			}
			var err error
			if made, err = p.Create(ctx, spec); err != nil {
				return err
			}
			if err := copyIn(spec.Name); err != nil {
				return err
			}
			return runCmd(ctx, append([]string{"docker", "exec", spec.Name}, config.DefaultSetup...)...)
		})
		if made != nil {
			if made.Ref.NetworkID != "" && i > 0 {
				fallbacks++
			}
			_ = p.Remove(context.WithoutCancel(ctx), made.Ref)
		}
		_ = runCmd(ctx, "git", "-C", dir, "branch", "-D", api.BranchPrefix+slug)
		if err != nil {
			return err
		}
		// With a gateway.
		plan, err := egress.Confine(spec, api.DefaultImage, policy.Policy{Sandbox: slug, Mode: policy.ModeAllowlist, Registries: true}, labels)
		if err != nil {
			return err
		}
		var gwRef provider.Ref
		var gwMade *provider.Sandbox
		var gwTook time.Duration
		dg, err := timed(func() error {
			var wg sync.WaitGroup
			var volErr, branchErr error
			wg.Add(2)
			go func() { defer wg.Done(); volErr = p.Client().VolumeCreate(ctx, plan.Volume) }()
			go func() {
				defer wg.Done()
				branchErr = runCmd(ctx, "git", "-C", dir, "branch", api.BranchPrefix+slug, head)
			}()
			wg.Wait()
			if err := cmpErr(volErr, branchErr); err != nil {
				return err
			}
			var gwErr, sbErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				start := time.Now()
				gw, err := p.Create(ctx, plan.Gateway)
				if err == nil {
					gwRef, gwMade = gw.Ref, gw
					err = installReady(ctx, p, gw.Ref, program)
				}
				gwTook, gwErr = time.Since(start), err
			}()
			go func() {
				defer wg.Done()
				if _, err := p.Create(ctx, plan.Sandbox); err != nil {
					sbErr = err
					return
				}
				if sbErr = copyIn(plan.Sandbox.Name); sbErr != nil {
					return
				}
				// The default setup command needs no network: it runs
				// beside the gateway's install (one a user sets would
				// wait for the relay first: egress.WaitRelay).
				sbErr = runCmd(ctx, append([]string{"docker", "exec", plan.Sandbox.Name}, config.DefaultSetup...)...)
			}()
			wg.Wait()
			return cmpErr(gwErr, sbErr)
		})
		if err == nil {
			// A pooled sandbox's gateway is made with it, its policy
			// too; taking one whose engine's addresses changed since
			// the fill sets the policy again (beside the startup
			// command): what that costs.
			var dt time.Duration
			dt, err = timed(func() error {
				return egress.SetPolicy(ctx, p, gwRef, policy.Policy{Sandbox: slug + "-taken", Mode: policy.ModeAllowlist, Registries: true})
			})
			if i > 0 {
				take = append(take, dt)
			}
		}
		remove(plan.Sandbox.Name)
		if gwMade != nil {
			if gwMade.Ref.NetworkID != "" && i > 0 {
				gwFallbacks++
			}
			_ = p.Remove(context.WithoutCancel(ctx), gwMade.Ref)
		}
		_ = p.Client().VolumeRemove(ctx, plan.Volume.Name)
		_ = runCmd(ctx, "git", "-C", dir, "branch", "-D", api.BranchPrefix+slug)
		if err != nil {
			return err
		}
		// The pieces, alone: what a gateway per engine would cost instead
		// (an internal network per sandbox, and the gateway joined to it).
		v, err := timed(func() error { return p.Client().VolumeCreate(ctx, plan.Volume) })
		_ = p.Client().VolumeRemove(ctx, plan.Volume.Name)
		if err != nil {
			return err
		}
		net := "litterbox-bench-egress-net-" + slug
		nc, err := timed(func() error {
			return runCmd(ctx, "docker", "network", "create", "--internal", "--label", b.label, net)
		})
		if err != nil {
			return err
		}
		keeper := base
		keeper.Name, keeper.Network = "litterbox-bench-egress-keeper-"+slug, provider.NetworkIsolated
		if _, err := p.Create(ctx, keeper); err != nil {
			return err
		}
		ncon, err := timed(func() error { return runCmd(ctx, "docker", "network", "connect", net, keeper.Name) })
		remove(keeper.Name)
		_ = runCmd(ctx, "docker", "network", "rm", net)
		if err != nil {
			return err
		}
		if i > 0 {
			today, withGW = append(today, d), append(withGW, dg)
			gwRun, volCreate, netCreate, netConnect = append(gwRun, gwTook), append(volCreate, v), append(netCreate, nc), append(netConnect, ncon)
		}
	}
	createRow := row("egress create 2500 files (sequence)", withGW, today, target{"<= 1.05x floor", func(r Row) bool { return r.Ratio <= 1.05 }})
	if fallbacks+gwFallbacks > 0 {
		createRow.Note = fmt.Sprintf("the shared bridge was full: %d of today's and %d gateways' runs made a network", fallbacks, gwFallbacks)
	}
	b.rows = append(b.rows,
		createRow,
		row("egress pooled take: set the policy", take, nil, info),
		row("egress pieces: gateway run + install", gwRun, nil, info),
		row("egress pieces: volume create", volCreate, nil, info),
		row("egress per-engine gateway: network create --internal", netCreate, nil, info),
		row("egress per-engine gateway: network connect", netConnect, nil, info),
	)
	return nil
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
