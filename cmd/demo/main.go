// Command demo shows Litterbox working end to end, the way an agent uses it:
// it builds litterbox, makes a throwaway git repository, starts `litterbox
// mcp` in it and drives a session over MCP (sandbox-create, write, bash,
// read, patch, grep), then shows `litterbox list` and the sandbox's branch,
// and cleans up. Run it from the repository root with `go run ./cmd/demo`.
// It needs git and a running Docker engine with busybox:latest
// (scripts/ensure-docker.sh, scripts/ensure-busybox.sh).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mattn/go-isatty"
)

const sandboxName = "demo"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run() error {
	tmp, err := os.MkdirTemp("", "litterbox-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	bin, err := litterbox(tmp)
	if err != nil {
		return err
	}
	repo := filepath.Join(tmp, "shop")
	if err := makeRepo(repo); err != nil {
		return err
	}
	step("A fresh git repository at %s, with a README and greet.sh", repo)

	env := os.Environ()
	if os.Getenv("LITTERBOX_LOG_LEVEL") == "" {
		env = append(env, "LITTERBOX_LOG_LEVEL=error") // the server's log goes to our stderr
	}
	c, err := client.NewStdioMCPClientWithOptions(bin, env, []string{"mcp"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Dir, cmd.Env = repo, env
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(os.Stderr),
	)
	if err != nil {
		return fmt.Errorf("start litterbox mcp: %w", err)
	}
	defer c.Close()
	// Whatever happens, the sandbox goes: this is a demo.
	defer func() {
		step("Cleaning up: litterbox delete --force %s", sandboxName)
		out, _ := exec.Command(bin, "--repo", repo, "delete", "--force", sandboxName).CombinedOutput()
		fmt.Println(indent(string(out)))
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "litterbox-demo", Version: "1"}
	info, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	step("Started `litterbox mcp` in the repository; connected to %s %s", info.ServerInfo.Name, info.ServerInfo.Version)

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"sandbox-create", map[string]any{"name": sandboxName}},
		{"write", map[string]any{"sandbox": sandboxName, "path": "lib/price.sh",
			"content": "# price AMOUNT RATE: AMOUNT with RATE percent tax\nprice() { echo $(( $1 + $1 * $2 / 100 )); }\n"}},
		{"bash", map[string]any{"sandbox": sandboxName, "command": ". lib/price.sh && price 200 20 && sh greet.sh agent"}},
		{"read", map[string]any{"sandbox": sandboxName, "path": "greet.sh"}},
		{"patch", map[string]any{"sandbox": sandboxName, "path": "greet.sh",
			"diff": "--- a/greet.sh\n+++ b/greet.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo \"hello, $1\"\n+echo \"hello, $1, from the sandbox\"\n"}},
		{"bash", map[string]any{"sandbox": sandboxName, "command": "sh greet.sh agent"}},
		{"grep", map[string]any{"sandbox": sandboxName, "pattern": "hello|price", "path": "."}},
		{"milestone", map[string]any{"sandbox": sandboxName, "message": "Add price(), greet from the sandbox"}},
	}
	for _, call := range calls {
		var args strings.Builder
		enc := json.NewEncoder(&args)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(call.args)
		step("Agent calls %s %s", call.tool, strings.TrimSpace(args.String()))
		req := mcp.CallToolRequest{}
		req.Params.Name = call.tool
		req.Params.Arguments = call.args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: %w", call.tool, err)
		}
		text := resultText(res)
		if res.IsError {
			return fmt.Errorf("%s failed: %s", call.tool, text)
		}
		fmt.Println(indent(text))
	}

	for _, cmd := range [][]string{
		{bin, "--repo", repo, "list"},
		{"git", "-C", repo, "log", "--oneline", "litterbox/" + sandboxName},
		{bin, "--repo", repo, "diff", "--stat", sandboxName},
	} {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		step("The human's side: %s", strings.Join(append([]string{filepath.Base(cmd[0])}, cmd[1:]...), " "))
		fmt.Println(indent(string(out)))
		if err != nil {
			return fmt.Errorf("%s: %w", cmd[0], err)
		}
	}
	return nil
}

// litterbox returns the binary to demo: $LITTERBOX_BIN, or one built from
// this module into dir.
func litterbox(dir string) (string, error) {
	if bin := os.Getenv("LITTERBOX_BIN"); bin != "" {
		return bin, nil
	}
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(mod)) == "" {
		return "", fmt.Errorf("run the demo from the litterbox repository (go run ./cmd/demo), or set LITTERBOX_BIN")
	}
	bin := filepath.Join(dir, "litterbox")
	step("Building litterbox")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	// Snapshots copy the binary into busybox containers, which have no C
	// library: it must be static.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build: %w", err)
	}
	return bin, nil
}

func makeRepo(dir string) error {
	files := map[string]string{
		"README.md": "# shop\n\nA tiny project for the Litterbox demo.\n",
		"greet.sh":  "#!/bin/sh\necho \"hello, $1\"\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "."},
		{"-c", "user.name=Demo", "-c", "user.email=demo@litterbox.dev", "commit", "-q", "-m", "shop: first commit"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

var bold = isatty.IsTerminal(os.Stdout.Fd())

func step(format string, args ...any) {
	if bold {
		format = "\033[1m" + format + "\033[0m"
	}
	fmt.Printf("\n==> "+format+"\n", args...)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    (no output)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
