// Package standin stands in for the model APIs that agent harnesses call
// (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini), so a
// test can run a real harness against `litterbox mcp` offline. The model's
// part is a script of tool calls, one a turn, then a closing text; every
// request is recorded, and Results reads back from the record what the
// harness gave the model as each tool's result, which is what the tests are
// about: a harness may show the model something other than what the MCP
// server sent.
//
// The server keeps no session state: the turn it answers is the number of
// tool calls already in the request's conversation, so retries, side
// requests (titles, routing, token counts) and a harness's own bookkeeping
// do not move the script on.
package standin

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
)

// Turn is one tool call the model makes.
type Turn struct {
	// Label names the call in a test's assertions and report.
	Label string
	// Tool is the tool's name as the harness gave it to the model.
	Tool string
	// Namespace is Codex's: it offers an MCP server's tools as a namespace
	// (mcp__litterbox), and a call names it beside the tool.
	Namespace string
	// Args are the call's arguments, a JSON object; or, for a tool that
	// takes free-form text (Codex's apply_patch, a "custom" tool of the
	// Responses API), a JSON string: that text.
	Args json.RawMessage
}

// Freeform tells a call of a free-form tool: its Args are a JSON string.
func (t Turn) Freeform() bool { return strings.HasPrefix(string(t.Args), `"`) }

// Closing is what the model says after the last turn, ending the session.
const Closing = "Done."

// Result is one tool call of a recorded session and what the harness gave
// the model as its result.
type Result struct {
	Turn
	// Output is the result's text as the model got it: the harness's
	// rendering of the MCP result (JSON, a text block, or both).
	Output string
}

// Server is a running stand-in.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT.
	URL string

	turns  []Turn
	http   *httptest.Server
	mu     sync.Mutex // serialises the record's lines
	record *os.File
}

// record is one line of the record: a request as it came.
type record struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// Key is the API key the request carried (x-api-key, Authorization:
	// Bearer, x-goog-api-key): what a test checks the harness sent, or
	// what reached the model API past a gateway that adds it.
	Key  string          `json:"key,omitempty"`
	Body json.RawMessage `json:"body,omitempty"`
}

// conversation is what a request says of the session so far.
type conversation struct {
	// agent is true for the agent's own requests, which offer tools; a
	// harness's side requests (a title, a routing decision) offer none.
	agent bool
	// calls is the number of tool calls the model has made.
	calls int
	// outputs are the results the harness gave the model for them, in
	// order.
	outputs []string
}

// api is one wire protocol: how its requests tell the conversation, and how
// it streams a turn.
type api struct {
	parse func(body []byte) (conversation, error)
	// reply answers with t, or with the closing text when t is nil.
	reply func(w http.ResponseWriter, path string, body []byte, t *Turn) error
}

// apiOf picks the protocol from a request's path; false for a path of none.
func apiOf(path string) (api, bool) {
	switch {
	case path == "/v1/messages":
		return anthropic, true
	case path == "/v1/responses":
		return responses, true
	case path == "/v1/chat/completions":
		return chat, true
	case strings.HasPrefix(path, "/v1beta/models/"):
		return gemini, true
	}
	return api{}, false
}

// Start serves turns on a free port of 127.0.0.1, appending each request to
// the file recordPath as a JSON line.
func Start(turns []Turn, recordPath string) (*Server, error) {
	return start(turns, recordPath, nil, nil)
}

// StartTLS serves turns over HTTPS on l (an address a sandbox's gateway
// reaches) with cert, as Start does; URL is https://HOST:PORT, HOST the
// certificate's first address.
func StartTLS(turns []Turn, recordPath string, l net.Listener, cert tls.Certificate) (*Server, error) {
	return start(turns, recordPath, l, &tls.Config{Certificates: []tls.Certificate{cert}})
}

func start(turns []Turn, recordPath string, l net.Listener, cfg *tls.Config) (*Server, error) {
	f, err := os.OpenFile(recordPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	s := &Server{turns: turns, record: f}
	if l == nil {
		s.http = httptest.NewServer(http.HandlerFunc(s.serve))
		s.URL = s.http.URL
		return s, nil
	}
	s.http = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}, TLS: cfg}
	s.http.StartTLS()
	s.URL = s.http.URL
	return s, nil
}

// Close stops the server and closes the record.
func (s *Server) Close() error {
	s.http.Close()
	return s.record.Close()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := record{Method: r.Method, Path: r.URL.Path, Key: requestKey(r)}
	if json.Valid(body) {
		rec.Body = body
	}
	s.mu.Lock()
	// Unescaped, so the record reads as the harness sent it (< not \u003c).
	enc := json.NewEncoder(s.record)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(rec)
	s.mu.Unlock()

	if isCountTokens(r.URL.Path) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"input_tokens": 100}`)
		return
	}
	a, ok := apiOf(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		// Whatever else a harness asks for (an update check, a package
		// registry) is recorded and refused: the test runs offline.
		http.Error(w, `{"error": {"message": "not served by the stand-in"}}`, http.StatusNotFound)
		return
	}
	c, err := a.parse(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var t *Turn
	if c.agent && c.calls < len(s.turns) {
		t = &s.turns[c.calls]
	}
	if err := a.reply(w, r.URL.Path, body, t); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// Results reads the record at recordPath and returns each of turns with the
// result the harness gave the model for it, taken from the agent's request
// that holds the most of them (the last: each request carries the whole
// conversation). A turn the harness never answered has no Result.
func Results(recordPath string, turns []Turn) ([]Result, error) {
	var best []string
	err := readRecord(recordPath, func(rec record) error {
		a, ok := apiOf(rec.Path)
		if !ok || rec.Body == nil {
			return nil
		}
		c, err := a.parse(rec.Body)
		if err != nil {
			return fmt.Errorf("%s: %w", rec.Path, err)
		}
		if c.agent && len(c.outputs) >= len(best) {
			best = c.outputs
		}
		return nil
	})
	var rs []Result
	for i, out := range best {
		if i < len(turns) {
			rs = append(rs, Result{Turn: turns[i], Output: out})
		}
	}
	return rs, err
}

// Refused lists the requests of the record at recordPath that the stand-in
// does not serve ("GET /npm/@opencode-ai/plugin"): what the harness tried to
// reach beyond the model.
func Refused(recordPath string) ([]string, error) {
	var refused []string
	err := readRecord(recordPath, func(rec record) error {
		if _, ok := apiOf(rec.Path); !ok && !isCountTokens(rec.Path) {
			refused = append(refused, rec.Method+" "+rec.Path)
		}
		return nil
	})
	return refused, err
}

// requestKey is the API key r carries, in whichever header its API puts it.
func requestKey(r *http.Request) string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	k, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return k
}

// Keys lists the API keys the requests of the record at recordPath
// carried, each once, in the order first seen.
func Keys(recordPath string) ([]string, error) {
	var keys []string
	err := readRecord(recordPath, func(rec record) error {
		if rec.Key != "" && !slices.Contains(keys, rec.Key) {
			keys = append(keys, rec.Key)
		}
		return nil
	})
	return keys, err
}

func readRecord(path string, each func(record) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if err := each(rec); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// isCountTokens tells Claude Code's token counts, answered with any count.
func isCountTokens(path string) bool { return path == "/v1/messages/count_tokens" }

// ParseTurns reads a script of turns, one a line: LABEL TOOL ARGS,
// separated by spaces, ARGS a JSON object (the rest of the line), or a JSON
// string for a free-form tool (served by the Responses API only); a TOOL of
// the form NAMESPACE.NAME is called in that namespace. Blank lines and lines
// starting with # are skipped.
func ParseTurns(script string) ([]Turn, error) {
	var turns []Turn
	seen := map[string]bool{}
	for i, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		label, rest, _ := strings.Cut(line, " ")
		tool, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
		args = strings.TrimSpace(args)
		if tool == "" || !(strings.HasPrefix(args, "{") || strings.HasPrefix(args, `"`)) || !json.Valid([]byte(args)) {
			return nil, fmt.Errorf("line %d: want LABEL TOOL {JSON ARGS} or LABEL TOOL \"FREE-FORM INPUT\", got %q", i+1, line)
		}
		if seen[label] {
			return nil, fmt.Errorf("line %d: label %q used twice", i+1, label)
		}
		seen[label] = true
		t := Turn{Label: label, Tool: tool, Args: json.RawMessage(args)}
		if ns, name, ok := strings.Cut(tool, "."); ok {
			t.Namespace, t.Tool = ns, name
		}
		turns = append(turns, t)
	}
	return turns, nil
}

// sse writes server-sent events, flushing after each so the harness sees a
// stream as the real APIs send it.
type sse struct {
	w   http.ResponseWriter
	err error
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w}
}

// event writes one event; name "" leaves out the event line (Gemini's and
// Chat Completions' streams have none).
func (e *sse) event(name string, data any) {
	if e.err != nil {
		return
	}
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	if s, ok := data.(string); ok {
		fmt.Fprintf(&b, "data: %s\n\n", s)
	} else {
		j, err := json.Marshal(data)
		if err != nil {
			e.err = err
			return
		}
		fmt.Fprintf(&b, "data: %s\n\n", j)
	}
	_, e.err = e.w.Write(b.Bytes())
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

// writeJSON answers a request that did not ask for a stream.
func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// textOf joins the text of a result given as a string or as text blocks
// ({"type": "text", "text": ...}, as Anthropic's and OpenAI's APIs allow).
// Other blocks (Claude Code's tool_reference) are shown as the JSON they
// are.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var blocks []block
	// Codex sends its own parts as input_text.
	isText := func(b block) bool { return b.Type == "text" || b.Type == "input_text" }
	if json.Unmarshal(raw, &blocks) != nil || !slices.ContainsFunc(blocks, isText) || slices.ContainsFunc(blocks, func(b block) bool { return !isText(b) }) {
		return string(raw)
	}
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}
