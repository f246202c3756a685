package layers

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// module is the import path every package below is relative to.
const module = "github.com/litterbox-dev/litterbox"

// layers are the module's packages from the bottom up: a package may
// import packages of the layers below its own, never of its own or one
// above. Each concern of the sandbox service is a layer of its own, so the
// order says which may use which; a new package gets a line here.
var layers = [][]string{
	// leaves: no package of the module, or only runner's command value
	{"internal/buildinfo", "internal/flock", "internal/termtext", "internal/textcap", "internal/staticbin", "internal/egresstest", "internal/tomlkeys", "internal/fsname", "internal/atomicfile"},
	{"runner", "scanner", "gateway", "activity", "internal/staticbin/bintest", "internal/harnessconf"},
	{"git", "provider", "runner/runnertest", "internal/scanbin", "internal/gatewaybin", "internal/secretdecl"},
	{"provider/docker", "provider/kubernetes", "provider/fake", "provider/contract", "sandbox/config"},
	{"provider/vm", "egress", "internal/testutil", "internal/testutil/standin"},
	{"secrets"},
	{"harness"},
	// the sandbox service, concern by concern (docs/architecture.md)
	{"sandbox/internal/core"},
	{"sandbox/internal/state"},
	{"sandbox/internal/spec"},
	{"sandbox/internal/netgate"},
	{"sandbox/internal/guest"},
	{"sandbox/internal/services"},
	{"sandbox/internal/sandboxtest"},
	{"sandbox/internal/isolation"},
	{"sandbox/internal/pool"},
	{"sandbox/internal/inventory"},
	{"sandbox/internal/recording"},
	{"sandbox/internal/files"},
	{"sandbox/internal/provision"},
	{"sandbox/internal/pause"},
	{"sandbox/internal/review"},
	{"sandbox/internal/doctor"},
	{"sandbox"},
	// the front ends, and the programs
	{"mcp", "ui"},
	{"commands"},
	{"", "bench", "demo", "scanner/cmd/litterbox-scan", "gateway/cmd/litterbox-gateway", "internal/scanbin/gen", "internal/layers", "scripts"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// TestLayers fails when a package imports a package of its own layer or of
// one above, or is in no layer.
func TestLayers(t *testing.T) {
	rank := map[string]int{}
	for i, layer := range layers {
		for _, p := range layer {
			if p != "" {
				p = "/" + p
			}
			if _, dup := rank[module+p]; dup {
				t.Fatalf("%s is in two layers", module+p)
			}
			rank[module+p] = i
		}
	}
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		r, ok := rank[p.ImportPath]
		if !ok {
			t.Errorf("%s has no layer: add it to layers", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			ir, mine := rank[imp]
			if !mine {
				continue // the standard library or another module
			}
			if ir >= r {
				t.Errorf("%s imports %s, %s", short(p.ImportPath), short(imp), relation(ir, r))
			}
		}
	}
}

func relation(imported, importer int) string {
	if imported == importer {
		return "a package of its own layer"
	}
	return fmt.Sprintf("a package %d layer(s) above its own", imported-importer)
}

func short(p string) string {
	if p == module {
		return "litterbox (main)"
	}
	return strings.TrimPrefix(p, module+"/")
}
