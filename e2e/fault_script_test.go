package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/provider/docker"
)

// Fault injection, so that what was fixed stays fixed. litterbox is killed with
// SIGKILL at a random docker or git call of create, snapshot, delete, merge
// or apply (before the call, after it, or while it runs), or the engine stops
// answering from a random docker call on. After each fault, list must tell
// the truth (every object it names exists, every object that exists is
// listed, nothing unusable passes for usable) and the next command must
// converge with nothing lost (the user's branch, index and files as they
// were, the sandbox's work on its branch).
//
// The faults come from lbfault, a docker and git stand-in put first on PATH
// for the faulted run only: it counts the calls of that run and strikes at
// the chosen one. The rounds are drawn from a seed, printed in the log;
// LB_FAULT_SEED replays one, LB_FAULT_ROUNDS overrides the number of rounds.

// faultMain is lbfault: `lbfault TOOL ARGS...` runs the real TOOL (from
// LB_FAULT_REAL_<TOOL>) unless this is the call LB_FAULT_AT of the run,
// counted in LB_FAULT_DIR across the tools in LB_FAULT_TOOLS; then
// LB_FAULT_MODE says what happens:
//
//	before  litterbox (the parent) is killed; the call never runs
//	after   the call runs, then litterbox is killed before it sees the result
//	during  the call starts; litterbox is killed LB_FAULT_DELAY_MS later,
//	        and the call runs on without it
//	engine  this docker call and every later one fail as with no engine;
//	        with LB_FAULT_DELAY_MS, this one runs that long first
//	count   nothing: the run is only counted
func faultMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lbfault TOOL ARGS...")
		os.Exit(2)
	}
	tool, args := os.Args[1], os.Args[2:]
	real := os.Getenv("LB_FAULT_REAL_" + strings.ToUpper(tool))
	dir := os.Getenv("LB_FAULT_DIR")
	mode := os.Getenv("LB_FAULT_MODE")
	n := 0
	if strings.Contains(os.Getenv("LB_FAULT_TOOLS"), tool) {
		n = bumpCounter(filepath.Join(dir, "count"))
	}
	at, _ := strconv.Atoi(os.Getenv("LB_FAULT_AT"))
	hit := n > 0 && (n == at || (mode == "engine" && n >= at))
	if hit || (n > 0 && mode == "count") {
		line := fmt.Sprintf("%d %s %s", n, tool, strings.Join(args, " "))
		name := "hit"
		if mode == "count" {
			name = "calls"
		}
		if f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			f.WriteString(strings.ReplaceAll(line[:min(len(line), 300)], "\n", " ") + "\n")
			f.Close()
		}
	}
	if !hit || mode == "count" {
		os.Exit(runReal(real, args, -1))
	}
	parent := os.Getppid()
	switch mode {
	case "engine":
		delay, _ := strconv.Atoi(os.Getenv("LB_FAULT_DELAY_MS"))
		if n == at && delay > 0 {
			// The engine dies while the call runs: the CLI loses its
			// connection partway through.
			cmd := exec.Command(real, args...)
			cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
			if cmd.Start() == nil {
				time.Sleep(time.Duration(delay) * time.Millisecond)
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			fmt.Fprintln(os.Stderr, "error during connect: Post \"http://%2Fvar%2Frun%2Fdocker.sock/v1.41/exec/start\": EOF")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?")
		os.Exit(1)
	case "before":
		_ = syscall.Kill(parent, syscall.SIGKILL)
		os.Exit(137)
	case "after":
		code := runReal(real, args, -1)
		_ = syscall.Kill(parent, syscall.SIGKILL)
		os.Exit(code)
	case "during":
		// Killed the delay after the call began, or, when the call was
		// quicker, as it ends: every such round strikes.
		delay, _ := strconv.Atoi(os.Getenv("LB_FAULT_DELAY_MS"))
		code := runReal(real, args, time.Duration(delay)*time.Millisecond)
		_ = syscall.Kill(parent, syscall.SIGKILL)
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "lbfault: unknown LB_FAULT_MODE", mode)
	os.Exit(2)
}

// runReal runs the real tool with this process's streams and returns its exit
// code. killAfter >= 0 kills the parent that long after the start.
func runReal(real string, args []string, killAfter time.Duration) int {
	cmd := exec.Command(real, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "lbfault:", err)
		return 127
	}
	if killAfter >= 0 {
		parent := os.Getppid()
		t := time.AfterFunc(killAfter, func() { _ = syscall.Kill(parent, syscall.SIGKILL) })
		defer t.Stop()
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() < 0 {
			return 137
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 127
	}
	return 0
}

// bumpCounter adds one to the number in file, under an flock: calls run in
// parallel.
func bumpCounter(file string) int {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return 0
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) != nil {
		return 0
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	var buf [32]byte
	k, _ := f.ReadAt(buf[:], 0)
	n, _ := strconv.Atoi(strings.TrimSpace(string(buf[:k])))
	n++
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(n)), 0)
	return n
}

// faulter runs the rounds of one script.
type faulter struct {
	ts       *testscript.TestScript
	rng      *rand.Rand
	lb       string // the litterbox binary
	lbfault  string
	dir      string // the stand-ins' directory
	repo     string
	realGit  string
	realDock string
	label    string
	round    int
	seq      int // rounds run, the counting one included: names and files per round
	struck   int // faulted runs in which the fault struck
}

// plan is one fault.
type plan struct {
	at      int
	mode    string
	delayMS int
	tools   string
}

func (p plan) String() string {
	s := fmt.Sprintf("%s at call %d", p.mode, p.at)
	if p.delayMS > 0 && p.mode != "before" && p.mode != "after" {
		s += fmt.Sprintf(" (+%d ms)", p.delayMS)
	}
	return s
}

// result is one litterbox run.
type result struct {
	code           int
	stdout, stderr string
}

func cmdFaults(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: faults OP KILLS [ENGINE]")
	}
	kills, err := strconv.Atoi(args[1])
	ts.Check(err)
	engines := 0
	if len(args) == 3 {
		engines, err = strconv.Atoi(args[2])
		ts.Check(err)
	}
	if v := os.Getenv("LB_FAULT_ROUNDS"); v != "" {
		kills, err = strconv.Atoi(v)
		ts.Check(err)
		engines = min(engines, 1) * kills
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("LB_FAULT_SEED"); v != "" {
		seed, err = strconv.ParseInt(v, 10, 64)
		ts.Check(err)
	}
	ts.Logf("faults %s: seed %d (replay with LB_FAULT_SEED=%d)", args[0], seed, seed)
	f := &faulter{ts: ts, rng: rand.New(rand.NewSource(seed)), repo: ts.MkAbs("."), label: ts.Getenv("LITTERBOX_LABELS")}
	f.seq, _ = strconv.Atoi(ts.Getenv("LB_FAULT_SEQ"))
	path := ts.Getenv("PATH")
	f.lb, err = lookPath(path, "litterbox")
	ts.Check(err)
	f.lbfault, err = lookPath(path, "lbfault")
	ts.Check(err)
	f.realGit, err = lookPath(path, "git")
	ts.Check(err)
	f.realDock, err = lookPath(path, "docker")
	ts.Check(err)
	f.dir = filepath.Join(ts.Getenv("WORK"), ".faults")
	ts.Check(os.MkdirAll(filepath.Join(f.dir, "bin"), 0o755))
	for _, tool := range []string{"docker", "git"} {
		script := fmt.Sprintf("#!/bin/sh\nexec %q %s \"$@\"\n", f.lbfault, tool)
		ts.Check(os.WriteFile(filepath.Join(f.dir, "bin", tool), []byte(script), 0o755))
	}
	op := args[0]

	// An unfaulted run of op counts its calls and notes which of them
	// change something: half the faults strike one of those, the other
	// half any call. The engine faults count docker calls only.
	// Counted twice: the first run also does what is done once (the
	// engine's isolation check, kept after), and a fault at a call only
	// it makes would never strike.
	f.runRound(op, plan{tools: "docker,git", mode: "count"})
	f.runRound(op, plan{tools: "docker,git", mode: "count"})
	all, docker := f.countedCalls()
	if len(all.n) == 0 || len(docker.n) == 0 {
		ts.Fatalf("faults %s: the unfaulted run made no docker call", op)
	}
	ts.Logf("faults %s: an unfaulted run makes %d calls (%d docker); these change something: %v", op, len(all.n), len(docker.n), all.writes)
	pick := func(c calls) int {
		if len(c.writes) > 0 && f.rng.Intn(2) == 0 {
			return c.writes[f.rng.Intn(len(c.writes))]
		}
		return 1 + f.rng.Intn(len(c.n))
	}
	for f.round = 1; f.round <= kills+engines; f.round++ {
		var p plan
		if f.round <= kills {
			p = plan{tools: "docker,git", at: pick(all), mode: []string{"before", "after", "during"}[f.rng.Intn(3)], delayMS: f.rng.Intn(40)}
			if f.rng.Intn(3) == 0 {
				p.delayMS = f.rng.Intn(400)
			}
		} else {
			p = plan{tools: "docker", at: pick(docker), mode: "engine"}
			if f.rng.Intn(2) == 0 {
				p.delayMS = 1 + f.rng.Intn(200) // dies during the call
			}
		}
		f.runRound(op, p)
	}
	// A round whose fault never struck (the run made fewer calls than
	// the counted one) proves only an ordinary run: most must strike.
	if rounds := kills + engines; f.struck*2 < rounds {
		ts.Fatalf("faults %s: the fault struck in %d of %d rounds", op, f.struck, rounds)
	}
	ts.Setenv("LB_FAULT_SEQ", strconv.Itoa(f.seq))
}

// calls are the calls of a counted run: how many, and the numbers of those
// that change something.
type calls struct {
	n      []int
	writes []int
}

// readOnly are the docker and git subcommands that change nothing.
var readOnly = map[string]bool{
	"docker ps": true, "docker network ls": true, "docker inspect": true, "docker version": true,
	"git rev-parse": true, "git for-each-ref": true, "git merge-base": true, "git status": true,
	"git diff-tree": true, "git config": true, "git ls-files": true, "git hash-object": true,
	"git log": true, "git cat-file": true, "git symbolic-ref": true, "git rev-list": true,
	"git archive": true, "git ls-tree": true, "git diff-index": true, "git merge-tree": true,
}

// countedCalls reads the calls of the counted run: all of them, and the
// docker ones numbered among themselves (as an engine fault counts them).
func (f *faulter) countedCalls() (all, docker calls) {
	data, _ := os.ReadFile(filepath.Join(f.dir, "calls"))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	sort.Slice(lines, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.Fields(lines[i] + " 0")[0])
		b, _ := strconv.Atoi(strings.Fields(lines[j] + " 0")[0])
		return a < b
	})
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue
		}
		n, _ := strconv.Atoi(fields[0])
		sub := fields[1] + " " + fields[2]
		// git's subcommand follows -C DIR and -c KEY=VALUE.
		for i := 2; fields[1] == "git" && i+1 < len(fields) && (fields[i] == "-C" || fields[i] == "-c"); i += 2 {
			if i+2 < len(fields) {
				sub = "git " + fields[i+2]
			}
		}
		if fields[1] == "docker" && fields[2] == "network" && len(fields) > 3 {
			sub += " " + fields[3]
		}
		write := !readOnly[sub]
		all.n = append(all.n, n)
		if write {
			all.writes = append(all.writes, n)
		}
		if fields[1] == "docker" {
			docker.n = append(docker.n, len(docker.n)+1)
			if write {
				docker.writes = append(docker.writes, len(docker.n))
			}
		}
	}
	return all, docker
}

// runRound prepares, faults, checks and converges one round; it returns the
// number of calls the faulted run made.
func (f *faulter) runRound(op string, p plan) int {
	f.seq++
	switch op {
	case "create", "create-pooled":
		return f.roundCreate(p, op == "create-pooled")
	case "snapshot":
		return f.roundSnapshot(p)
	case "delete":
		return f.roundDelete(p)
	case "merge", "merge-true", "apply":
		return f.roundMerge(op, p)
	}
	f.ts.Fatalf("faults: unknown op %q", op)
	return 0
}

func (f *faulter) logf(format string, args ...any) {
	f.ts.Logf("round %d: %s", f.round, fmt.Sprintf(format, args...))
}

func (f *faulter) fatalf(format string, args ...any) {
	hit, _ := os.ReadFile(filepath.Join(f.dir, "hit"))
	f.ts.Fatalf("round %d: %s\n(fault struck: %s)", f.round, fmt.Sprintf(format, args...), strings.TrimSpace(string(hit)))
}

// env is the environment of litterbox and the tools it runs.
func (f *faulter) env() []string {
	env := scriptEnv(f.ts)
	for _, k := range []string{"DOCKER_CONFIG", "DOCKER_CONTEXT"} {
		if v := f.ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// lbRun runs litterbox ARGS without faults.
func (f *faulter) lbRun(args ...string) result {
	return f.exec(f.env(), args...)
}

// must runs litterbox ARGS without faults and fails unless it exits 0.
func (f *faulter) must(args ...string) result {
	r := f.lbRun(args...)
	if r.code != 0 {
		f.fatalf("litterbox %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// faulted runs litterbox ARGS with the fault p, waits until every process it
// started has ended, and returns the result and the number of calls counted.
func (f *faulter) faulted(p plan, args ...string) (result, int) {
	for _, name := range []string{"count", "hit", "calls"} {
		_ = os.Remove(filepath.Join(f.dir, name))
	}
	tag := fmt.Sprintf("LB_FAULT_TAG=%s-%d-%d", f.label, f.round, time.Now().UnixNano())
	env := f.env()
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + filepath.Join(f.dir, "bin") + string(os.PathListSeparator) + v
		}
	}
	env = append(env, tag,
		"LB_FAULT_DIR="+f.dir, "LB_FAULT_REAL_DOCKER="+f.realDock, "LB_FAULT_REAL_GIT="+f.realGit,
		"LB_FAULT_AT="+strconv.Itoa(p.at), "LB_FAULT_MODE="+p.mode, "LB_FAULT_DELAY_MS="+strconv.Itoa(p.delayMS), "LB_FAULT_TOOLS="+p.tools)
	r := f.exec(env, args...)
	f.quiesce(tag)
	data, _ := os.ReadFile(filepath.Join(f.dir, "count"))
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if p.mode != "count" {
		hit, _ := os.ReadFile(filepath.Join(f.dir, "hit"))
		first, _, _ := strings.Cut(string(hit), "\n")
		if first != "" {
			f.struck++
		}
		f.logf("litterbox %s: %v of %d -> exit %d; struck: %s", strings.Join(args, " "), p, n, r.code, first)
	}
	return r, n
}

func (f *faulter) exec(env []string, args ...string) result {
	out, err := os.CreateTemp(f.dir, "out")
	f.ts.Check(err)
	defer os.Remove(out.Name())
	errf, err := os.CreateTemp(f.dir, "err")
	f.ts.Check(err)
	defer os.Remove(errf.Name())
	cmd := exec.Command(f.lb, args...)
	cmd.Dir, cmd.Env = f.repo, env
	// Files, not pipes: a killed litterbox's children may hold them open.
	cmd.Stdout, cmd.Stderr = out, errf
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode() // -1 when killed
	} else if err != nil {
		f.ts.Fatalf("run litterbox: %v", err)
	}
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	out.Close()
	errf.Close()
	return result{code: code, stdout: string(o), stderr: string(e)}
}

// quiesce waits until no process carries tag in its environment: a killed
// litterbox's docker and git children run on, and the checks must see what
// they leave.
func (f *faulter) quiesce(tag string) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		busy := false
		procs, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err == nil && bytes.Contains(data, []byte(tag+"\x00")) {
				busy = true
				break
			}
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			f.fatalf("processes of the faulted run still running after 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// git runs the real git in the repository and returns its trimmed stdout.
func (f *faulter) git(args ...string) string {
	cmd := exec.Command(f.realGit, args...)
	cmd.Dir, cmd.Env = f.repo, f.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// worktreeTree writes the working tree, untracked files included, as a tree
// (through a private index) and returns its id.
func (f *faulter) worktreeTree() string {
	index := filepath.Join(f.dir, "wt.index")
	defer os.Remove(index)
	run := func(args ...string) string {
		cmd := exec.Command(f.realGit, args...)
		cmd.Dir, cmd.Env = f.repo, append(f.env(), "GIT_INDEX_FILE="+index)
		out, err := cmd.Output()
		if err != nil {
			f.fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	run("read-tree", "HEAD")
	run("add", "-A", ".")
	return run("write-tree")
}

// isAncestor reports whether commit a is an ancestor of b.
func (f *faulter) isAncestor(a, b string) bool {
	cmd := exec.Command(f.realGit, "merge-base", "--is-ancestor", a, b)
	cmd.Dir, cmd.Env = f.repo, f.env()
	return cmd.Run() == nil
}

// docker runs the real docker and returns its stdout lines.
func (f *faulter) docker(args ...string) []string {
	cmd := exec.Command(f.realDock, args...)
	cmd.Env = f.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// settle waits until the engine has finished what a killed docker call had
// asked of it: the daemon goes on with a request after its client dies (a
// killed `docker rm` still removes the container a moment later), so list
// and the check below would otherwise see two different moments.
func (f *faulter) settle() {
	state := func() string {
		ps := f.docker("ps", "-a", "--filter", "label="+f.label, "--format", `{{.Names}} {{.State}}`)
		nets := f.docker("network", "ls", "--filter", "label="+f.label, "--format", `{{.Name}}`)
		return strings.Join(ps, "\n") + "\n--\n" + strings.Join(nets, "\n")
	}
	prev := state()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		cur := state()
		if cur == prev && !strings.Contains(cur, " removing") {
			return
		}
		prev = cur
	}
}

// listRow is a row of litterbox list --json.
type listRow struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	Container string `json:"container"`
	Network   string `json:"network"`
	Base      string `json:"base"`
}

// truth checks list against what exists: every container, network and
// branch of the script is in a row, every row's container and network exist,
// and the status matches. usable is called for each row listed as usable
// (active, paused, failed-setup, stopped) to check its container further.
// It returns the rows by name.
func (f *faulter) truth(usable func(listRow)) map[string]listRow {
	f.settle()
	r := f.lbRun("list", "--json")
	if r.code != 0 {
		f.fatalf("list after the fault: exit %d\n%s", r.code, r.stderr)
	}
	var l struct {
		Sandboxes []listRow
		Pool      []struct{ Container string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		f.fatalf("list --json: %v\n%s", err, r.stdout)
	}
	pool := map[string]bool{}
	for _, p := range l.Pool {
		pool[p.Container] = true
	}
	rows := map[string]listRow{}
	for _, row := range l.Sandboxes {
		if row.Network == docker.SharedNetwork {
			row.Network = "" // the shared bridge is no sandbox's own: never left over, never removed
		}
		rows[row.Name] = row
	}
	cts := map[string]string{} // slug -> container name
	for _, line := range f.docker("ps", "-a", "--no-trunc", "--filter", "label="+f.label, "--format", `{{.ID}}|{{.Label "dev.litterbox.pool"}}|{{.Names}}|{{.Label "dev.litterbox.slug"}}|{{.Label "dev.litterbox.gateway-of"}}`) {
		fields := strings.Split(line, "|")
		if len(fields) != 5 {
			f.fatalf("docker ps: %q", line)
		}
		id, name, slug := fields[0], fields[2], fields[3]
		if fields[4] != "" {
			continue // a sandbox's egress gateway: delete removes it with the sandbox, and the end's check sees none left
		}
		if fields[1] != "" {
			// A container of the warm pool is the sandbox its claim (on
			// the host) names, or else one of the pool list shows.
			data, err := os.ReadFile(filepath.Join(f.repo, ".git", "litterbox", "pool.d", id+".claim"))
			if err != nil {
				if !pool[name] {
					f.fatalf("pooled container %s exists unclaimed, list does not show it in the pool\n%s", name, r.stdout)
				}
				continue
			}
			var c struct{ Slug string }
			if json.Unmarshal(data, &c) != nil || c.Slug == "" {
				f.fatalf("pooled container %s: claim %q does not name a sandbox", name, data)
			}
			slug = c.Slug
		}
		cts[slug] = name
	}
	nets := map[string]string{}
	for _, line := range f.docker("network", "ls", "--filter", "label="+f.label, "--format", `{{.Label "dev.litterbox.slug"}} {{.Name}}`) {
		slug, name, _ := strings.Cut(line, " ")
		nets[slug] = name
	}
	branches := map[string]bool{}
	for _, b := range strings.Fields(f.git("for-each-ref", "--format=%(refname)", "refs/heads/litterbox/")) {
		branches[strings.TrimPrefix(b, "refs/heads/litterbox/")] = true
	}
	for slug, c := range cts {
		if rows[slug].Container != c {
			f.fatalf("container %s exists, list says %+v\n%s", c, rows[slug], r.stdout)
		}
	}
	for slug, n := range nets {
		if rows[slug].Network != n {
			f.fatalf("network %s exists, list says %+v\n%s", n, rows[slug], r.stdout)
		}
	}
	for slug := range branches {
		if _, ok := rows[slug]; !ok {
			f.fatalf("branch litterbox/%s exists, list does not show it\n%s", slug, r.stdout)
		}
	}
	for slug, row := range rows {
		if (row.Container != "") != (cts[slug] != "") || (row.Network != "") != (nets[slug] != "") {
			f.fatalf("list shows %+v; container %q, network %q exist", row, cts[slug], nets[slug])
		}
		switch row.Status {
		case "active", "paused", "failed-setup", "stopped":
			if !branches[slug] || row.Container == "" {
				f.fatalf("list shows %s as %s without its branch or container", slug, row.Status)
			}
			if usable != nil {
				usable(row)
			}
		case "orphan-container":
			if branches[slug] || row.Container == "" {
				f.fatalf("list shows %+v, branch exists: %v", row, branches[slug])
			}
		case "orphan-branch":
			if !branches[slug] || row.Container != "" {
				f.fatalf("list shows %+v, branch exists: %v", row, branches[slug])
			}
		case "orphan-network":
			if branches[slug] || row.Container != "" || row.Network == "" {
				f.fatalf("list shows %+v, branch exists: %v", row, branches[slug])
			}
		case "leftover":
			// A delete cut short after the container and the branch went.
			if branches[slug] || row.Container != "" {
				f.fatalf("list shows %+v, branch exists: %v", row, branches[slug])
			}
		case "incomplete":
		default:
			f.fatalf("list shows %+v: unexpected status after a fault", row)
		}
	}
	return rows
}

// complete checks that the container of row holds exactly commit's tree.
func (f *faulter) complete(row listRow, commit string) {
	inside := tarListing(f.ts, exec.Command(f.realDock, "exec", row.Container, "tar", "-c", "-C", "/src", "."), nil)
	arch := exec.Command(f.realGit, "archive", "--format=tar", commit)
	arch.Dir, arch.Env = f.repo, f.env()
	if d := diffListings(inside, tarListing(f.ts, arch, nil)); d != "" {
		f.fatalf("list shows %s as %s, but its /src is not a copy of %s:\n%s", row.Name, row.Status, commit, d)
	}
}

// userState is what must never change under the user: HEAD, the index and
// the files, tracked or not.
func (f *faulter) userState() string {
	var b strings.Builder
	b.WriteString(f.git("rev-parse", "HEAD") + "\n")
	b.WriteString(f.git("ls-files", "--stage") + "\n")
	b.WriteString(f.git("status", "--porcelain", "--untracked-files=all") + "\n")
	var files []string
	filepath.Walk(f.repo, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() && info.Name() == ".git" {
			return filepath.SkipDir
		}
		if !info.IsDir() {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(f.repo, p)
			files = append(files, fmt.Sprintf("%s %o %x", rel, info.Mode(), data))
		}
		return nil
	})
	sort.Strings(files)
	b.WriteString(strings.Join(files, "\n"))
	return b.String()
}

// nothingLeft checks that sandbox name left no container, network, branch or
// state.
func (f *faulter) nothingLeft(name string) {
	// A delete's gateway, volume and state go after it returned, in a
	// process of their own: nothing left is once it is done.
	var left string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if left = f.leftOf(name); left == "" || time.Now().After(deadline) {
			break
		}
	}
	if left != "" {
		f.fatalf("%s", left)
	}
}

// leftOf says what sandbox name left, "" for nothing.
func (f *faulter) leftOf(name string) string {
	if c := f.docker("ps", "-aq", "--filter", "label="+f.label, "--filter", "label=dev.litterbox.slug="+name); len(c) > 0 {
		return fmt.Sprintf("container of %s left: %v", name, c)
	}
	if n := f.docker("network", "ls", "-q", "--filter", "label="+f.label, "--filter", "label=dev.litterbox.slug="+name); len(n) > 0 {
		return fmt.Sprintf("network of %s left: %v", name, n)
	}
	// A gateway's volume (labelled with its sandbox) goes with it.
	if v := f.docker("volume", "ls", "-q", "--filter", "label="+f.label, "--filter", "label=dev.litterbox.slug="+name); len(v) > 0 {
		return fmt.Sprintf("volume of %s left: %v", name, v)
	}
	if b := f.git("for-each-ref", "refs/heads/litterbox/"+name); b != "" {
		return fmt.Sprintf("branch of %s left: %s", name, b)
	}
	if _, err := os.Stat(filepath.Join(f.repo, ".git", "litterbox", name)); err == nil {
		return fmt.Sprintf("state of %s left in .git/litterbox/%s", name, name)
	}
	return ""
}

// create makes sandbox name, unfaulted, and returns its container's name.
func (f *faulter) create(name string) string {
	var c struct{ Container string }
	if err := json.Unmarshal([]byte(f.must("create", "--json", name).stdout), &c); err != nil || c.Container == "" {
		f.fatalf("create --json %s: %v", name, err)
	}
	return c.Container
}

// roundCreate: create killed; then create again converges to one whole
// sandbox, and delete leaves nothing. pooled fills the warm pool first
// (unfaulted), so the create killed is one taking a pooled sandbox: list
// must then show that container as a pool member or as the sandbox it was
// becoming, and delete --pool must leave no pooled container.
func (f *faulter) roundCreate(p plan, pooled bool) int {
	name := fmt.Sprintf("c%d", f.seq)
	if pooled {
		name = fmt.Sprintf("p%d", f.seq)
		f.must("pool", "1")
	}
	user := f.userState()
	head := f.git("rev-parse", "HEAD")
	r, n := f.faulted(p, "create", name)
	rows := f.truth(func(row listRow) { f.complete(row, head) })
	again := f.lbRun("create", name)
	switch {
	case again.code == 0:
	case again.code == 4 && rows[name].Status == "active":
		// the faulted create had finished: it exists, whole
	default:
		f.fatalf("create %s again after the fault (first exit %d, list %+v): exit %d\n%s", name, r.code, rows[name], again.code, again.stderr)
	}
	rows = f.truth(func(row listRow) { f.complete(row, head) })
	if rows[name].Status != "active" {
		f.fatalf("after create again, list shows %+v", rows[name])
	}
	if got := f.git("rev-parse", "refs/heads/litterbox/"+name); got != head {
		f.fatalf("branch litterbox/%s at %s, want %s", name, got, head)
	}
	f.must("delete", name)
	f.nothingLeft(name)
	if pooled {
		f.must("delete", "--pool")
		if c := f.docker("ps", "-aq", "--filter", "label="+f.label, "--filter", "label=dev.litterbox.pool"); len(c) > 0 {
			f.fatalf("pooled containers left after delete --pool: %v", c)
		}
	}
	if f.userState() != user {
		f.fatalf("the user's checkout changed")
	}
	return n
}

// roundSnapshot: snapshot killed; the next snapshot records everything.
func (f *faulter) roundSnapshot(p plan) int {
	const name = "snap"
	if _, err := os.Stat(filepath.Join(f.repo, ".git", "litterbox", name, "ready")); err != nil {
		f.create(name)
	}
	container := f.truth(nil)[name].Container
	user := f.userState()
	i := f.seq
	script := fmt.Sprintf(`set -e; cd /src; echo r%d > r%d.txt; mkdir -p d%d/e; echo deep > d%d/e/f.txt; echo more >> f1.txt; rm -f f%d.txt r%d.txt; chmod +x f2.txt`, i, i, i, i, 10+i, i-2)
	f.docker("exec", "--user", "1000:1000", container, "sh", "-c", script)
	before := f.git("rev-parse", "refs/heads/litterbox/"+name)
	_, n := f.faulted(p, "snapshot", name, "-m", fmt.Sprintf("round %d", i))
	rows := f.truth(nil)
	if rows[name].Status != "active" {
		f.fatalf("after a killed snapshot, list shows %+v", rows[name])
	}
	f.must("snapshot", name, "-m", fmt.Sprintf("round %d again", i))
	inside := tarListing(f.ts, exec.Command(f.realDock, "exec", container, "tar", "-c", "-C", "/src", "."), nil)
	arch := exec.Command(f.realGit, "archive", "--format=tar", "litterbox/"+name)
	arch.Dir, arch.Env = f.repo, f.env()
	if d := diffListings(inside, tarListing(f.ts, arch, nil)); d != "" {
		f.fatalf("after the next snapshot, the branch differs from /src:\n%s", d)
	}
	if !f.isAncestor(before, "refs/heads/litterbox/"+name) {
		f.fatalf("the branch lost its earlier snapshots: %s is no longer in its history", before)
	}
	if f.userState() != user {
		f.fatalf("the user's checkout changed")
	}
	return n
}

// roundDelete: delete killed; delete again removes everything (or finds
// nothing left, when the first had finished).
func (f *faulter) roundDelete(p plan) int {
	name := fmt.Sprintf("d%d", f.seq)
	container := f.create(name)
	args := []string{"delete", name}
	if f.seq%2 == 0 {
		// with work on the branch: only --force deletes it
		f.docker("exec", "--user", "1000:1000", container, "sh", "-c", "echo work > /src/work.txt")
		f.must("snapshot", name, "-m", "work")
		args = []string{"delete", "--force", name}
	}
	user := f.userState()
	_, n := f.faulted(p, args...)
	rows := f.truth(nil)
	_, listed := rows[name]
	again := f.lbRun(args...)
	switch {
	case again.code == 0:
	case again.code == 3 && !listed:
	default:
		f.fatalf("%s again after the fault (list %+v): exit %d\n%s", strings.Join(args, " "), rows[name], again.code, again.stderr)
	}
	f.nothingLeft(name)
	f.truth(nil)
	if f.userState() != user {
		f.fatalf("the user's checkout changed")
	}
	return n
}

// roundMerge: merge (or apply) killed; list rolls back or completes, and
// merge (apply) again converges, the user's unrelated changes kept.
func (f *faulter) roundMerge(op string, p plan) int {
	name := fmt.Sprintf("m%d", f.seq)
	container := f.create(name)
	i := f.seq
	script := fmt.Sprintf(`set -e; cd /src; echo sandbox%d >> f3.txt; rm f%d.txt; mkdir -p n%d/deep; echo new > n%d/deep/x.txt; for k in 1 2 3 4 5 6 7 8 9; do echo $k >> d1/g$k.txt; done`, i, 20+i, i, i)
	f.docker("exec", "--user", "1000:1000", container, "sh", "-c", script)
	f.must("snapshot", name, "-m", "work")
	tip := f.git("rev-parse", "refs/heads/litterbox/"+name)
	trueMerge := op == "merge-true"
	if trueMerge {
		// main moves on: a true merge, with a merge commit
		op = "merge"
		f.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("user %d", i))
	}
	// unrelated local changes, which must survive
	f.ts.Check(os.WriteFile(filepath.Join(f.repo, "f4.txt"), []byte(fmt.Sprintf("local %d\n", i)), 0o644))
	f.ts.Check(os.WriteFile(filepath.Join(f.repo, "untracked.txt"), []byte(fmt.Sprintf("untracked %d\n", i)), 0o644))
	before := f.userState()
	head := f.git("rev-parse", "HEAD")

	_, n := f.faulted(p, op, name)
	rows := f.truth(nil) // list also rolls back or completes what the fault cut short
	_, listed := rows[name]
	now := f.git("rev-parse", "HEAD")
	status := f.git("status", "--porcelain", "--untracked-files=all")
	if op == "merge" && now != head {
		// done: HEAD holds the branch, the checkout is clean but for the
		// local changes
		if !f.isAncestor(tip, "HEAD") || status != "M f4.txt\n?? untracked.txt" {
			f.fatalf("after the fault and list, HEAD moved to %s but the checkout is not merged:\n%s", now, status)
		}
		if d := f.git("diff", "HEAD", tip, "--stat", "--", ".", ":!f4.txt"); d != "" {
			f.fatalf("after the fault and list, HEAD moved to %s but its tree is not the branch's:\n%s", now, d)
		}
	} else if op == "merge" && f.userState() != before {
		f.fatalf("after the fault and list, HEAD did not move but the checkout changed:\n%s", status)
	}
	again := f.lbRun(op, name)
	if again.code != 0 && !(op == "merge" && again.code == 3 && !listed && f.isAncestor(tip, "HEAD")) {
		f.fatalf("%s %s again after the fault: exit %d\n%s%s", op, name, again.code, again.stdout, again.stderr)
	}
	if op == "merge" {
		if !f.isAncestor(tip, "HEAD") {
			f.fatalf("after merge again, HEAD does not contain the branch")
		}
		if s := f.git("status", "--porcelain", "--untracked-files=all"); s != "M f4.txt\n?? untracked.txt" {
			f.fatalf("after merge again, the checkout is not clean but for the local changes:\n%s", s)
		}
		// The user's own commit is empty, so a true merge's tree is the
		// branch's too.
		if d := f.git("diff", "HEAD", tip, "--stat", "--", ".", ":!f4.txt"); d != "" {
			f.fatalf("after merge again, HEAD's tree differs from the branch's:\n%s", d)
		}
		f.nothingLeft(name)
	} else {
		// the working tree holds the branch's changes, the index and HEAD
		// are untouched
		if f.git("rev-parse", "HEAD") != head || f.git("diff", "--cached", "--name-only") != "" {
			f.fatalf("after apply again, HEAD or the index changed")
		}
		if d := f.git("diff", "--stat", tip, f.worktreeTree(), "--", ".", ":!f4.txt", ":!untracked.txt"); d != "" {
			f.fatalf("after apply again, the working tree differs from the branch:\n%s", d)
		}
		f.git("checkout", "-q", "HEAD", "--", ".")
		f.git("clean", "-fdq", "-e", "untracked.txt")
		f.ts.Check(os.WriteFile(filepath.Join(f.repo, "f4.txt"), []byte(fmt.Sprintf("local %d\n", i)), 0o644))
		if f.userState() != before {
			f.fatalf("after undoing the apply, the checkout is not as before")
		}
		f.must("delete", "--force", name)
	}
	for _, r := range []string{"f4.txt", "untracked.txt"} {
		data, _ := os.ReadFile(filepath.Join(f.repo, r))
		if !strings.Contains(string(data), fmt.Sprint(i)) {
			f.fatalf("the local change to %s was lost: %q", r, data)
		}
	}
	f.git("checkout", "-q", "--", "f4.txt")
	return n
}
