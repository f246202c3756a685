package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// manyGroup is a group of calls started by mcpmany.
type manyGroup struct {
	c         *scriptClient
	calls     []*manyCall
	cancelled bool
}

type manyCall struct {
	req    mcp.CallToolRequest
	cancel context.CancelFunc
	done   chan struct{}
	res    *mcp.CallToolResult
	err    error
	took   time.Duration
}

var manyGroups sync.Map // bgKey -> *manyGroup

var pings atomic.Int64

func manyNamed(ts *testscript.TestScript, name string) *manyGroup {
	v, ok := manyGroups.Load(bgKey{ts, name})
	if !ok {
		ts.Fatalf("no group of calls %q (start it with mcpmany)", name)
	}
	return v.(*manyGroup)
}

func cmdMCPMany(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: mcpmany NAME N TOOL JSONARGS")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	c := mcpClient(ts)
	g := &manyGroup{c: c}
	manyGroups.Store(bgKey{ts, args[0]}, g)
	ts.Defer(func() {
		for _, call := range g.calls {
			call.cancel()
		}
		manyGroups.Delete(bgKey{ts, args[0]})
	})
	for i := 1; i <= n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		call := &manyCall{req: toolRequest(ts, args[2], strings.ReplaceAll(args[3], "{I}", strconv.Itoa(i)), ""), cancel: cancel, done: make(chan struct{})}
		g.calls = append(g.calls, call)
		go func() {
			defer close(call.done)
			start := time.Now()
			call.res, call.err = c.CallTool(ctx, call.req)
			call.took = time.Since(start)
		}()
	}
	// Wait for the traced stdin to hold every request.
	deadline := time.Now().Add(time.Minute)
	for {
		ids := requestIDs(ts, c)
		missing := 0
		for _, call := range g.calls {
			if _, ok := ids[argsKey(ts, call.req.Params.Arguments)]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%d of the %d requests were not sent within a minute", missing, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// argsKey is the canonical JSON of a call's arguments.
func argsKey(ts *testscript.TestScript, args any) string {
	data, err := json.Marshal(args)
	ts.Check(err)
	var v any
	ts.Check(json.Unmarshal(data, &v))
	data, err = json.Marshal(v)
	ts.Check(err)
	return string(data)
}

// requestIDs maps the arguments (argsKey) of every tools/call in the traced
// stdin to the request's JSON-RPC id.
func requestIDs(ts *testscript.TestScript, c *scriptClient) map[string]string {
	data, err := os.ReadFile(c.stdinLog)
	ts.Check(err)
	ids := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments any `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.Method != "tools/call" {
			continue
		}
		ids[argsKey(ts, m.Params.Arguments)] = string(m.ID)
	}
	return ids
}

// responseIDs are the ids of the responses in the traced stdout.
func responseIDs(ts *testscript.TestScript, c *scriptClient) map[string]bool {
	data, err := os.ReadFile(c.stdoutLog)
	ts.Check(err)
	ids := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == "" && len(m.ID) > 0 {
			ids[string(m.ID)] = true
		}
	}
	return ids
}

// cmdMCPManyCancel is the script command mcpmanycancel (scriptcmds_test.go).
func cmdMCPManyCancel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpmanycancel NAME")
	}
	g := manyNamed(ts, args[0])
	for i, call := range g.calls {
		select {
		case <-call.done:
			ts.Fatalf("call %s-%d had returned before its cancel: %v", args[0], i+1, call.err)
		default:
		}
	}
	g.cancelled = true
	for _, call := range g.calls {
		call.cancel()
	}
	for _, call := range g.calls {
		<-call.done
	}
}

// cmdMCPManyWait is the script command mcpmanywait (scriptcmds_test.go).
func cmdMCPManyWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcpmanywait NAME")
	}
	g := manyNamed(ts, args[0])
	if g.cancelled {
		ids := requestIDs(ts, g.c)
		sent := responseIDs(ts, g.c)
		n := 0
		for _, call := range g.calls {
			id, ok := ids[argsKey(ts, call.req.Params.Arguments)]
			if !ok {
				ts.Fatalf("the traced requests hold no call with arguments %v", call.req.Params.Arguments)
			}
			if sent[id] {
				n++
			}
		}
		fmt.Fprintf(ts.Stdout(), "cancelled: %d\nresponses to cancelled: %d\n", len(g.calls), n)
		return
	}
	deadline := time.After(5 * time.Minute)
	answered, toolErrors, slowest := 0, 0, time.Duration(0)
	for i, call := range g.calls {
		select {
		case <-call.done:
		case <-deadline:
			ts.Fatalf("call %s-%d still running after 5 minutes", args[0], i+1)
		}
		if call.err != nil {
			fmt.Fprintf(ts.Stderr(), "call %s-%d: %v\n", args[0], i+1, call.err)
			continue
		}
		answered++
		if call.res.IsError {
			toolErrors++
			fmt.Fprintf(ts.Stderr(), "call %s-%d: %s\n", args[0], i+1, resultText(call.res))
		}
		slowest = max(slowest, call.took)
	}
	fmt.Fprintf(ts.Stdout(), "answered: %d\ntool errors: %d\n", answered, toolErrors)
	fmt.Fprintf(ts.Stderr(), "slowest answer: %.1fs after its request\n", slowest.Seconds())
}

// cmdMCPWithin is the script command mcpwithin (scriptcmds_test.go).
func cmdMCPWithin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || (args[1] != "ping") != (len(args) == 3) {
		ts.Fatalf("usage: mcpwithin SECONDS TOOL [JSONARGS]")
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	ts.Check(err)
	c := mcpClient(ts)
	limit := time.Duration(secs * float64(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	if args[1] == "ping" {
		// A raw ping: mcp-go's client sends none to a server that speaks
		// the 2026-07-28 protocol, which dropped ping; clients of the
		// earlier versions (most harnesses) send them.
		pings.Add(1)
		var resp *transport.JSONRPCResponse
		resp, err = c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(fmt.Sprintf("ping-%d", pings.Load())), Method: "ping"})
		if err == nil && resp.Error != nil {
			ts.Fatalf("ping answered with an error: %s", resp.Error.Message)
		}
	} else {
		var res *mcp.CallToolResult
		res, err = c.CallTool(ctx, toolRequest(ts, args[1], args[2], ""))
		if err == nil && res.IsError {
			ts.Fatalf("%s failed: %s", args[1], resultText(res))
		}
	}
	took := time.Since(start)
	if err != nil {
		ts.Fatalf("%s did not answer within %s: %v", args[1], limit, err)
	}
	fmt.Fprintf(ts.Stderr(), "%s answered in %.2fs\n", args[1], took.Seconds())
}
