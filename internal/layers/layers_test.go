package layers

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package below is relative to.
const module = "github.com/litterbox-dev/litterbox"

// tiers are the module's packages from the bottom up, in the manner of Go's
// go/build/deps_test.go: the tiers are separated by "<", the packages of a
// tier by commas or line ends, "#" starts a comment and "." is the module's
// own main package. A package may import packages of the tiers below its
// own, never one of its own tier (siblings stay apart) or of one above. A new
// package gets a name in the lowest tier above everything it imports; a
// package that must import a sibling moves up a tier.
const tiers = `
# leaves: no package of the module
internal/buildinfo, internal/flock, internal/atomicfile, internal/fsname, internal/termtext,
internal/textcap, internal/staticbin, internal/tomlkeys, internal/egresstest, internal/dotenv,
internal/enginetest, internal/enginetest/standin, sandbox/config/devcontainer, internal/kvm,
runner, activity/otlp/otlptest, gateway/policy, scanner/wire

# over the leaves: git and the engine seam, the activity record, the
# programs' libraries and their embedded builds, the harnesses' settings files
< git, provider, activity, scanner, gateway/control, runner/runnertest,
  internal/staticbin/bintest, internal/scanbin, internal/gatewaybin, internal/harnessconf

# the engines, the declarations of secrets, the gateway (over its
# protocol packages)
< provider/docker, provider/kubernetes, provider/fake, provider/contract,
  internal/secretdecl, gateway

# the VM engine (over Docker), the configuration, the gateway's host side
< provider/vm, sandbox/config, egress, secrets

# the sandbox service's vocabulary, which its concerns and front ends
# share; the activity's export (events and the gateway's records as
# OpenTelemetry log records)
< sandbox/api, activity/otlp

# what the service's concerns share, and the harnesses
< sandbox/internal/core, harness

# the service's concerns (docs/architecture.md), each tier over those below
< sandbox/internal/state, sandbox/internal/spec
< sandbox/internal/guest, sandbox/internal/netgate
< sandbox/internal/isolation, sandbox/internal/services, sandbox/internal/cache
< sandbox/internal/pool, sandbox/internal/doctor, sandbox/internal/sandboxtest
< sandbox/internal/inventory
< sandbox/internal/recording, sandbox/internal/review
< sandbox/internal/files, sandbox/internal/pause, sandbox/internal/provision
< sandbox/internal/oplog
< sandbox/internal/harnessrun

# the façade, the front ends over it, the command line over those
< sandbox
< mcp, ui
< commands
< internal/cli

# the programs, and the tests of the whole
< ., cmd/bench, cmd/demo, scanner/cmd/litterbox-scan, gateway/cmd/litterbox-gateway,
  internal/scanbin/gen, e2e, internal/layers, scripts
`

// parseTiers reads rules (see tiers) into each package's tier, counted from
// 0 at the bottom, by full import path.
func parseTiers(rules string) (map[string]int, error) {
	tier := map[string]int{}
	for i, t := range strings.Split(stripComments(rules), "<") {
		for _, p := range strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == '\n' }) {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			path := module + "/" + p
			if p == "." {
				path = module
			}
			if _, dup := tier[path]; dup {
				return nil, fmt.Errorf("%s is in two tiers", p)
			}
			tier[path] = i
		}
	}
	return tier, nil
}

func stripComments(rules string) string {
	lines := strings.Split(rules, "\n")
	for i, l := range lines {
		lines[i], _, _ = strings.Cut(l, "#")
	}
	return strings.Join(lines, "\n")
}

// check returns what breaks the tiers in imports (a package's path to the
// paths it imports): an import of a sibling or of a tier above, a package in
// no tier.
func check(tier map[string]int, imports map[string][]string) []string {
	var errs []string
	for _, p := range slices.Sorted(maps.Keys(imports)) {
		t, ok := tier[p]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s is in no tier: add it to tiers", short(p)))
			continue
		}
		for _, imp := range imports[p] {
			it, mine := tier[imp]
			switch {
			case !mine:
				// the standard library or another module
			case it == t:
				errs = append(errs, fmt.Sprintf("%s imports %s, a sibling of its own tier", short(p), short(imp)))
			case it > t:
				errs = append(errs, fmt.Sprintf("%s imports %s, a package %d tier(s) above its own", short(p), short(imp), it-t))
			}
		}
	}
	return errs
}

// TestLayers fails when a package of the module imports a package of its
// own tier or of one above, or is in no tier.
func TestLayers(t *testing.T) {
	tier, err := parseTiers(tiers)
	if err != nil {
		t.Fatal(err)
	}
	imports := imports(t)
	for _, e := range check(tier, imports) {
		t.Error(e)
	}
}

// TestLayersCatch shows what the check reports: an upward import, a sibling
// import, a package in no tier, a package named twice.
func TestLayersCatch(t *testing.T) {
	tier, err := parseTiers(`
		a, b   # the bottom
		< c
		< d`)
	if err != nil {
		t.Fatal(err)
	}
	m := func(p string) string { return module + "/" + p }
	got := check(tier, map[string][]string{
		m("a"): {m("c")},         // up one tier
		m("b"): {m("a"), "fmt"},  // a sibling; fmt is not the module's
		m("c"): {m("a"), m("b")}, // fine
		m("d"): {m("a"), m("c")}, // fine: any tier below
		m("e"): nil,              // in no tier
	})
	want := []string{
		"a imports c, a package 1 tier(s) above its own",
		"b imports a, a sibling of its own tier",
		"e is in no tier: add it to tiers",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check = %q, want %q", got, want)
	}
	if _, err := parseTiers("a < b, a"); err == nil || err.Error() != "a is in two tiers" {
		t.Errorf("a package in two tiers: err = %v", err)
	}
}

func short(p string) string {
	if p == module {
		return "litterbox (main)"
	}
	return strings.TrimPrefix(p, module+"/")
}

// imports are the module's packages, each with the packages its non-test
// files import, as go list says.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			return imports
		} else if err != nil {
			t.Fatal(err)
		}
		imports[p.ImportPath] = p.Imports
	}
}

// under says package p (a full import path) is the module's dir or a
// package below it.
func under(p, dir string) bool {
	return p == module+"/"+dir || strings.HasPrefix(p, module+"/"+dir+"/")
}

// TestEngineSeam fails when the sandbox service or the host's side of the
// egress gateway imports a concrete engine: they reach an engine through
// package provider's interfaces only (the gateway's through
// provider.Gateways), so that a new engine is one implementation, not an
// edit of every concern.
func TestEngineSeam(t *testing.T) {
	engines := []string{"provider/docker", "provider/vm", "provider/kubernetes"}
	all := imports(t)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		if !under(p, "sandbox") && !under(p, "egress") {
			continue
		}
		for _, imp := range all[p] {
			for _, e := range engines {
				if under(imp, e) {
					t.Errorf("%s imports %s: a concrete engine; go through package provider's interfaces", short(p), short(imp))
				}
			}
		}
	}
}

// programs are the two programs litterbox runs in containers, and the
// packages under each that the host may import: their protocol. The host
// speaks to a program through those, and links none of its code.
var programs = map[string][]string{
	"gateway": {"gateway/policy", "gateway/control"},
	"scanner": {"scanner/wire"},
}

// TestProgramsApart fails when a package outside a program's directory
// imports the program itself rather than its protocol packages.
func TestProgramsApart(t *testing.T) {
	all := imports(t)
	for _, p := range slices.Sorted(maps.Keys(all)) {
		for _, imp := range all[p] {
			for prog, protocols := range programs {
				if !under(imp, prog) || under(p, prog) || slices.ContainsFunc(protocols, func(pr string) bool { return under(imp, pr) }) {
					continue
				}
				t.Errorf("%s imports %s: the host speaks to the %s through its protocol packages (%s), not its program", short(p), short(imp), prog, strings.Join(protocols, ", "))
			}
		}
	}
}
