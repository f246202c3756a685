// Command bench prints how fast Litterbox is against the bare docker and git
// commands a script would need to do the same work (the floor), measured in
// the same run. Each case prints the median of N runs beside its floor, the
// ratio, the target and PASS or FAIL. It is a program that prints figures,
// not a test: nothing here fails a build on a time. See docs/bench.md.
//
// Usage: go run ./cmd/bench -bin /path/to/litterbox [-n 7] [-json] [-only list,of,groups]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// groups of cases, in the order they run.
var groups = []string{"create", "pause", "idle", "list", "mcp", "hostile", "remote", "kubernetes", "kubernetes-egress", "kubernetes-pool", "kubernetes-pool-confined", "snapshot", "services", "egress-create", "egress", "egress-download", "bigwrite", "activity", "runtimes", "vm", "run", "go-cache", "bootstrap"}

type bench struct {
	bin string // the litterbox binary under test
	// before is another litterbox binary (an earlier one) whose create and
	// delete the create group times in the same rounds; "" for none.
	before string
	ssh    string   // the ssh engine of the remote group, "" for none
	n      int      // runs per case
	label  string   // key=value put on everything made, and used to clean up
	env    []string // extra environment for litterbox
	tmp    string   // temp dir holding the synthetic repositories
	svc    *sandbox.Sandboxes
	rows   []Row
	// snapCost is the snapshot cost of one changed file, by repository
	// ("250 files"), for the speed table.
	snapCost map[string]float64
	// repository shapes
	big, small repoSpec
	scale      []repoSpec
	listCount  int
	bigShapes  []bigShape
	repos      map[repoSpec]string // generated repositories by shape
}

func main() {
	// The egress-download group's bare forwarder (forward.go), run by the
	// bench in a container: not a flag of the table's.
	if len(os.Args) > 1 && os.Args[1] == "-forward" {
		os.Exit(forward(os.Args[2:]))
	}
	var (
		bin       = flag.String("bin", "", "litterbox binary to measure (default: build one from this module)")
		before    = flag.String("before", "", "another litterbox binary (an earlier build) whose create and delete the create group times in the same rounds, for a before/after from one run")
		n         = flag.Int("n", 7, "runs per case; the median is printed")
		jsonOut   = flag.Bool("json", false, "print JSON instead of the table")
		only      = flag.String("only", "", "comma-separated groups to run: "+strings.Join(groups, ","))
		bigFiles  = flag.Int("big-files", 2500, "files in the big repository")
		bigMB     = flag.Int("big-mb", 25, "size of the big repository, MB")
		small     = flag.Int("small-files", 60, "files in the small repository")
		scale     = flag.String("scale", "250,2500,25000", "file counts of the snapshot scaling repositories (1 KB per file on average, except the big one)")
		listCount = flag.Int("list-count", 20, "sandboxes present while list is timed")
		keep      = flag.Bool("keep", false, "keep the temp directory of generated repositories")
		bigWrite  = flag.String("bigwrite", "19x48,4x48,19x8", "big-write cases, FILESxMIB: files of random bytes written in one command, then snapshotted")
		ssh       = flag.String("ssh", "ssh://litterbox-remote", "ssh engine of the remote group (scripts/ensure-ssh-engine.sh); \"\" for none")
	)
	flag.Parse()
	os.Exit(run(*bin, *before, *n, *jsonOut, *only, *bigFiles, *bigMB, *small, *scale, *listCount, *keep, *bigWrite, *ssh))
}

func run(bin, before string, n int, jsonOut bool, only string, bigFiles, bigMB, smallFiles int, scale string, listCount int, keep bool, bigWrite, ssh string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	b := &bench{
		n:         max(1, n),
		big:       repoSpec{Files: bigFiles, Bytes: int64(bigMB) << 20},
		small:     repoSpec{Files: smallFiles, Bytes: int64(smallFiles) * 4 << 10},
		listCount: listCount,
		repos:     map[repoSpec]string{},
		ssh:       ssh,
		before:    before,
	}
	for _, f := range strings.Split(scale, ",") {
		var files int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &files); err != nil || files < 1 {
			fmt.Fprintf(os.Stderr, "bench: bad -scale entry %q\n", f)
			return 2
		}
		spec := repoSpec{Files: files, Bytes: int64(files) << 10}
		if files == b.big.Files {
			spec = b.big
		}
		b.scale = append(b.scale, spec)
	}

	var err error
	if b.bigShapes, err = parseBigShapes(bigWrite); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}

	// Everything made carries one label, so only what this run made is removed.
	labels := os.Getenv("LITTERBOX_LABELS")
	if labels == "" {
		labels = fmt.Sprintf("dev.litterbox.test=bench-%d", os.Getpid())
		os.Setenv("LITTERBOX_LABELS", labels)
	}
	b.label, _, _ = strings.Cut(labels, ",")
	b.env = []string{"LITTERBOX_LABELS=" + labels, "LITTERBOX_LOG_LEVEL=warn"}
	run := runner.Exec{Log: log.New(os.Stderr)}
	p, err := docker.New(docker.Options{Runner: run})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	b.svc = sandbox.New(p, run, nil, sandbox.EnvOptions())

	if b.tmp, err = os.MkdirTemp("", "litterbox-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	// Resolve symlinks (macOS /tmp) so paths match what git reports.
	b.tmp, _ = filepath.EvalSymlinks(b.tmp)
	defer func() {
		b.cleanup()
		if keep {
			progress("kept %s", b.tmp)
		} else {
			os.RemoveAll(b.tmp)
		}
	}()

	if bin == "" {
		bin = filepath.Join(b.tmp, "litterbox")
		progress("building litterbox into %s", bin)
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: go build: %v\n%s", err, out)
			return 1
		}
	}
	if before != "" {
		if b.before, err = filepath.Abs(before); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	if b.bin, err = filepath.Abs(bin); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if err := runCmd(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", api.DefaultImage); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s is not available (run scripts/ensure-docker.sh and scripts/ensure-busybox.sh): %v\n", api.DefaultImage, err)
		return 1
	}

	want := map[string]bool{}
	for _, g := range strings.Split(only, ",") {
		if g = strings.TrimSpace(g); g != "" {
			want[g] = true
		}
	}
	cases := map[string]func(context.Context) error{
		"create":     b.caseCreate,
		"pause":      b.casePause,
		"idle":       b.caseIdle,
		"list":       b.caseList,
		"mcp":        b.caseMCP,
		"hostile":    b.caseHostile,
		"remote":     b.caseRemote,
		"kubernetes": b.caseKubernetes,
		// Creates from a warm pool on the cluster: `-only kubernetes-pool`.
		"kubernetes-pool": func(ctx context.Context) error { return b.caseKubernetesPool(ctx, false) },
		// A confined sandbox (its gateway pod) against an open one.
		"kubernetes-egress": b.caseKubernetesEgress,
		// The same as kubernetes-pool with confined members: only with
		// `-only kubernetes-pool-confined` (as long as kubernetes-pool).
		"kubernetes-pool-confined": func(ctx context.Context) error { return b.caseKubernetesPool(ctx, true) },
		"snapshot":                 b.caseSnapshot,
		"services":                 b.caseServices,
		"egress":                   b.caseEgress,
		// The egress group's downloads alone (the line-rate target).
		"egress-download": b.caseEgressDownload,
		// The egress group's creates through the binary: `-only egress`
		// runs them too, `-only egress-create` alone (no root needed).
		"egress-create": b.egressCreates,
		"bigwrite":      b.caseBigWrite,
		"activity":      b.caseActivity,
		"runtimes":      b.caseRuntimes,
		"vm":            b.caseVM,
		"run":           b.caseRun,
		// A second sandbox's go mod download with the shared Go cache (needs root).
		"go-cache": b.caseGoCache,
		// A create with a 10 MB .worktreeinclude set against one without.
		"bootstrap": b.caseBootstrap,
	}
	started, loadStart := time.Now(), loadAvg()
	for _, g := range groups {
		if len(want) > 0 && !want[g] && !(g == "egress-create" && want["egress"]) {
			continue
		}
		if g == "kubernetes-pool-confined" && !want[g] {
			continue // opt-in: as long as the kubernetes-pool group
		}
		if g == "egress-download" && (!want[g] || want["egress"]) {
			continue // the egress group has its downloads
		}
		if ctx.Err() != nil {
			break
		}
		progress("== %s", g)
		if err := cases[g](ctx); err != nil {
			progress("%s: %v", g, err)
			b.rows = append(b.rows, Row{Case: g, Status: "ERROR", Note: firstLine(err.Error())})
		}
	}

	load := loadText(loadStart, loadAvg())
	meta := map[string]any{
		"runs": b.n, "cpus": runtime.NumCPU(), "binary": b.bin, "seconds": time.Since(started).Seconds(),
		"date": time.Now().UTC().Format(time.RFC3339),
	}
	if load != "" {
		meta["load"] = load
		load = "; " + load
	}
	fast := b.fastRows(ctx)
	meta["fast"] = fast
	if jsonOut {
		if err := printJSON(os.Stdout, b.rows, meta); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	} else {
		fmt.Printf("litterbox bench: median of %d runs; floor = bare docker/git commands, same run; %d CPUs%s; %.0f s\n\n", b.n, runtime.NumCPU(), load, time.Since(started).Seconds())
		printTable(os.Stdout, b.rows)
		if len(fast) > 0 {
			fmt.Printf("\nspeed targets: each ratio against a floor from this run\n\n")
			printFast(os.Stdout, fast)
		}
	}
	for _, r := range b.rows {
		if r.Status == "ERROR" {
			return 1
		}
	}
	return 0
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// repo returns a generated repository of spec's shape, making it once.
func (b *bench) repo(ctx context.Context, spec repoSpec) (string, error) {
	if dir, ok := b.repos[spec]; ok {
		return dir, nil
	}
	dir := filepath.Join(b.tmp, fmt.Sprintf("repo%d", spec.Files))
	progress("generating a repository of %d files, %d MB", spec.Files, spec.Bytes>>20)
	if err := makeRepo(ctx, dir, spec); err != nil {
		return "", err
	}
	b.repos[spec] = dir
	return dir, nil
}

// openRepo returns a generated repository of spec's shape, opened.
func (b *bench) openRepo(ctx context.Context, spec repoSpec) (string, *api.Repo, error) {
	dir, err := b.repo(ctx, spec)
	if err != nil {
		return "", nil, err
	}
	r, err := b.svc.OpenRepo(ctx, dir)
	return dir, r, err
}

// skip adds an n/a row for each case, saying why.
func (b *bench) skip(cases []string, why string) {
	for _, c := range cases {
		b.rows = append(b.rows, na(c, why))
	}
}

// litterbox is a litterbox command run in dir.
func (b *bench) litterbox(dir string, args ...string) proc {
	return proc{args: append([]string{b.bin}, args...), dir: dir, env: b.env}
}

// has reports whether the binary under test knows a subcommand, so cases for
// features not built yet print n/a instead of failing.
func (b *bench) has(ctx context.Context, sub ...string) bool {
	_, err := b.litterbox(b.tmp, append(sub, "--help")...).run(ctx)
	return err == nil
}

// cleanup removes every container, network and volume carrying this run's label, on
// the local engine and on the ssh engine of the remote group.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	filter := "label=" + b.label
	hosts := [][]string{{"docker"}}
	if b.ssh != "" {
		hosts = append(hosts, []string{"docker", "--host", b.ssh})
	}
	for _, docker := range hosts {
		// Containers first, then their networks, then the egress group's
		// volumes, once their containers are gone.
		for _, r := range []removal{containers, networks, volumes} {
			if err := removeLabeled(ctx, docker, r, filter); err != nil {
				progress("cleanup: %v", err)
			}
		}
	}
}

// removal is how the docker CLI lists (quietly, by id) and removes one
// kind of object.
type removal struct{ list, rm []string }

var (
	containers = removal{[]string{"ps", "-aq"}, []string{"rm", "-f", "-v"}}
	networks   = removal{[]string{"network", "ls", "-q"}, []string{"network", "rm"}}
	volumes    = removal{[]string{"volume", "ls", "-q"}, []string{"volume", "rm", "--force"}}
)

// removeLabeled removes the objects of r's kind that docker lists with
// filter. Another remover may race it (a detached delete finishing, the
// pool's reaper): docker then says the removal is already in progress, or
// that the object is gone, or still in use by one being removed. Those are
// not failures: the objects still listed get another try, and only what
// is still there after the last is reported, with any other failure.
func removeLabeled(ctx context.Context, docker []string, r removal, filter string) error {
	cmd := func(args ...[]string) []string { return slices.Concat(append([][]string{docker}, args...)...) }
	var err error
	for try := 0; try < 5; try++ {
		out, lerr := (proc{args: cmd(r.list, []string{"--filter", filter})}).run(ctx)
		if lerr != nil {
			return lerr
		}
		ids := strings.Fields(string(out))
		if len(ids) == 0 {
			return nil
		}
		_, err = (proc{args: cmd(r.rm, ids)}).run(ctx)
		var pe *procError
		if err == nil || !errors.As(err, &pe) || !racing(pe.stderr) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(removeRetryWait):
		}
	}
	return err
}

// removeRetryWait is how long a removal that raced another waits before
// it looks again.
var removeRetryWait = time.Second

// racing says every line of a failed removal's stderr is docker's word for
// a race with another remover.
func racing(stderr string) bool {
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.Contains(line, "is already in progress") && !strings.Contains(line, "No such container") &&
			!strings.Contains(line, "not found") && !strings.Contains(line, "no such volume") &&
			!strings.Contains(line, "in use") && !strings.Contains(line, "has active endpoints") {
			return false
		}
	}
	return true
}
