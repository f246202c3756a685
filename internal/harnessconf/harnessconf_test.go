package harnessconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// plan runs Plan for harness in a directory holding files (path -> text),
// fails the test on an error, and checks that a second Plan over the result
// changes nothing (setup is idempotent).
func plan(t *testing.T, harness string, files map[string]string) map[string]File {
	t.Helper()
	root := t.TempDir()
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Plan(root, harness)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(root, got); err != nil {
		t.Fatal(err)
	}
	again, err := Plan(root, harness)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]File{}
	for i, f := range got {
		if len(again[i].Changes) > 0 || string(again[i].New) != string(f.New) {
			t.Errorf("%s: a second run changes it again: %q\n%s", f.Path, again[i].Changes, again[i].New)
		}
		out[filepath.ToSlash(f.Path)] = f
	}
	return out
}

func TestNewFiles(t *testing.T) {
	want := map[string]map[string]string{
		"claude": {
			".mcp.json": `{
  "mcpServers": {
    "litterbox": {
      "command": "litterbox",
      "args": ["mcp"]
    }
  }
}
`,
			".claude/settings.json": `{
  "permissions": {
    "deny": ["Bash", "Edit", "Write", "NotebookEdit", "WebFetch", "EnterWorktree"],
    "allow": ["mcp__litterbox"]
  }
}
`,
		},
		"codex": {
			".codex/config.toml": `sandbox_mode = "read-only"
approval_policy = "never"

[features]
shell_tool = false
unified_exec = false

[mcp_servers.litterbox]
command = "litterbox"
args = ["mcp"]
default_tools_approval_mode = "approve"
`,
		},
		"gemini": {
			".gemini/settings.json": `{
  "mcpServers": {
    "litterbox": {
      "command": "litterbox",
      "args": ["mcp"]
    }
  },
  "tools": {
    "exclude": ["run_shell_command", "write_file", "replace", "web_fetch"]
  }
}
`,
		},
		"opencode": {
			"opencode.json": `{
  "mcp": {
    "litterbox": {
      "type": "local",
      "command": ["litterbox", "mcp"],
      "enabled": true
    }
  },
  "permission": {
    "bash": "deny",
    "edit": "deny",
    "webfetch": "deny"
  }
}
`,
		},
	}
	if len(want) != len(Names) || len(harnesses) != len(Names) {
		t.Fatalf("Names %v, harnesses %d, tested %d: they must agree", Names, len(harnesses), len(want))
	}
	for harness, files := range want {
		t.Run(harness, func(t *testing.T) {
			got := plan(t, harness, nil)
			if len(got) != len(files) {
				t.Fatalf("files %v, want %d", got, len(files))
			}
			for path, text := range files {
				f := got[path]
				if f.Existed || string(f.New) != text {
					t.Errorf("%s (existed %v):\n%s\nwant:\n%s", path, f.Existed, f.New, text)
				}
				if len(f.Changes) == 0 {
					t.Errorf("%s: no changes reported", path)
				}
			}
		})
	}
}

// The user's entries stay, in their order; setup's lists are added to
// theirs; their own litterbox server entry is kept.
func TestMergeJSONKeepsUserEntries(t *testing.T) {
	got := plan(t, "claude", map[string]string{
		".claude/settings.json": `{"model": "opus", "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(./.env)", "Write"]}, "env": {"A": "1.50"}, "cleanupPeriodDays": 1.50}`,
		".mcp.json":             `{"mcpServers": {"db": {"command": "db-mcp"}, "litterbox": {"command": "litterbox", "args": ["--repo", "/src/x", "mcp"]}}}`,
	})
	settings := got[".claude/settings.json"]
	want := `{
  "model": "opus",
  "permissions": {
    "allow": ["Bash(npm test)", "mcp__litterbox"],
    "deny": ["Read(./.env)", "Write", "Bash", "Edit", "NotebookEdit", "WebFetch", "EnterWorktree"]
  },
  "env": {
    "A": "1.50"
  },
  "cleanupPeriodDays": 1.50
}
`
	if string(settings.New) != want {
		t.Errorf("settings.json:\n%s\nwant:\n%s", settings.New, want)
	}
	wantChanges := "permissions.deny: added Bash, Edit, NotebookEdit, WebFetch, EnterWorktree|permissions.allow: added mcp__litterbox"
	if c := strings.Join(settings.Changes, "|"); c != wantChanges {
		t.Errorf("changes %q, want %q", c, wantChanges)
	}
	mcp := got[".mcp.json"]
	if len(mcp.Changes) != 0 || string(mcp.New) != string(mcp.Old) {
		t.Errorf(".mcp.json changed: %q\n%s", mcp.Changes, mcp.New)
	}
}

func TestMergeJSONReplacesConflicts(t *testing.T) {
	got := plan(t, "opencode", map[string]string{
		"opencode.json": `{"$schema": "https://opencode.ai/config.json", "permission": {"bash": {"git *": "allow", "*": "ask"}, "edit": "deny"}, "mcp": {}}`,
	})
	f := got["opencode.json"]
	want := `{
  "$schema": "https://opencode.ai/config.json",
  "permission": {
    "bash": "deny",
    "edit": "deny",
    "webfetch": "deny"
  },
  "mcp": {
    "litterbox": {
      "type": "local",
      "command": ["litterbox", "mcp"],
      "enabled": true
    }
  }
}
`
	if string(f.New) != want {
		t.Errorf("opencode.json:\n%s\nwant:\n%s", f.New, want)
	}
	wantChanges := `mcp.litterbox: added {"type": "local", "command": ["litterbox", "mcp"], "enabled": true}|permission.bash: "deny", was {"git *": "allow", "*": "ask"}|permission.webfetch: added "deny"`
	if c := strings.Join(f.Changes, "|"); c != wantChanges {
		t.Errorf("changes %q\nwant      %q", c, wantChanges)
	}
}

func TestMergeTOMLKeepsCommentsAndOrder(t *testing.T) {
	got := plan(t, "codex", map[string]string{
		".codex/config.toml": `# my codex settings
model = "gpt-5.5" # the best
sandbox_mode = "workspace-write"

[features]
# on purpose
web_search_request = true

[mcp_servers.litterbox]
command = "litterbox"
args = ["--repo", "/src/x", "mcp"]

[mcp_servers.litterbox.env]
LITTERBOX_POOL = "2"

[[profiles.fast.list]]
x = 1
`,
	})
	f := got[".codex/config.toml"]
	want := `# my codex settings
model = "gpt-5.5" # the best
sandbox_mode = "read-only"
approval_policy = "never"

[features]
# on purpose
web_search_request = true
shell_tool = false
unified_exec = false

[mcp_servers.litterbox]
command = "litterbox"
args = ["--repo", "/src/x", "mcp"]
default_tools_approval_mode = "approve"

[mcp_servers.litterbox.env]
LITTERBOX_POOL = "2"

[[profiles.fast.list]]
x = 1
`
	if string(f.New) != want {
		t.Errorf("config.toml:\n%s\nwant:\n%s", f.New, want)
	}
	wantChanges := `sandbox_mode: "read-only", was "workspace-write"|approval_policy: added "never"|features.shell_tool: added false|features.unified_exec: added false|mcp_servers.litterbox.default_tools_approval_mode: added "approve"`
	if c := strings.Join(f.Changes, "|"); c != wantChanges {
		t.Errorf("changes %q\nwant      %q", c, wantChanges)
	}
}

// A file of tables only gets its top-level keys before the first header;
// a table known only through its sub-table gets a header of its own.
func TestMergeTOMLTablesOnly(t *testing.T) {
	got := plan(t, "codex", map[string]string{
		".codex/config.toml": "[mcp_servers.litterbox.env]\nA = \"1\"\n[features]\nshell_tool = true",
	})
	want := `sandbox_mode = "read-only"
approval_policy = "never"

[mcp_servers.litterbox.env]
A = "1"
[features]
shell_tool = false
unified_exec = false

[mcp_servers.litterbox]
command = "litterbox"
args = ["mcp"]
default_tools_approval_mode = "approve"
`
	if f := got[".codex/config.toml"]; string(f.New) != want {
		t.Errorf("config.toml:\n%s\nwant:\n%s", f.New, want)
	}
}

// Bad input is an error naming the file, and nothing is written.
func TestPlanRefuses(t *testing.T) {
	for _, c := range []struct {
		harness, path, text, want string
	}{
		{"claude", ".claude/settings.json", `{"permissions": {"deny": ["Bash"],}}`, `.claude/settings.json: not valid JSON`},
		{"gemini", ".gemini/settings.json", "{\n  // mine\n  \"theme\": \"x\"\n}", `comments are not JSON`},
		{"claude", ".claude/settings.json", `{"permissions": "all"}`, `permissions is a JSON string, where setup needs an object`},
		{"claude", ".claude/settings.json", `{"permissions": {"deny": "Bash"}}`, `permissions.deny is a JSON string, where setup needs a list`},
		{"opencode", "opencode.json", `[]`, `holds a JSON list, not an object`},
		{"claude", ".mcp.json", `{} {}`, `not valid JSON: more than one value`},
		{"codex", ".codex/config.toml", "sandbox_mode = \n", `.codex/config.toml: not valid TOML`},
		{"codex", ".codex/config.toml", "features = { shell_tool = true }\n", `features.shell_tool is set where setup cannot edit it`},
		{"codex", ".codex/config.toml", "features = { web_search_request = true }\n", `a table written inline or with dotted keys?`},
	} {
		root := t.TempDir()
		path := filepath.Join(root, c.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Plan(root, c.harness)
		if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was written") {
			t.Errorf("%s %q: error %v, want ErrInvalidFile with %q", c.harness, c.text, err, c.want)
		}
	}
	if _, err := Plan(t.TempDir(), "cursor"); err == nil || !strings.Contains(err.Error(), "claude, codex, gemini, opencode") {
		t.Errorf("unknown harness: %v", err)
	}
}

// What setup writes in TOML reads back, through a TOML decoder, as the
// settings say: the text edits are checked against a parser.
func TestTOMLDecodes(t *testing.T) {
	got := plan(t, "codex", map[string]string{".codex/config.toml": "model = \"x\"\n\n[mcp_servers.other]\ncommand = \"o\"\n"})
	var v map[string]any
	if err := toml.Unmarshal(got[".codex/config.toml"].New, &v); err != nil {
		t.Fatal(err)
	}
	servers := v["mcp_servers"].(map[string]any)
	if servers["other"] == nil || servers["litterbox"].(map[string]any)["default_tools_approval_mode"] != "approve" || v["sandbox_mode"] != "read-only" || v["model"] != "x" {
		t.Errorf("decoded %v", v)
	}
}

func TestWriteKeepsMode(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "opencode.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Plan(root, "opencode")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(root, p); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", st.Mode(), err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

// A settings file that is a link (to a dotfiles checkout, say) stays a
// link; the file it points to gets the change.
func TestWriteFollowsLink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "opencode.json")
	if err := os.WriteFile(target, []byte(`{"theme": "dark"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(root, "opencode.json")); err != nil {
		t.Fatal(err)
	}
	p, err := Plan(root, "opencode")
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(root, p); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(root, "opencode.json")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("opencode.json is no longer a link: %v %v", st.Mode(), err)
	}
	got, _ := os.ReadFile(target)
	if !strings.Contains(string(got), `"theme": "dark"`) || !strings.Contains(string(got), `"bash": "deny"`) {
		t.Errorf("the linked file holds:\n%s", got)
	}
}

// A settings file that is a link to nothing (a dotfiles checkout that
// lacks it) is refused, the link left as it is: writing would have put a
// file in the link's place.
func TestPlanRefusesBrokenLink(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "opencode.json")
	if err := os.Symlink(filepath.Join(t.TempDir(), "missing.json"), link); err != nil {
		t.Fatal(err)
	}
	p, err := Plan(root, "opencode")
	if err == nil {
		err = Write(root, p)
	}
	if !errors.Is(err, ErrInvalidFile) || !strings.Contains(err.Error(), "a link to") || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("error %v, want ErrInvalidFile naming the link", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("opencode.json is no longer a link: %v", err)
	}
}
