package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserSettings: a settings file is copied as it is (TOML too), with
// what a run needs of the file merged over a JSON one; one that holds a
// credential anywhere, one that is not of its format, a missing one and a
// harness without one are refused, naming the file and what to do.
func TestUserSettings(t *testing.T) {
	home := t.TempDir()
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	codex, _ := Lookup("codex")
	gemini, _ := Lookup("gemini")
	claude, _ := Lookup("claude")

	write(".codex/config.toml", "model = \"gpt-5.5\"\n[model_providers.x]\nenv_key = \"OPENAI_API_KEY\"\nmax_tokens = 100\n")
	got, err := codex.UserSettings(home)
	if err != nil || string(got) != "model = \"gpt-5.5\"\n[model_providers.x]\nenv_key = \"OPENAI_API_KEY\"\nmax_tokens = 100\n" {
		t.Errorf("codex: %q, %v; want the file as it is", got, err)
	}

	write(".gemini/settings.json", `{"ui": {"theme": "Dracula"}, "security": {"auth": {"selectedType": "oauth-personal"}}}`)
	got, err = gemini.UserSettings(home)
	if err != nil || !strings.Contains(string(got), `"theme":"Dracula"`) || !strings.Contains(string(got), `"selectedType":"gemini-api-key"`) {
		t.Errorf("gemini: %s, %v; want the user's theme and the run's sign-in", got, err)
	}

	for _, tc := range []struct{ rel, data, where string }{
		{".claude/settings.json", `{"env": {"ANTHROPIC_API_KEY": "sk-ant-1"}}`, "env.ANTHROPIC_API_KEY"},
		{".claude/settings.json", `{"apiKeyHelper": "~/bin/key.sh"}`, "apiKeyHelper"},
		{".claude/settings.json", `{"mcpServers": [{"headers": {"Authorization": "Bearer x"}}]}`, "mcpServers[0].headers.Authorization"},
		{".codex/config.toml", "[model_providers.x]\nexperimental_bearer_token = \"abc\"\n", "model_providers.x.experimental_bearer_token"},
	} {
		write(tc.rel, tc.data)
		h := claude
		if strings.HasPrefix(tc.rel, ".codex") {
			h = codex
		}
		_, err := h.UserSettings(home)
		if !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "looks like a credential ("+tc.where+")") || !strings.Contains(err.Error(), "run without --with-config") {
			t.Errorf("%s %s: %v; want it refused, naming %s", tc.rel, tc.data, err, tc.where)
		}
	}

	write(".claude/settings.json", `{"permissions": `)
	if _, err := claude.UserSettings(home); !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "~/.claude/settings.json cannot be read") {
		t.Errorf("broken JSON: %v", err)
	}
	opencode, _ := Lookup("opencode")
	if _, err := opencode.UserSettings(home); !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "~/.config/opencode/opencode.json") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := (&Harness{Name: "sh", Prog: "sh"}).UserSettings(home); !errors.Is(err, ErrSettings) {
		t.Errorf("no settings file: %v", err)
	}
}
