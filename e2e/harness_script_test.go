package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/enginetest/standin"
)

// The harness_*.txtar scripts run the agent harnesses people use (Claude
// Code, Codex, Gemini CLI, opencode), their released packages, against
// `litterbox mcp`, with the model replaced by a stand-in that scripts the
// tool calls and records what the harness hands the model as each result.
// A harness may show the model something other than what the server sent
// (Claude Code and Codex show structuredContent alone when there is one), and
// only the harness itself can tell.

// harnesses are the harnesses scripts/ensure-harnesses.sh caches.
var harnesses = []string{"claude", "codex", "gemini", "opencode"}

// harnessExes maps each cached harness to its executable, as
// `ensure-harnesses.sh env` prints them; the script, not this file, knows
// the pinned versions.
var harnessExes = sync.OnceValues(func() (map[string]string, error) {
	out, err := exec.Command("bash", filepath.Join(moduleRoot, "scripts/ensure-harnesses.sh"), "env").Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/ensure-harnesses.sh env: %w", err)
	}
	exes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, exe, ok := strings.Cut(line, "="); ok {
			exes[name] = exe
		}
	}
	return exes, nil
})

// standins are the scripts' running stand-ins.
var standins sync.Map // *testscript.TestScript -> *standinRun

type standinRun struct {
	turns  []standin.Turn
	record string
}

func cmdStandin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: standin HARNESS TURNS")
	}
	startStandin(ts, args[0], args[1], standin.Start)
}

// startStandin starts the script's stand-in with start, serving the turns
// of the file turnsFile, and sets $STANDIN_URL and $HARNESS (the cached
// executable of name).
func startStandin(ts *testscript.TestScript, name, turnsFile string, start func([]standin.Turn, string) (*standin.Server, error)) {
	exes, err := harnessExes()
	ts.Check(err)
	exe, ok := exes[name]
	if !ok {
		ts.Fatalf("harness %s is not cached: run scripts/ensure-harnesses.sh", name)
	}
	turns, err := standin.ParseTurns(ts.ReadFile(turnsFile))
	ts.Check(err)
	run := &standinRun{turns: turns, record: filepath.Join(ts.Getenv("WORK"), "standin.jsonl")}
	s, err := start(turns, run.record)
	ts.Check(err)
	if _, loaded := standins.LoadOrStore(ts, run); loaded {
		s.Close()
		ts.Fatalf("standin: one a script")
	}
	ts.Defer(func() { s.Close(); standins.Delete(ts) })
	ts.Setenv("STANDIN_URL", s.URL)
	ts.Setenv("HARNESS", exe)
}

func cmdModelSaw(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: modelsaw [LABEL]")
	}
	v, ok := standins.Load(ts)
	if !ok {
		ts.Fatalf("modelsaw: no standin started")
	}
	run := v.(*standinRun)
	results, err := standin.Results(run.record, run.turns)
	ts.Check(err)
	if len(args) == 1 {
		for _, r := range results {
			if r.Label == args[0] {
				fmt.Fprintln(ts.Stdout(), r.Output)
				return
			}
		}
		ts.Fatalf("the model was given no result for call %s", args[0])
	}
	for _, r := range results {
		tool := r.Tool
		if r.Namespace != "" {
			tool = r.Namespace + "." + tool
		}
		fmt.Fprintf(ts.Stdout(), "%-9s %-32s %s\n", r.Label, tool, oneLine(r.Output, 150))
	}
	refused, err := standin.Refused(run.record)
	ts.Check(err)
	for _, r := range refused {
		fmt.Fprintf(ts.Stdout(), "refused   %s\n", r)
	}
	if len(results) < len(run.turns) {
		ts.Fatalf("the model was given results for %d of %d calls; the first without: %s", len(results), len(run.turns), run.turns[len(results)].Label)
	}
}

// oneLine is s on one line (newlines shown as ⏎), cut to n runes, followed
// by litterbox's notes ([litterbox: ...]) the cut left out, so a report line
// shows whether a cut result's note came through.
func oneLine(s string, n int) string {
	r := []rune(strings.ReplaceAll(strings.TrimSpace(s), "\n", "⏎"))
	if len(r) <= n {
		return string(r)
	}
	line := string(r[:n]) + "…"
	for _, note := range litterboxNote.FindAllString(string(r[n:]), -1) {
		line += " " + note
	}
	return line
}

var litterboxNote = regexp.MustCompile(`\[litterbox: [^\]]*\]`)

func cmdReadmeSnippet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: readme-snippet HARNESS FILE")
	}
	readme, err := os.ReadFile(filepath.Join(moduleRoot, snippetDoc))
	ts.Check(err)
	for _, m := range harnessSnippet.FindAllStringSubmatch(string(readme), -1) {
		if m[1] == args[0] {
			file := ts.MkAbs(args[1])
			ts.Check(os.MkdirAll(filepath.Dir(file), 0o755))
			ts.Check(os.WriteFile(file, []byte(m[4]+"\n"), 0o644))
			return
		}
	}
	ts.Fatalf("%s has no snippet marked <!-- harness: %s; ... -->", snippetDoc, args[0])
}

// condHarness is the script condition harness:NAME for one harness
// (scriptcmds_test.go).
func condHarness(name string) scriptCond {
	return func() (bool, error) {
		exes, err := harnessExes()
		if err != nil {
			return false, err
		}
		_, ok := exes[name]
		return neededInCI(ok, "CI=true but harness %s is not cached: run scripts/ensure-harnesses.sh first", name)
	}
}
