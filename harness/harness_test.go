package harness

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/secrets"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestLookup(t *testing.T) {
	if h, err := Lookup("codex"); err != nil || h.KeyEnv != "OPENAI_API_KEY" {
		t.Fatalf("Lookup(codex) = %+v, %v", h, err)
	}
	_, err := Lookup("aider")
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "claude, codex, gemini, opencode") || !strings.Contains(err.Error(), "--cmd") {
		t.Errorf("Lookup(aider) = %v", err)
	}
}

// TestBuild: the newest build with an executable is taken; none is an
// error naming the script that fills the cache.
func TestBuild(t *testing.T) {
	cache := t.TempDir()
	h, _ := Lookup("claude")
	if _, err := h.Build(cache); !errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "scripts/ensure-harnesses.sh") {
		t.Fatalf("empty cache: %v", err)
	}
	for _, v := range []string{"2.1.9", "2.1.10", "2.0.99"} {
		d := filepath.Join(cache, "claude-"+v)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "claude"), []byte("x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// a newer directory without its executable (an interrupted fetch)
	if err := os.MkdirAll(filepath.Join(cache, "claude-3.0.0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := h.Build(cache); err != nil || filepath.Base(d) != "claude-2.1.10" {
		t.Errorf("Build = %q, %v; want claude-2.1.10", d, err)
	}
}

// TestKey: a declared secret for the harness's variable wins; else the
// user's environment, bound to the model API (the base URL's host when
// set); else an error that says what to set.
func TestKey(t *testing.T) {
	h, _ := Lookup("claude")
	declared := []secrets.Declaration{{Name: "mine", Env: "ANTHROPIC_API_KEY", Hosts: []string{"proxy.example.com"}}}
	if extra, allow, err := h.Key(declared, env()); err != nil || extra != nil || !slices.Equal(allow, []string{"proxy.example.com"}) {
		t.Errorf("declared: %v %v %v", extra, allow, err)
	}
	extra, allow, err := h.Key(nil, env("ANTHROPIC_API_KEY", "sk-1", "ANTHROPIC_BASE_URL", "https://10.1.2.3:8443/"))
	if err != nil || len(extra) != 1 || extra[0].Source.Ref != "ANTHROPIC_API_KEY" || !slices.Equal(extra[0].Hosts, []string{"10.1.2.3:8443"}) || !slices.Equal(allow, []string{"10.1.2.3:8443"}) {
		t.Errorf("from the environment: %+v %v %v", extra, allow, err)
	}
	if _, allow, _ := h.Key(nil, env("ANTHROPIC_API_KEY", "sk-1")); !slices.Equal(allow, []string{"api.anthropic.com"}) {
		t.Errorf("default host: %v", allow)
	}
	if _, _, err := h.Key(nil, env()); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY is not set") {
		t.Errorf("no key: %v", err)
	}
	// a plain-http base URL would carry the key in the clear
	if _, _, err := h.Key(nil, env("ANTHROPIC_API_KEY", "sk-1", "ANTHROPIC_BASE_URL", "http://10.1.2.3/")); err == nil || !strings.Contains(err.Error(), "plain http") {
		t.Errorf("http base URL: %v", err)
	}
}

func TestArgv(t *testing.T) {
	claude, _ := Lookup("claude")
	if got := claude.Argv([]string{"-p", "x"}, env()); !slices.Equal(got, []string{Mount + "/claude", "-p", "x"}) {
		t.Errorf("claude: %q", got)
	}
	gemini, _ := Lookup("gemini")
	if got := gemini.Argv(nil, env()); !slices.Equal(got, []string{"node", Mount + "/bundle/gemini.js"}) {
		t.Errorf("gemini: %q", got)
	}
	codex, _ := Lookup("codex")
	got := strings.Join(codex.Argv([]string{"exec"}, env("OPENAI_BASE_URL", "https://h:1/v1")), " ")
	if !strings.Contains(got, `model_providers.litterbox.base_url="https://h:1/v1"`) || !strings.HasSuffix(got, " exec") {
		t.Errorf("codex: %s", got)
	}
	cmd := &Harness{Name: "aider", Prog: "aider"}
	if got := cmd.Argv([]string{"--yes"}, env()); !slices.Equal(got, []string{"aider", "--yes"}) {
		t.Errorf("--cmd: %q", got)
	}
}
