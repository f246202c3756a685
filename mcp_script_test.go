package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// mcp [-text] [-field NAME -out FILE] TOOL JSONARGS
	//
	// Calls TOOL through a real stdio MCP client talking to `litterbox mcp`,
	// started in the current directory on the script's first call and
	// stopped when the script ends (its stderr goes to $WORK/mcp.stderr).
	// In JSONARGS a key ending in "@" takes its value from the named file
	// ({"content@":"data.txt"} sends data.txt as content). On success the
	// structured result is printed to stdout as indented JSON, or the text
	// fallback with -text; -field NAME -out FILE writes the string field
	// NAME of the result to FILE instead. A tool error (isError) prints its
	// message to stderr and fails unless negated.
	scriptCmds["mcp"] = cmdMCP
	// mcpwriters PROCS WRITES SANDBOX
	// starts PROCS `litterbox mcp` processes at once, each writing WRITES
	// distinct files wP-I.txt to SANDBOX, and fails if any call fails.
	scriptCmds["mcpwriters"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 3 {
			ts.Fatalf("usage: mcpwriters PROCS WRITES SANDBOX")
		}
		procs, err := strconv.Atoi(args[0])
		ts.Check(err)
		writes, err := strconv.Atoi(args[1])
		ts.Check(err)
		clients := make([]*client.Client, procs)
		for p := range clients {
			clients[p] = startMCP(ts, fmt.Sprintf("mcpwriter%d.stderr", p))
		}
		errs := make(chan error, procs*writes)
		var wg sync.WaitGroup
		for p, c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; i <= writes; i++ {
					req := mcp.CallToolRequest{}
					req.Params.Name = "write"
					req.Params.Arguments = map[string]any{"sandbox": args[2], "path": fmt.Sprintf("w%d-%d.txt", p+1, i), "content": fmt.Sprintf("%d-%d\n", p+1, i)}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					res, err := c.CallTool(ctx, req)
					cancel()
					if err == nil && res.IsError {
						err = fmt.Errorf("write w%d-%d.txt: %v", p+1, i, res.Content)
					}
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			ts.Fatalf("%v", err)
		}
	}

	// genfile FILE SIZE
	//
	// Writes SIZE bytes of awkward text to FILE: shell quotes, $(...),
	// backticks, control characters, CRLF and LF line ends, multi-byte
	// UTF-8, and no newline at the end.
	scriptCmds["genfile"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: genfile FILE SIZE")
		}
		size, err := strconv.Atoi(args[1])
		ts.Check(err)
		chunk := "echo \"$(rm -rf /)\" '`id`' \\n \x01\x02\x1b[0m tab\tcr\r\nlf\n café ☕ $HOME %s %% \r\n"
		var b strings.Builder
		for b.Len() < size {
			b.WriteString(chunk)
		}
		data := []byte(b.String())[:size]
		for !utf8.Valid(data) || data[len(data)-1] == '\n' {
			data = data[:len(data)-1]
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[0]), data, 0o644))
	}
}

var mcpClients sync.Map // *testscript.TestScript -> *client.Client

func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	text := false
	field, out := "", ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-text":
			text = true
			args = args[1:]
		case "-field", "-out":
			if len(args) < 2 {
				ts.Fatalf("usage: mcp [-text] [-field NAME -out FILE] TOOL JSONARGS")
			}
			if args[0] == "-field" {
				field = args[1]
			} else {
				out = ts.MkAbs(args[1])
			}
			args = args[2:]
		default:
			ts.Fatalf("unknown flag %s", args[0])
		}
	}
	if len(args) != 2 {
		ts.Fatalf("usage: mcp [-text] [-field NAME -out FILE] TOOL JSONARGS")
	}
	var params map[string]any
	if err := json.Unmarshal([]byte(args[1]), &params); err != nil {
		ts.Fatalf("bad JSON arguments %s: %v", args[1], err)
	}
	for k, v := range params {
		if name, ok := strings.CutSuffix(k, "@"); ok {
			data, err := os.ReadFile(ts.MkAbs(fmt.Sprint(v)))
			ts.Check(err)
			delete(params, k)
			params[name] = string(data)
		}
	}
	c := mcpClient(ts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = args[0]
	req.Params.Arguments = params
	res, err := c.CallTool(ctx, req)
	if err != nil {
		ts.Fatalf("protocol error calling %s: %v", args[0], err)
	}
	var msg strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			msg.WriteString(tc.Text)
		}
	}
	if res.IsError {
		fmt.Fprintln(ts.Stderr(), msg.String())
		if !neg {
			ts.Fatalf("tool %s failed", args[0])
		}
		return
	}
	if neg {
		ts.Fatalf("tool %s succeeded unexpectedly", args[0])
	}
	if res.StructuredContent == nil {
		ts.Fatalf("tool %s returned no structuredContent", args[0])
	}
	structured, err := json.MarshalIndent(res.StructuredContent, "", "  ")
	ts.Check(err)
	switch {
	case field != "":
		var m map[string]any
		ts.Check(json.Unmarshal(structured, &m))
		s, ok := m[field].(string)
		if !ok {
			ts.Fatalf("result has no string field %q: %s", field, structured)
		}
		if out == "" {
			fmt.Fprint(ts.Stdout(), s)
			return
		}
		ts.Check(os.WriteFile(out, []byte(s), 0o644))
	case text:
		fmt.Fprintln(ts.Stdout(), msg.String())
	default:
		// Escaping HTML would make scripts match \u003c for <.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		ts.Check(enc.Encode(res.StructuredContent))
		fmt.Fprint(ts.Stdout(), b.String())
	}
}

// mcpClient starts `litterbox mcp` for the script on first use.
func mcpClient(ts *testscript.TestScript) *client.Client {
	if c, ok := mcpClients.Load(ts); ok {
		return c.(*client.Client)
	}
	c := startMCP(ts, "mcp.stderr")
	mcpClients.Store(ts, c)
	ts.Defer(func() { mcpClients.Delete(ts) })
	return c
}

// startMCP starts one `litterbox mcp` process in the script's directory,
// logging to stderrName in $WORK, and initialises a client for it. It is
// closed when the script ends.
func startMCP(ts *testscript.TestScript, stderrName string) *client.Client {
	var env []string
	for _, k := range []string{"PATH", "HOME", "GIT_CONFIG_NOSYSTEM", "LITTERBOX_LABELS", "LITTERBOX_SCANNER", "LITTERBOX_LOG_LEVEL", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "TMPDIR", "LB_SHIM"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	stderr, err := os.Create(filepath.Join(ts.Getenv("WORK"), stderrName))
	ts.Check(err)
	dir := ts.MkAbs(".")
	c, err := client.NewStdioMCPClientWithOptions("litterbox", env, []string{"mcp"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			path, err := lookPath(ts.Getenv("PATH"), command)
			if err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, path, args...)
			cmd.Env, cmd.Dir = env, dir
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(stderr),
	)
	ts.Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "litterbox-testscript", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		ts.Fatalf("initialize litterbox mcp: %v", err)
	}
	ts.Defer(func() {
		_ = c.Close()
		_ = stderr.Close()
	})
	return c
}
