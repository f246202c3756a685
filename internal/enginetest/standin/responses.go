package standin

import (
	"encoding/json"
	"net/http"
)

// responses is OpenAI's Responses API (POST /v1/responses), as Codex calls
// it: the conversation is the items of input, a tool call a function_call
// item (custom_tool_call for a free-form tool such as apply_patch) and its
// result a function_call_output (custom_tool_call_output) item with the
// same call_id.
var responses = api{parse: parseResponses, reply: replyResponses}

type responsesRequest struct {
	Model string            `json:"model"`
	Tools []json.RawMessage `json:"tools"`
	Input []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
}

func parseResponses(body []byte) (conversation, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{agent: len(req.Tools) > 0}
	for _, it := range req.Input {
		switch it.Type {
		case "function_call", "custom_tool_call":
			c.calls++
		case "function_call_output", "custom_tool_call_output":
			c.outputs = append(c.outputs, textOf(it.Output))
		}
	}
	return c, nil
}

func replyResponses(w http.ResponseWriter, _ string, body []byte, t *Turn) error {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	item := map[string]any{"type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": Closing, "annotations": []any{}}}}
	if t != nil {
		item = map[string]any{"type": "function_call", "id": "fc_" + t.Label, "call_id": "call_" + t.Label,
			"name": t.Tool, "arguments": string(t.Args), "status": "completed"}
		if t.Namespace != "" {
			item["namespace"] = t.Namespace
		}
		if t.Freeform() {
			var input string
			if err := json.Unmarshal(t.Args, &input); err != nil {
				return err
			}
			item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + t.Label, "call_id": "call_" + t.Label,
				"name": t.Tool, "input": input, "status": "completed"}
		}
	}
	resp := map[string]any{"id": "resp_standin", "object": "response", "model": req.Model, "status": "in_progress", "output": []any{}}
	e := newSSE(w)
	e.event("response.created", map[string]any{"type": "response.created", "response": resp})
	e.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	e.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	resp["status"], resp["output"] = "completed", []any{item}
	resp["usage"] = map[string]any{"input_tokens": 100, "output_tokens": 10, "total_tokens": 110,
		"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
	e.event("response.completed", map[string]any{"type": "response.completed", "response": resp})
	return e.err
}
