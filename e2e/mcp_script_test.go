package e2e

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

var mcpClients sync.Map // *testscript.TestScript -> *scriptClient

// mcpOpts are the flags of mcp, mcpbg and mcpwait.
type mcpOpts struct {
	text     bool
	field    string
	out      string
	max      int  // fail when the result, as JSON, is larger
	progress bool // ask for progress notifications
}

// defaultMaxResult is the most any result may weigh as JSON: the server's
// default response cap.
const defaultMaxResult = 256 << 10

const mcpUsage = "usage: mcp [-text] [-max BYTES] [-progress] [-field NAME [-out FILE]] TOOL JSONARGS"

func parseMCPFlags(ts *testscript.TestScript, args []string) (mcpOpts, []string) {
	var o mcpOpts
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-text":
			o.text = true
			args = args[1:]
		case "-progress":
			o.progress = true
			args = args[1:]
		case "-field", "-out", "-max":
			if len(args) < 2 {
				ts.Fatalf(mcpUsage)
			}
			switch args[0] {
			case "-field":
				o.field = args[1]
			case "-out":
				o.out = ts.MkAbs(args[1])
			case "-max":
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				o.max = n
			}
			args = args[2:]
		default:
			ts.Fatalf("unknown flag %s", args[0])
		}
	}
	return o, args
}

// toolRequest builds a tools/call request from TOOL and JSONARGS.
func toolRequest(ts *testscript.TestScript, tool, jsonArgs string, progress string) mcp.CallToolRequest {
	var params map[string]any
	if err := json.Unmarshal([]byte(jsonArgs), &params); err != nil {
		ts.Fatalf("bad JSON arguments %s: %v", jsonArgs, err)
	}
	for k, v := range params {
		if name, ok := strings.CutSuffix(k, "@"); ok {
			data, err := os.ReadFile(ts.MkAbs(fmt.Sprint(v)))
			ts.Check(err)
			delete(params, k)
			params[name] = string(data)
		}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = params
	if progress != "" {
		req.Params.Meta = &mcp.Meta{ProgressToken: progress}
	}
	return req
}

func cmdMCP(ts *testscript.TestScript, neg bool, args []string) {
	o, args := parseMCPFlags(ts, args)
	if len(args) != 2 {
		ts.Fatalf(mcpUsage)
	}
	c := mcpClient(ts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := c.CallTool(ctx, toolRequest(ts, args[0], args[1], ""))
	printResult(ts, neg, o, args[0], res, err)
}

// printResult prints a tool's result as mcp does.
func printResult(ts *testscript.TestScript, neg bool, o mcpOpts, tool string, res *mcp.CallToolResult, err error) {
	text, field, out := o.text, o.field, o.out
	if err != nil {
		ts.Fatalf("protocol error calling %s: %v", tool, err)
	}
	if o.max == 0 {
		o.max = defaultMaxResult
	}
	if o.max > 0 {
		data, err := json.Marshal(res)
		ts.Check(err)
		if len(data) > o.max {
			ts.Fatalf("the result of %s is %d bytes as JSON, over %d", tool, len(data), o.max)
		}
	}
	if res.IsError {
		fmt.Fprintln(ts.Stderr(), resultText(res))
		if !neg {
			ts.Fatalf("tool %s failed", tool)
		}
		return
	}
	if neg {
		ts.Fatalf("tool %s succeeded unexpectedly", tool)
	}
	if res.StructuredContent == nil {
		ts.Fatalf("tool %s returned no structuredContent", tool)
	}
	structured, err := json.MarshalIndent(res.StructuredContent, "", "  ")
	ts.Check(err)
	if err := sameInBothForms(structured, resultText(res)); err != nil {
		ts.Fatalf("tool %s: %v", tool, err)
	}
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
	case out != "":
		ts.Check(os.WriteFile(out, []byte(firstText(res)), 0o644))
	case text:
		fmt.Fprintln(ts.Stdout(), resultText(res))
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

// payloadFields are the fields of a structured result that carry what the
// agent reads (a file's lines, output, a log, notes, names, matches).
var payloadFields = []string{"content", "note", "stdout", "stderr", "setupOutput", "log", "entries", "matches"}

// sameInBothForms checks that each payload field of the structured result
// is in the text too: Claude Code, Codex and opencode show the model only
// structuredContent, other clients only the text, so neither may hold less.
// A result with text beyond the summary line must have a payload field.
func sameInBothForms(structured []byte, text string) error {
	var m map[string]any
	if err := json.Unmarshal(structured, &m); err != nil {
		return err
	}
	for _, k := range payloadFields {
		switch v := m[k].(type) {
		case string:
			if !strings.Contains(text, v) {
				return fmt.Errorf("structuredContent's %s %q is not in the text %q", k, v, text)
			}
		case []any:
			for _, it := range v {
				if s, _ := it.(string); !strings.Contains(text, s) {
					return fmt.Errorf("structuredContent's %s item %q is not in the text %q", k, it, text)
				}
			}
		}
	}
	return nil
}

// resultText joins the text blocks of a result, one a line.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// firstText is the first text block of a result: the payload itself.
func firstText(res *mcp.CallToolResult) string {
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// scriptClient is a client of one `litterbox mcp` process, with what the
// custom commands need besides: the progress notifications it received,
// the raw JSON-RPC traffic (traced to files in $WORK) and background calls.
type scriptClient struct {
	*client.Client
	stdinLog, stdoutLog string
	cmd                 *exec.Cmd // sh, running tee | litterbox mcp | tee

	mu       sync.Mutex
	progress map[string]int // progress notifications by token
}

// bgCalls are the background calls of the scripts, by script and name.
var bgCalls sync.Map // bgKey -> *bgCall

type bgKey struct {
	ts   *testscript.TestScript
	name string
}

// bgCall is a tool call started by mcpbg.
type bgCall struct {
	c      *scriptClient
	tool   string
	opts   mcpOpts
	req    mcp.CallToolRequest
	cancel context.CancelFunc
	done   chan struct{}
	res    *mcp.CallToolResult
	err    error
}

// mcpClient starts `litterbox mcp` for the script on first use.
func mcpClient(ts *testscript.TestScript) *scriptClient {
	if c, ok := mcpClients.Load(ts); ok {
		return c.(*scriptClient)
	}
	c := startMCP(ts, "mcp.stderr")
	mcpClients.Store(ts, c)
	ts.Defer(func() { mcpClients.Delete(ts) })
	return c
}

// startMCP starts one `litterbox mcp` process in the script's directory,
// logging to stderrName in $WORK, and initialises a client for it. What the
// client sends and receives is copied to stderrName with .in and .out
// appended. It is closed when the script ends.
func startMCP(ts *testscript.TestScript, stderrName string) *scriptClient {
	var env []string
	for _, k := range []string{"PATH", "HOME", "GIT_CONFIG_NOSYSTEM", "LITTERBOX_LABELS", "LITTERBOX_SCANNER", "LITTERBOX_IMAGE", "LITTERBOX_LOG_LEVEL",
		"LITTERBOX_MCP_MAX_OUTPUT", "LITTERBOX_MCP_PROGRESS_INTERVAL", "LITTERBOX_POOL", "LITTERBOX_ENGINE", "CONTAINER_HOST", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "TMPDIR", "LB_SHIM",
		"LITTERBOX_KUBECONFIG", "LITTERBOX_KUBE_CONTEXT", "LITTERBOX_NAMESPACE", "LITTERBOX_KUBECTL", "LITTERBOX_ALLOW_UNISOLATED"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	work := ts.Getenv("WORK")
	stderr, err := os.Create(filepath.Join(work, stderrName))
	ts.Check(err)
	sc := &scriptClient{
		stdinLog: filepath.Join(work, stderrName+".in"), stdoutLog: filepath.Join(work, stderrName+".out"),
		progress: map[string]int{},
	}
	dir := ts.MkAbs(".")
	c, err := client.NewStdioMCPClientWithOptions("litterbox", env, []string{"mcp"},
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			path, err := lookPath(ts.Getenv("PATH"), command)
			if err != nil {
				return nil, err
			}
			// tee keeps the raw traffic: mcpnoreply reads it.
			cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `tee "$IN" | "$0" "$@" | tee "$OUT"`, path}, args...)...)
			cmd.Env, cmd.Dir = append(env, "IN="+sc.stdinLog, "OUT="+sc.stdoutLog), dir
			sc.cmd = cmd
			return cmd, nil
		}),
		transport.WithCommandStderrWriter(stderr),
	)
	ts.Check(err)
	sc.Client = c
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		sc.mu.Lock()
		sc.progress[fmt.Sprint(n.Params.AdditionalFields["progressToken"])]++
		sc.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Start (the transport is running already) installs the notification
	// handler.
	ts.Check(c.Start(ctx))
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
	return sc
}

// cmdMCPBg starts a tool call in the background; see init.
func cmdMCPBg(ts *testscript.TestScript, neg bool, args []string) {
	o, args := parseMCPFlags(ts, args)
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mcpbg [flags] NAME TOOL JSONARGS")
	}
	c := mcpClient(ts)
	token := ""
	if o.progress {
		token = "bg-" + args[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	call := &bgCall{c: c, tool: args[1], opts: o, req: toolRequest(ts, args[1], args[2], token), cancel: cancel, done: make(chan struct{})}
	bgCalls.Store(bgKey{ts, args[0]}, call)
	ts.Defer(func() {
		cancel()
		bgCalls.Delete(bgKey{ts, args[0]})
	})
	go func() {
		defer close(call.done)
		call.res, call.err = c.CallTool(ctx, call.req)
	}()
}

func bgNamed(ts *testscript.TestScript, name string) (*scriptClient, *bgCall) {
	v, ok := bgCalls.Load(bgKey{ts, name})
	if !ok {
		ts.Fatalf("no background call %q (start it with mcpbg)", name)
	}
	call := v.(*bgCall)
	return call.c, call
}

// waitBg waits for a background call to end.
func waitBg(ts *testscript.TestScript, call *bgCall) {
	select {
	case <-call.done:
	case <-time.After(5 * time.Minute):
		ts.Fatalf("background call %s still running after 5 minutes", call.tool)
	}
}

// requestID finds the JSON-RPC id the client gave call, in the traced
// traffic.
func requestID(ts *testscript.TestScript, c *scriptClient, call *bgCall) string {
	id, ok := requestIDs(ts, c)[argsKey(ts, call.req.Params.Arguments)]
	if !ok {
		ts.Fatalf("the traced requests hold no tools/call with arguments %v", call.req.Params.Arguments)
	}
	return id
}

// responded says whether the traced responses hold one to id.
func responded(ts *testscript.TestScript, c *scriptClient, id string) bool {
	return responseIDs(ts, c)[id]
}

// tsSDKVersion is the TypeScript SDK the reference-client script runs.
const tsSDKVersion = "1.32.2"

var tsSDKOnce struct {
	sync.Once
	dir string
	err error
}

// tsSDK installs the TypeScript SDK into the user's cache once and returns
// its package folder.
func tsSDK() (string, error) {
	tsSDKOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			tsSDKOnce.err = err
			return
		}
		prefix := filepath.Join(cache, "litterbox-test", "ts-sdk-"+tsSDKVersion)
		pkg := filepath.Join(prefix, "node_modules", "@modelcontextprotocol", "sdk")
		tsSDKOnce.dir = pkg
		if _, err := os.Stat(filepath.Join(pkg, "package.json")); err == nil {
			return
		}
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, "@modelcontextprotocol/sdk@"+tsSDKVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			tsSDKOnce.err = fmt.Errorf("npm install @modelcontextprotocol/sdk@%s: %v\n%s", tsSDKVersion, err, out)
		}
	})
	return tsSDKOnce.dir, tsSDKOnce.err
}

// cmdMCPWait is the script command mcpwait (scriptcmds_test.go).
func cmdMCPWait(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: mcpwait NAME")
	}
	c, call := bgNamed(ts, args[0])
	waitBg(ts, call)
	c.mu.Lock()
	fmt.Fprintf(ts.Stderr(), "progress: %d\n", c.progress["bg-"+args[0]])
	c.mu.Unlock()
	printResult(ts, neg, call.opts, call.tool, call.res, call.err)
}

// cmdMCPCancel is the script command mcpcancel (scriptcmds_test.go).
func cmdMCPCancel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpcancel NAME")
	}
	c, call := bgNamed(ts, args[0])
	select {
	case <-call.done:
		ts.Fatalf("call %s had already returned: %v", args[0], call.err)
	default:
	}
	call.cancel()
	waitBg(ts, call)
	if call.err == nil {
		ts.Fatalf("call %s returned a result after its cancel", args[0])
	}
	c.mu.Lock()
	fmt.Fprintf(ts.Stdout(), "progress: %d\n", c.progress["bg-"+args[0]])
	c.mu.Unlock()
}

// cmdMCPNoReply is the script command mcpnoreply (scriptcmds_test.go).
func cmdMCPNoReply(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: mcpnoreply NAME")
	}
	c, call := bgNamed(ts, args[0])
	id := requestID(ts, c, call)
	if got := responded(ts, c, id); got != neg {
		ts.Fatalf("response to request %s sent: %v", id, got)
	}
}

// cmdMCPUntil is the script command mcpuntil (scriptcmds_test.go).
func cmdMCPUntil(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mcpuntil TOOL JSONARGS REGEXP")
	}
	re := scriptRegexp(ts, args[2])
	c := mcpClient(ts)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := c.CallTool(ctx, toolRequest(ts, args[0], args[1], ""))
		cancel()
		if err == nil && re.MatchString(resultText(res)) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s never matched %q; last: %v %v", args[0], args[2], err, res)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// cmdMCPReadAll is the script command mcpreadall (scriptcmds_test.go).
func cmdMCPReadAll(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mcpreadall SANDBOX PATH FILE")
	}
	c := mcpClient(ts)
	var all strings.Builder
	offset, pages := 0, 0
	for {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read"
		req.Params.Arguments = map[string]any{"sandbox": args[0], "path": args[1], "offset": offset}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err := c.CallTool(ctx, req)
		cancel()
		printResult(ts, false, mcpOpts{out: os.DevNull}, "read", res, err)
		pages++
		var meta struct {
			Lines   int    `json:"lines"`
			More    bool   `json:"more"`
			Content string `json:"content"`
		}
		data, _ := json.Marshal(res.StructuredContent)
		ts.Check(json.Unmarshal(data, &meta))
		if meta.Content != firstText(res) {
			ts.Fatalf("read at offset %d: structuredContent's content is not the text's", offset)
		}
		all.WriteString(meta.Content)
		if !meta.More {
			break
		}
		if meta.Lines == 0 {
			ts.Fatalf("read at offset %d returned no lines but says there are more", offset)
		}
		offset += meta.Lines
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(all.String()), 0o644))
	fmt.Fprintf(ts.Stdout(), "pages: %d\n", pages)
}

// cmdRepeat is the script command repeat (scriptcmds_test.go).
func cmdRepeat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repeat FILE N TEXT")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.Repeat(args[2], n)), 0o644))
}

// cmdMCPFresh is the script command mcpfresh (scriptcmds_test.go).
func cmdMCPFresh(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: mcpfresh")
	}
	mcpClients.Store(ts, startMCP(ts, fmt.Sprintf("mcp%d.stderr", time.Now().UnixNano())))
}

// cmdTSSDK is the script command tssdk (scriptcmds_test.go).
func cmdTSSDK(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: tssdk")
	}
	dir, err := tsSDK()
	ts.Check(err)
	ts.Setenv("SDK", dir)
}

// cmdWaitFile is the script command waitfile (scriptcmds_test.go).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfile FILE REGEXP")
	}
	re := scriptRegexp(ts, args[1])
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if data, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(data) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s does not match %q after 2 minutes", args[0], args[1])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cmdMCPWriters is the script command mcpwriters (scriptcmds_test.go).
func cmdMCPWriters(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: mcpwriters PROCS WRITES SANDBOX")
	}
	procs, err := strconv.Atoi(args[0])
	ts.Check(err)
	writes, err := strconv.Atoi(args[1])
	ts.Check(err)
	clients := make([]*scriptClient, procs)
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

// cmdGenFile is the script command genfile (scriptcmds_test.go).
func cmdGenFile(ts *testscript.TestScript, neg bool, args []string) {
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
