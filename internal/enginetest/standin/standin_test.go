package standin

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata records are requests the harnesses sent (harness_*.txtar on
// a litterbox whose structuredContent held only a result's metadata, which
// is all some harnesses show the model), each the fourth of its agent:
// three tool calls made and answered. Tool lists and long texts are shortened.

func TestResultsFromRecords(t *testing.T) {
	for _, tc := range []struct {
		record string
		want   [3]string // a piece of each output
	}{
		// Claude Code: ToolSearch's tool_reference blocks, then
		// structuredContent as JSON.
		{"anthropic", [3]string{`"tool_name": "mcp__litterbox__read"`, `"branch":"litterbox/agent"`, `"totalLines":6`}},
		// Codex: Wall time, then structuredContent as JSON.
		{"responses", [3]string{"Output:\n{\"sandbox\":\"agent\"", `"totalLines":6`, `"created":true`}},
		// Gemini CLI: content's text, from {"output": ...}.
		{"gemini", [3]string{"setup ran", "charlie\ndelta\n", "Created todo.txt (9 bytes)"}},
		// opencode: content's text.
		{"chat", [3]string{"setup ran", "[litterbox: lines 3-4 of 6; read on with offset=4]", "Created todo.txt (9 bytes)"}},
	} {
		t.Run(tc.record, func(t *testing.T) {
			turns := []Turn{{Label: "a"}, {Label: "b"}, {Label: "c"}, {Label: "d"}}
			rs, err := Results(filepath.Join("testdata", tc.record+".jsonl"), turns)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 3 {
				t.Fatalf("%d results, want 3: %+v", len(rs), rs)
			}
			for i, r := range rs {
				if r.Label != turns[i].Label || !strings.Contains(r.Output, tc.want[i]) {
					t.Errorf("result %d: %s %q, want %s holding %q", i, r.Label, r.Output, turns[i].Label, tc.want[i])
				}
			}
		})
	}
}

// TestServe checks that each API answers with the turn its conversation
// has reached, then the closing text, and a side request (no tools) with
// the closing text; and that every request is recorded.
func TestServe(t *testing.T) {
	turns, err := ParseTurns(`
# a comment
first   read       {"path": "a b.txt"}
second  ns.read    {"path":"c.txt"}
third   apply_patch "*** Begin Patch\n*** End Patch\n"
`)
	if err != nil {
		t.Fatal(err)
	}
	if turns[1].Namespace != "ns" || turns[1].Tool != "read" || string(turns[0].Args) != `{"path": "a b.txt"}` || !turns[2].Freeform() || turns[1].Freeform() {
		t.Fatalf("ParseTurns: %+v", turns)
	}
	record := filepath.Join(t.TempDir(), "record.jsonl")
	s, err := Start(turns, record)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		path, body, want string
	}{
		{"/v1/messages", `{"stream":true,"tools":[{}],"messages":[{"role":"user","content":"hi"}]}`, `"name":"read"`},
		{"/v1/messages", `{"stream":true,"tools":[{}],"messages":[{"role":"assistant","content":[{"type":"tool_use"}]}]}`, `"partial_json":"{\"path\":\"c.txt\"}"`},
		{"/v1/messages", `{"stream":false,"messages":[{"role":"user","content":"title?"}]}`, `"text":"Done."`},
		{"/v1/responses", `{"tools":[{}],"input":[{"type":"function_call"},{"type":"function_call_output","output":"x"}]}`, `"namespace":"ns"`},
		// Codex's free-form apply_patch: a custom tool call, its input the text
		{"/v1/responses", `{"tools":[{}],"input":[{"type":"function_call"},{"type":"function_call"}]}`, `{"call_id":"call_third","id":"ctc_third","input":"*** Begin Patch\n*** End Patch\n","name":"apply_patch","status":"completed","type":"custom_tool_call"}`},
		{"/v1/responses", `{"tools":[{}],"input":[{"type":"function_call"},{"type":"function_call"},{"type":"custom_tool_call"},{"type":"custom_tool_call_output","output":"ok"}]}`, `"text":"Done."`},
		{"/v1/chat/completions", `{"stream":true,"tools":[{}],"messages":[]}`, `"arguments":"{\"path\": \"a b.txt\"}"`},
		{"/v1beta/models/m:streamGenerateContent", `{"tools":[{}],"contents":[]}`, `data: {"candidates"`},
		{"/v1beta/models/m:generateContent", `{"contents":[]}`, `"text":"Done."`},
	} {
		resp, err := http.Post(s.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), tc.want) {
			t.Errorf("POST %s %s: %d %s\nwant it to hold %s", tc.path, tc.body, resp.StatusCode, got, tc.want)
		}
	}
	if resp, err := http.Get(s.URL + "/npm/left-pad"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /npm/left-pad: %v %v, want 404", resp, err)
	}
	refused, err := Refused(record)
	if err != nil || len(refused) != 1 || refused[0] != "GET /npm/left-pad" {
		t.Errorf("Refused = %q, %v", refused, err)
	}
}

func TestParseTurnsErrors(t *testing.T) {
	for _, bad := range []string{"label tool", "label tool [1]", "label tool {bad", "a t {}\na t {}"} {
		if _, err := ParseTurns(bad); err == nil {
			t.Errorf("ParseTurns(%q) succeeded", bad)
		}
	}
}
