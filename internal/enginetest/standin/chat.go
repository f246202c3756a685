package standin

import (
	"encoding/json"
	"net/http"
)

// chat is OpenAI's Chat Completions API (POST /v1/chat/completions), as
// opencode calls an OpenAI-compatible provider: a tool call is an entry of
// an assistant message's tool_calls, and its result a message of role tool.
var chat = api{parse: parseChat, reply: replyChat}

type chatRequest struct {
	Model    string            `json:"model"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role      string            `json:"role"`
		Content   json.RawMessage   `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	} `json:"messages"`
}

func parseChat(body []byte) (conversation, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{agent: len(req.Tools) > 0}
	for _, m := range req.Messages {
		c.calls += len(m.ToolCalls)
		if m.Role == "tool" {
			c.outputs = append(c.outputs, textOf(m.Content))
		}
	}
	return c, nil
}

func replyChat(w http.ResponseWriter, _ string, body []byte, t *Turn) error {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	delta := map[string]any{"role": "assistant", "content": Closing}
	finish := "stop"
	if t != nil {
		delta = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_" + t.Label, "type": "function",
			"function": map[string]any{"name": t.Tool, "arguments": string(t.Args)}}}}
		finish = "tool_calls"
	}
	chunk := func(choice map[string]any) map[string]any {
		return map[string]any{"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 0, "model": req.Model, "choices": []any{choice}}
	}
	e := newSSE(w)
	e.event("", chunk(map[string]any{"index": 0, "delta": delta, "finish_reason": nil}))
	e.event("", chunk(map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}))
	last := chunk(nil)
	last["choices"] = []any{}
	last["usage"] = map[string]int{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	e.event("", last)
	e.event("", "[DONE]")
	return e.err
}
