package e2e

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/cli"
)

// moduleRoot is the module's folder, which the paths the tests name
// (testdata/script, docs/, scripts/) are relative to; the tests run in e2e/.
const moduleRoot = ".."

// TestMain lets scripts run `exec litterbox ...` as the real binary, in its
// own process.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"litterbox": func() { os.Exit(cli.Main()) },
		"lbfault":   faultMain, // see fault_script_test.go
	})
}

// scriptCmd is a custom command of the scripts, scriptCond a custom
// condition; unknown conditions fail the script.
type (
	scriptCmd  = func(ts *testscript.TestScript, neg bool, args []string)
	scriptCond = func() (bool, error)
)

// scriptCommand and scriptCondition are entries of scriptCmds and
// scriptConds (scriptcmds_test.go).
type (
	scriptCommand struct {
		name string
		run  scriptCmd
	}
	scriptCondition struct {
		name  string
		check scriptCond
	}
)

// scriptSet is scriptCmds and scriptConds by name.
type scriptSet struct {
	cmds  map[string]scriptCmd
	conds map[string]scriptCond
}

// scriptExtensions are the scripts' commands and conditions by name, or an
// error naming those listed twice: two entries (or branches) that each
// bring a command of one name must not silently replace one another.
func scriptExtensions() (*scriptSet, error) {
	s := &scriptSet{cmds: map[string]scriptCmd{}, conds: map[string]scriptCond{}}
	var dups []string
	for _, c := range scriptCmds {
		if _, ok := s.cmds[c.name]; ok {
			dups = append(dups, "command "+c.name)
		}
		s.cmds[c.name] = c.run
	}
	for _, c := range append(scriptConds, harnessConds()...) {
		if _, ok := s.conds[c.name]; ok {
			dups = append(dups, "condition "+c.name)
		}
		s.conds[c.name] = c.check
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("script commands or conditions defined twice: %s", strings.Join(dups, ", "))
	}
	return s, nil
}

// TestScriptNamesUnique fails when two files add a command or condition of
// the same name (the scripts' own tests would fail too, but need an engine).
func TestScriptNamesUnique(t *testing.T) {
	if _, err := scriptExtensions(); err != nil {
		t.Fatal(err)
	}
}

// neededInCI is a condition's answer: ok, or else false, or in CI (CI=true),
// where what the condition checks must be there, an error saying so.
func neededInCI(ok bool, format string, args ...any) (bool, error) {
	if ok {
		return true, nil
	}
	if os.Getenv("CI") == "true" {
		return false, fmt.Errorf(format, args...)
	}
	return false, nil
}

// scriptRegexp compiles a script command's REGEXP argument; one that does
// not compile fails the script, naming it, instead of panicking.
func scriptRegexp(ts *testscript.TestScript, expr string) *regexp.Regexp {
	re, err := regexp.Compile(expr)
	if err != nil {
		ts.Fatalf("bad regexp %q: %v", expr, err)
	}
	return re
}

var dockerState atomic.Int32 // 0 unknown, 1 up, 2 down

func dockerUp() bool {
	switch dockerState.Load() {
	case 1:
		return true
	case 2:
		return false
	}
	up := exec.Command("docker", "info").Run() == nil
	if up {
		dockerState.Store(1)
	} else {
		dockerState.Store(2)
	}
	return up
}

var scriptSeq atomic.Int64

// TestScripts runs testdata/script/*.txtar end to end against real docker and
// git, in parallel. Each script gets its own HOME, git identity and resource
// label, and whatever it leaves labelled is removed when it ends.
//
// Scripts named allrepos_*.txtar act on every sandbox of the machine (pause
// --all-repos), so they would disturb the others, and those named
// alone_*.txtar must not be disturbed by them (the others make networks,
// which on Docker 20.10 briefly lifts isolation between bridges):
// TestScriptsAllRepos runs both after these have finished.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, func(name string) bool { return !runsAfter(name) && !kubernetesScript(name) && !vmScript(name) }))
}

// TestScriptsAllRepos runs the allrepos_*.txtar and alone_*.txtar scripts
// once every other script has finished (top-level tests run one after
// another).
func TestScriptsAllRepos(t *testing.T) {
	testscript.Run(t, scriptParams(t, runsAfter))
}

func runsAfter(name string) bool {
	return strings.HasPrefix(name, "allrepos_") || strings.HasPrefix(name, "alone_")
}

func scriptParams(t *testing.T, keep func(name string) bool, env ...string) testscript.Params {
	all, err := filepath.Glob(filepath.Join(moduleRoot, "testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{}
	for _, f := range all {
		if keep(filepath.Base(f)) {
			files = append(files, f)
		}
	}
	ext, err := scriptExtensions()
	if err != nil {
		t.Fatal(err)
	}
	return testscript.Params{
		Files:               files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds:                ext.cmds,
		Setup: func(e *testscript.Env) error {
			if err := setupScript(e); err != nil {
				return err
			}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				e.Setenv(k, v)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if f, ok := ext.conds[cond]; ok {
				return f()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	}
}

// TestScriptsWithoutJournal runs the snapshot scripts once more with the
// change journal off (LITTERBOX_JOURNAL=off), so the fidelity of the full
// walk, which every scan falls back to, is proved as well as the
// journal's (TestScripts runs them with it on).
func TestScriptsWithoutJournal(t *testing.T) {
	testscript.Run(t, scriptParams(t, func(name string) bool {
		return strings.HasPrefix(name, "snapshot_") && !strings.HasPrefix(name, "snapshot_journal")
	}, "LITTERBOX_JOURNAL=off"))
}

// podmanScripts are the journeys that run once more against Podman's
// service: create, an MCP session, log and diff, merge, delete, the
// change journal, and hard links.
var podmanScripts = []string{"lifecycle_basic.txtar", "mcp_roundtrip.txtar", "review_log_diff.txtar", "review_merge.txtar", "snapshot_journal.txtar", "snapshot_links.txtar"}

// TestScriptsPodman runs podmanScripts with --engine podman (through
// LITTERBOX_ENGINE) against the service scripts/ensure-podman.sh starts.
// DOCKER_HOST points at it too, so what a script runs with docker itself
// reaches the same engine. With CI=true a Podman that does not answer fails
// the test.
func TestScriptsPodman(t *testing.T) {
	host := cmp.Or(os.Getenv("CONTAINER_HOST"), "unix:///run/litterbox-podman/podman.sock")
	if out, err := exec.Command("docker", "--host", host, "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but Podman does not answer at %s (%v: %s): run scripts/ensure-podman.sh first", host, err, out)
		}
		t.Skipf("Podman does not answer at %s; scripts/ensure-podman.sh starts it", host)
	}
	testscript.Run(t, scriptParams(t, func(name string) bool { return slices.Contains(podmanScripts, name) },
		"LITTERBOX_ENGINE=podman", "CONTAINER_HOST="+host, "DOCKER_HOST="+host))
}

func setupScript(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	gitconfig := "[user]\n\tname = Litterbox Test\n\temail = test@litterbox.dev\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	scriptTests.Store(env.WorkDir, env.T())
	env.Defer(func() { scriptTests.Delete(env.WorkDir) })
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	id := fmt.Sprintf("%d-%d", os.Getpid(), scriptSeq.Add(1))
	label := "dev.litterbox.test=" + id
	env.Setenv("LITTERBOX_LABELS", label)
	env.Setenv("TESTID", id)
	// The isolation check's verdicts are keyed by engine and kept across
	// runs, as a user's are: each engine is probed once per start, not once
	// per script.
	env.Setenv("LITTERBOX_CACHE_DIR", filepath.Join(os.TempDir(), "litterbox-test-cache"))
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "CI", "LITTERBOX_CACHE", "LITTERBOX_HARNESS_CACHE"} {
		if v, ok := os.LookupEnv(k); ok {
			env.Setenv(k, v)
		}
	}
	// The engine is the script's, known only once Setup is done; scripts
	// that use the ssh or open engine set DOCKER_HOST themselves, so those
	// are cleaned through their sockets.
	env.Defer(func() { removeLabelled(env.Getenv("DOCKER_HOST"), label); removeLabelledRemote(label) })
	return nil
}

// removeLabelled removes the containers and networks carrying label from
// the engine at host ("" for the docker CLI's own).
func removeLabelled(host, label string) {
	if dockerState.Load() != 1 && host == "" {
		return
	}
	docker := func(args ...string) *exec.Cmd {
		if host != "" {
			args = append([]string{"--host", host}, args...)
		}
		return exec.Command("docker", args...)
	}
	out, _ := docker("ps", "-aq", "--filter", "label="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = docker(append([]string{"rm", "-f", "-v"}, ids...)...).Run()
	}
	out, _ = docker("network", "ls", "-q", "--filter", "label="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = docker(append([]string{"network", "rm"}, ids...)...).Run()
	}
	// The shared caches' volumes outlive their sandboxes.
	out, _ = docker("volume", "ls", "-q", "--filter", "label="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = docker(append([]string{"volume", "rm", "-f"}, ids...)...).Run()
	}
}

// condDocker is the script condition docker (scriptcmds_test.go).
func condDocker() (bool, error) {
	return neededInCI(dockerUp(), "CI=true but no Docker engine answers: run scripts/ensure-docker.sh and scripts/ensure-busybox.sh first")
}

// condNode is the script condition node (scriptcmds_test.go).
func condNode() (bool, error) {
	_, errNode := exec.LookPath("node")
	_, errNpm := exec.LookPath("npm")
	return neededInCI(errNode == nil && errNpm == nil, "CI=true but node or npm is missing: install Node.js (the TypeScript SDK test needs it)")
}
