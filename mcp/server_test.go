package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/log"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
)

func TestBashMessage(t *testing.T) {
	for in, want := range map[string]string{
		"go test ./...":          "bash: go test ./...",
		"  make\n  make install": "bash: make ...",
		strings.Repeat("x", 100): "bash: " + strings.Repeat("x", 72) + " ...",
	} {
		if got := bashMessage(in); got != want {
			t.Errorf("bashMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBindError(t *testing.T) {
	for args, want := range map[string]string{
		`{"name": 5}`: `bad arguments: "name" must be a string, not a number; see the tool's input schema`,
		`{"sandbox": "s", "path": "p", "offset": "ten"}`:   `bad arguments: "offset" must be an integer, not a string; see the tool's input schema`,
		`{"sandbox": "s", "command": "c", "timeout": "1"}`: `bad arguments: "timeout" must be a number, not a string; see the tool's input schema`,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(args), &m); err != nil {
			t.Fatal(err)
		}
		req := mcp.CallToolRequest{}
		req.Params.Arguments = m
		var err error
		switch {
		case strings.Contains(args, "name"):
			err = req.BindArguments(&CreateArgs{})
		case strings.Contains(args, "offset"):
			err = req.BindArguments(&ReadArgs{})
		default:
			err = req.BindArguments(&BashArgs{})
		}
		if got := bindError(err); got != want {
			t.Errorf("bindError for %s = %q, want %q", args, got, want)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	if err := checkArgs[ReadArgs](map[string]any{"sandbox": "s", "path": "p"}); err != nil {
		t.Errorf("valid args refused: %v", err)
	}
	if err := checkArgs[ReadArgs](map[string]any{"sandbox": "s"}); err == nil || !strings.Contains(err.Error(), "missing required argument(s): path") {
		t.Errorf("missing path: %v", err)
	}
	if err := checkArgs[ReadArgs](map[string]any{"sandbox": "s", "path": "p", "pth": 1}); err == nil || !strings.Contains(err.Error(), `unknown argument "pth"`) {
		t.Errorf("unknown arg: %v", err)
	}
	// An empty string is a given argument: write may empty a file.
	if err := checkArgs[WriteArgs](map[string]any{"sandbox": "s", "path": "p", "content": ""}); err != nil {
		t.Errorf("empty content refused: %v", err)
	}
}

// TestToolsListed checks every tool has a description and input and output
// schemas, and that there is no delete tool.
func TestToolsListed(t *testing.T) {
	s := New(nil, nil, nil)
	c, err := client.NewInProcessClient(s.MCPServer("test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	initialize(t, c)
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || len(tool.InputSchema.Properties) == 0 || tool.OutputSchema.Type != "object" {
			t.Errorf("tool %s lacks a description or schema", tool.Name)
		}
		if strings.Contains(tool.Name, "delete") {
			t.Errorf("agents must not get a delete tool: %s", tool.Name)
		}
		// A jsonschema tag is split at commas; the hunk header must survive.
		if tool.Name == "patch" {
			if d := tool.InputSchema.Properties["diff"].(map[string]any)["description"]; !strings.Contains(fmt.Sprint(d), "@@ -a,b +c,d @@") {
				t.Errorf("patch diff description = %q, want the hunk header @@ -a,b +c,d @@ intact", d)
			}
		}
	}
	if got := strings.Join(names, " "); got != "bash glob grep ls milestone network-request patch read rewind sandbox-create sandbox-fork sandbox-ports sandbox-service write" {
		t.Errorf("tools = %s", got)
	}
}

func initialize(t *testing.T, c *client.Client) {
	t.Helper()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentBash runs ten bash calls at once on two sandboxes and checks
// each gets its own output, and that the calls overlap rather than queue.
func TestConcurrentBash(t *testing.T) {
	enginetest.DockerOrSkip(t)
	ctx := context.Background()
	dir := t.TempDir()
	repo := filepath.Join(dir, fmt.Sprintf("conc-%d", os.Getpid()))
	enginetest.CommitRepo(t, repo)
	logger := log.New(os.Stderr)
	logger.SetLevel(log.WarnLevel)
	p, err := docker.New(docker.Options{Runner: runner.Exec{Log: logger}})
	if err != nil {
		t.Fatal(err)
	}
	opts := sandbox.EnvOptions()
	opts.ExtraLabels["dev.litterbox.test"] = fmt.Sprintf("mcp-conc-%d", os.Getpid())
	svc := sandbox.New(p, runner.Exec{Log: logger}, logger, opts)
	r, err := svc.OpenRepo(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	s := New(svc, r, logger)
	c, err := client.NewInProcessClient(s.MCPServer("test"))
	if err != nil {
		t.Fatal(err)
	}
	initialize(t, c)

	boxes := []string{"one", "two"}
	for _, b := range boxes {
		t.Cleanup(func() { _, _ = svc.Delete(context.Background(), r, b, true) })
		call(t, c, "sandbox-create", map[string]any{"name": b})
	}

	// Each command reports when it ran by the kernel's clock, which the
	// containers share: calls that queued behind each other would not
	// overlap.
	type span struct {
		box        string
		start, end float64
	}
	spans := make([]span, 10)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			box := boxes[i%2]
			_, text := call(t, c, "bash", map[string]any{
				"sandbox": box,
				"command": fmt.Sprintf("read s _ </proc/uptime; sleep 1; echo call-%d in $LITTERBOX_SANDBOX; read e _ </proc/uptime; echo $s $e >&2", i),
			})
			_, streams, _ := strings.Cut(text, "--- stdout\n")
			stdout, stderr, _ := strings.Cut(streams, "--- stderr\n")
			want := fmt.Sprintf("call-%d in %s\n", i, box)
			if stdout != want {
				t.Errorf("call %d: stdout %q, want %q", i, stdout, want)
			}
			var sp span
			if _, err := fmt.Sscanf(stderr, "%g %g", &sp.start, &sp.end); err != nil {
				t.Errorf("call %d: stderr %q: %v", i, stderr, err)
			}
			sp.box = box
			spans[i] = sp
		}()
	}
	wg.Wait()
	overlap := false
	for _, a := range spans {
		for _, b := range spans {
			if a.box != b.box && a.start < b.end && b.start < a.end {
				overlap = true
			}
		}
	}
	if !overlap {
		t.Errorf("no two calls on different sandboxes ran at the same time: %v", spans)
	}
}

// call calls tool and returns its metadata and its text.
func call(t *testing.T, c *client.Client, tool string, args map[string]any) (any, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: %v", tool, res.Content)
	}
	text := ""
	if len(res.Content) > 0 {
		text = res.Content[0].(mcp.TextContent).Text
	}
	return res.StructuredContent, text
}

// TestResultsStayUnderTheCap: whatever a tool returns, the response weighs
// at most MaxOutput as JSON, says where it was cut, and carries the same cut
// payload in structuredContent as in content (harnesses show the model one
// or the other).
func TestResultsStayUnderTheCap(t *testing.T) {
	s := New(nil, nil, nil)
	s.MaxOutput = MinMaxOutput
	lines := strings.Repeat("a line of text <&>\n", 100000)
	long := make([]string, 1000)
	for i := range long {
		long[i] = fmt.Sprintf("%d-%s", i, strings.Repeat("\x00", 200))
	}
	globbed := slices.Clone(long)
	ls := slices.Clone(long)
	for name, r := range map[string]result{
		"read":    &ReadResult{Path: "f", TotalLines: 100000, Lines: 100000, Content: lines},
		"oneline": &ReadResult{Path: "f", TotalLines: 1, Lines: 1, Content: strings.Repeat("x", 1<<20)},
		"glob":    &GlobResult{Pattern: "**", Matches: globbed},
		"ls":      &LsResult{Path: "/src", Entries: ls},
		"create":  &CreateResult{SetupOutput: lines},
		"service": &ServiceResult{Action: "logs", Log: lines},
		// bash's output is fitted in the container; the cap holds even
		// when a tampered scanner sends more
		"bash": &BashResult{Stdout: lines, Stderr: lines},
	} {
		switch r := r.(type) {
		case *GlobResult:
			r.list = newList(&r.Matches, false, "")
		case *LsResult:
			r.list = newList(&r.Entries, false, "")
		}
		out := s.shape(r)
		if out.IsError {
			t.Fatalf("%s: an error: %v", name, out.Content)
		}
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(data)+responseSlack > s.MaxOutput {
			t.Errorf("%s: %d bytes and the envelope, over the cap of %d", name, len(data), s.MaxOutput)
		}
		// the payload must use the room: more than a third of the cap in each form
		if w := r.weight(); w < s.MaxOutput/6 {
			t.Errorf("%s: only %d bytes of payload under a cap of %d", name, w, s.MaxOutput)
		}
		text := ""
		for _, c := range out.Content {
			text += c.(mcp.TextContent).Text
		}
		structured, _ := json.Marshal(out.StructuredContent)
		if !strings.Contains(text, "cut") || !strings.Contains(string(structured), "cut") {
			t.Errorf("%s: the text or the structured result does not say it was cut: ...%s", name, text[max(len(text)-200, 0):])
		}
		var back map[string]any
		if err := json.Unmarshal(structured, &back); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"content", "setupOutput", "log", "stdout", "stderr"} {
			if v, ok := back[key].(string); ok && !strings.Contains(text, v) {
				t.Errorf("%s: structuredContent's %s is not the text's", name, key)
			}
		}
		for _, key := range []string{"matches", "entries"} {
			if v, ok := back[key].([]any); ok {
				if len(v) == 0 {
					t.Errorf("%s: no %s left", name, key)
				}
				for _, it := range v {
					if !strings.Contains(text, it.(string)) {
						t.Errorf("%s: %s item %q is not in the text", name, key, it)
					}
				}
			}
		}
	}
	r := &ReadResult{Path: "f", TotalLines: 100000, Lines: 100000, Content: lines}
	s.shape(r)
	if !r.More || !r.Cut || r.Lines == 0 || r.Lines != strings.Count(r.Content, "\n") {
		t.Errorf("read cut to %d lines (more %v, cut %v), content of %d lines", r.Lines, r.More, r.Cut, strings.Count(r.Content, "\n"))
	}
	if want := fmt.Sprintf("read on with offset=%d", r.Lines); !strings.Contains(r.Note, want) {
		t.Errorf("read's note %q does not say %q", r.Note, want)
	}
}
