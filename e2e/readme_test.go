package e2e

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/pelletier/go-toml/v2"

	"github.com/litterbox-dev/litterbox/internal/cli"
)

// snippetDoc is the page that holds each harness's configuration snippet.
const snippetDoc = "docs/connect.md"

// harnessSnippet is a code block of snippetDoc marked with the harness whose
// configuration it is and the page documenting that harness's format:
//
//	<!-- harness: NAME; format: URL ... -->
//	```LANG
//	...
//	```
var harnessSnippet = regexp.MustCompile("(?s)<!-- harness: ([a-z-]+); format: (https://\\S+)[^\\n]*-->\\n```([a-z]+)\\n(.*?)\\n```")

// stdioServer is what every harness needs to start a stdio MCP server.
type stdioServer struct {
	Type    string   `json:"type" toml:"type"`
	Command string   `json:"command" toml:"command"`
	Args    []string `json:"args" toml:"args"`
}

// TestConnectSnippets parses each MCP configuration snippet of snippetDoc
// the way its harness reads it, checks the keys that harness requires
// (VS Code's "servers" and "type": "stdio", Codex's [mcp_servers.NAME] in
// TOML, opencode's "mcp" with "type": "local" and the command line as one
// array, "mcpServers" elsewhere), and checks that the command line it starts is
// `litterbox ... mcp` as litterbox's own parser reads it.
func TestConnectSnippets(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(moduleRoot, snippetDoc))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range harnessSnippet.FindAllStringSubmatch(string(readme), -1) {
		harness, lang, body := m[1], m[3], m[4]
		seen[harness] = true
		t.Run(harness, func(t *testing.T) {
			srv := parseSnippet(t, harness, lang, body)
			if srv.Command != "litterbox" {
				t.Fatalf("command = %q, want litterbox", srv.Command)
			}
			parser, err := cli.Parser(io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := parser.Parse(srv.Args)
			if err != nil {
				t.Fatalf("litterbox %q: %v", srv.Args, err)
			}
			if kctx.Command() != "mcp" {
				t.Fatalf("litterbox %q runs %q, not mcp", srv.Args, kctx.Command())
			}
		})
	}
	for _, h := range []string{"claude-cli", "claude", "cursor", "vscode", "codex", "gemini", "opencode"} {
		if !seen[h] {
			t.Errorf(snippetDoc+" has no snippet marked <!-- harness: %s; format: URL -->", h)
		}
	}
}

// parseSnippet reads the litterbox server out of one snippet, failing on a
// key its harness requires that is missing.
func parseSnippet(t *testing.T, harness, lang, body string) stdioServer {
	t.Helper()
	var servers map[string]stdioServer
	switch harness {
	case "claude-cli":
		const prefix = "claude mcp add litterbox -- "
		if lang != "sh" || !strings.HasPrefix(body, prefix) || strings.Contains(body, "\n") {
			t.Fatalf("want one %q line in a sh block, got %s block:\n%s", prefix+"...", lang, body)
		}
		argv := strings.Fields(strings.TrimPrefix(body, prefix))
		return stdioServer{Command: argv[0], Args: argv[1:]}
	case "codex":
		var cfg struct {
			MCPServers map[string]stdioServer `toml:"mcp_servers"`
		}
		if lang != "toml" {
			t.Fatalf("codex reads TOML, this is %s", lang)
		}
		if err := toml.Unmarshal([]byte(body), &cfg); err != nil {
			t.Fatal(err)
		}
		servers = cfg.MCPServers
	case "opencode":
		var cfg struct {
			Schema string `json:"$schema"`
			MCP    map[string]struct {
				Type    string   `json:"type"`
				Command []string `json:"command"`
				Enabled bool     `json:"enabled"`
			} `json:"mcp"`
		}
		if lang != "json" {
			t.Fatalf("opencode reads JSON, this is %s", lang)
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			t.Fatal(err)
		}
		srv, ok := cfg.MCP["litterbox"]
		if !ok || srv.Type != "local" || len(srv.Command) == 0 || !srv.Enabled {
			t.Fatalf(`want "mcp": {"litterbox": {"type": "local", "command": [...], "enabled": true}}, got %+v`, cfg.MCP)
		}
		return stdioServer{Type: srv.Type, Command: srv.Command[0], Args: srv.Command[1:]}
	default:
		if lang != "json" {
			t.Fatalf("%s reads JSON, this is %s", harness, lang)
		}
		var cfg map[string]map[string]stdioServer
		if err := json.Unmarshal([]byte(body), &cfg); err != nil {
			t.Fatal(err)
		}
		key := "mcpServers"
		if harness == "vscode" {
			key = "servers"
		}
		if len(cfg) != 1 || cfg[key] == nil {
			t.Fatalf("want the one top-level key %q, got %v", key, cfg)
		}
		servers = cfg[key]
	}
	srv, ok := servers["litterbox"]
	if !ok {
		t.Fatalf("no server named litterbox in %v", servers)
	}
	if harness == "vscode" && srv.Type != "stdio" {
		t.Fatalf(`VS Code needs "type": "stdio", got %q`, srv.Type)
	}
	if srv.Args == nil {
		t.Fatal("no args")
	}
	return srv
}

// TestCLIDoc checks that docs/cli.md, the CLI's reference, names every
// command the CLI has (as `litterbox PATH`) and every flag of each (as
// `--flag`), so the reference cannot fall behind the CLI's own --help.
func TestCLIDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs/cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	parser, err := cli.Parser(io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, f := range parser.Model.Flags {
		if !f.Hidden && f != parser.Model.HelpFlag && !strings.Contains(text, "--"+f.Name) {
			t.Errorf("docs/cli.md does not name the global flag --%s", f.Name)
		}
	}
	var walk func(n *kong.Node, parent string)
	walk = func(n *kong.Node, parent string) {
		for _, child := range n.Children {
			if child.Hidden {
				continue
			}
			path := strings.TrimSpace(parent + " " + child.Name)
			if !strings.Contains(text, "litterbox "+path) && !commandNamedInLine(text, path) {
				t.Errorf("docs/cli.md does not name the command `litterbox %s`", path)
			}
			for _, f := range child.Flags {
				if !f.Hidden && !strings.Contains(text, "--"+f.Name) {
					t.Errorf("docs/cli.md does not name `litterbox %s`'s flag --%s", path, f.Name)
				}
			}
			walk(child, path)
		}
	}
	walk(parser.Model.Node, "")
}

// commandNamedInLine reports whether a reference line names a subcommand
// the way the reference writes its alternatives: `litterbox vm
// [status|suspend|stop]` names `vm stop`.
func commandNamedInLine(text, path string) bool {
	words := strings.Fields(path)
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "litterbox "+strings.Join(words[:len(words)-1], " ")) {
			continue
		}
		last := words[len(words)-1]
		if regexp.MustCompile(`[\[| ]` + regexp.QuoteMeta(last) + `[\]| ]`).MatchString(line) {
			return true
		}
	}
	return false
}
