package standin

import (
	"encoding/json"
	"net/http"
	"strings"
)

// gemini is the Gemini API (POST /v1beta/models/MODEL:streamGenerateContent
// or :generateContent), as Gemini CLI calls it: the conversation is in
// contents, a tool call a functionCall part of a model turn and its result a
// functionResponse part of the next user turn.
var gemini = api{parse: parseGemini, reply: replyGemini}

type geminiRequest struct {
	Tools    []json.RawMessage `json:"tools"`
	Contents []struct {
		Parts []struct {
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse *struct {
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
}

func parseGemini(body []byte) (conversation, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{agent: len(req.Tools) > 0}
	for _, m := range req.Contents {
		for _, p := range m.Parts {
			if p.FunctionCall != nil {
				c.calls++
			}
			if p.FunctionResponse != nil {
				c.outputs = append(c.outputs, geminiOutput(p.FunctionResponse.Response))
			}
		}
	}
	return c, nil
}

func replyGemini(w http.ResponseWriter, path string, _ []byte, t *Turn) error {
	part := map[string]any{"text": Closing}
	if t != nil {
		part = map[string]any{"functionCall": map[string]any{"id": "call_" + t.Label, "name": t.Tool, "args": t.Args}}
	}
	resp := map[string]any{
		"candidates":    []any{map[string]any{"index": 0, "finishReason": "STOP", "content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]int{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
	}
	if !strings.HasSuffix(path, ":streamGenerateContent") {
		return writeJSON(w, resp)
	}
	e := newSSE(w)
	e.event("", resp)
	return e.err
}

// geminiOutput is a functionResponse's response as text: Gemini CLI gives
// the model a tool's text as {"output": TEXT} and a failure as
// {"error": TEXT}; anything else is shown as the JSON it is.
func geminiOutput(raw json.RawMessage) string {
	var r map[string]json.RawMessage
	if json.Unmarshal(raw, &r) == nil && len(r) == 1 {
		for _, k := range []string{"output", "error"} {
			var s string
			if json.Unmarshal(r[k], &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}
