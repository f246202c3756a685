package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/testutil"
)

// TestMain lets scripts run `exec litterbox ...` as the real binary, in its
// own process.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"litterbox": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// scriptCmds are the custom commands scripts may use. Files named
// *_script_test.go add theirs in init, each with a usage comment.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}

// scriptConds are the custom conditions; unknown ones fail the script.
var scriptConds = map[string]func() (bool, error){
	// docker: an engine answers. In CI (CI=true) a missing engine fails the
	// script instead of skipping it: the Docker tests must run there.
	"docker": func() (bool, error) {
		if dockerUp() {
			return true, nil
		}
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("CI=true but no Docker engine answers: run scripts/ensure-docker.sh and scripts/ensure-busybox.sh first")
		}
		return false, nil
	},
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
// --all-repos), so they would disturb the others: TestScriptsAllRepos runs
// them after these have finished.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, func(name string) bool { return !strings.HasPrefix(name, "allrepos_") }))
}

// TestScriptsAllRepos runs the allrepos_*.txtar scripts once every other
// script has finished (top-level tests run one after another).
func TestScriptsAllRepos(t *testing.T) {
	testscript.Run(t, scriptParams(t, func(name string) bool { return strings.HasPrefix(name, "allrepos_") }))
}

func scriptParams(t *testing.T, keep func(name string) bool) testscript.Params {
	all, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{}
	for _, f := range all {
		if keep(filepath.Base(f)) {
			files = append(files, f)
		}
	}
	scanner := testutil.StaticLitterbox(t, ".")
	return testscript.Params{
		Files:               files,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Cmds:                scriptCmds,
		Setup: func(env *testscript.Env) error {
			env.Setenv("LITTERBOX_SCANNER", scanner)
			return setupScript(env)
		},
		Condition: func(cond string) (bool, error) {
			if f, ok := scriptConds[cond]; ok {
				return f()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	}
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
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	id := fmt.Sprintf("%d-%d", os.Getpid(), scriptSeq.Add(1))
	label := "dev.litterbox.test=" + id
	env.Setenv("LITTERBOX_LABELS", label)
	env.Setenv("TESTID", id)
	for _, k := range []string{"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "CI"} {
		if v, ok := os.LookupEnv(k); ok {
			env.Setenv(k, v)
		}
	}
	env.Defer(func() { removeLabelled(label) })
	return nil
}

// removeLabelled removes the containers and networks carrying label.
func removeLabelled(label string) {
	if dockerState.Load() != 1 {
		return
	}
	out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"rm", "-f", "-v"}, ids...)...).Run()
	}
	out, _ = exec.Command("docker", "network", "ls", "-q", "--filter", "label="+label).Output()
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_ = exec.Command("docker", append([]string{"network", "rm"}, ids...)...).Run()
	}
}
