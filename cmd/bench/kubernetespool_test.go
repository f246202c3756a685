package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// The confined pool group's rows say so, and the open group's keep their
// names (earlier runs' figures are read by them).
func TestPoolCases(t *testing.T) {
	if got := poolCases(false); !slices.Equal(got, kubernetesPoolCases) {
		t.Errorf("open rows %q, want %q", got, kubernetesPoolCases)
	}
	want := []string{
		"create from a warm pool, kubernetes, confined (30 at 1/s, mcp --pool 16)",
		"10 creates at once from a pool of 10, kubernetes, confined",
	}
	if got := poolCases(true); !slices.Equal(got, want) {
		t.Errorf("confined rows %q, want %q", got, want)
	}
}

// The local config setEgress writes is one litterbox reads as meant: open,
// or confined with the addresses allowed.
func TestSetEgress(t *testing.T) {
	kr := &kubeRun{dir: t.TempDir()}
	for _, c := range []struct {
		open  bool
		allow []string
		want  string
	}{{true, nil, "open"}, {false, nil, "allowlist"}, {false, []string{"198.18.7.10", "x.test"}, "allowlist"}} {
		if err := kr.setEgress(c.open, c.allow...); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(kr.dir, ".litterbox.local.toml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(nil, data)
		if err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		if got := cfg.EgressMode(); got != c.want {
			t.Errorf("setEgress(%v, %q): egress %q, want %q", c.open, c.allow, got, c.want)
		}
		if !slices.Equal(cfg.Egress.Allow, c.allow) {
			t.Errorf("setEgress(%v, %q): allow %q", c.open, c.allow, cfg.Egress.Allow)
		}
	}
}
