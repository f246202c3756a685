package standin

import (
	"encoding/json"
	"net/http"
)

// anthropic is the Messages API (POST /v1/messages), as Claude Code calls
// it: the conversation is in messages, a tool call is a tool_use block of an
// assistant message, and its result a tool_result block of the next user
// message.
var anthropic = api{parse: parseAnthropic, reply: replyAnthropic}

type anthropicRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func parseAnthropic(body []byte) (conversation, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return conversation{}, err
	}
	c := conversation{agent: len(req.Tools) > 0}
	for _, m := range req.Messages {
		var blocks []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				c.calls++
			case "tool_result":
				c.outputs = append(c.outputs, textOf(b.Content))
			}
		}
	}
	return c, nil
}

func replyAnthropic(w http.ResponseWriter, _ string, body []byte, t *Turn) error {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return err
	}
	block := map[string]any{"type": "text", "text": Closing}
	stop := "end_turn"
	if t != nil {
		block = map[string]any{"type": "tool_use", "id": "toolu_" + t.Label, "name": t.Tool, "input": t.Args}
		stop = "tool_use"
	}
	usage := map[string]int{"input_tokens": 100, "output_tokens": 10}
	msg := map[string]any{"id": "msg_standin", "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !req.Stream {
		return writeJSON(w, msg)
	}
	// The stream opens the block empty and sends its content as deltas.
	start, delta := map[string]any{"type": "text", "text": ""}, map[string]any{"type": "text_delta", "text": Closing}
	if t != nil {
		start = map[string]any{"type": "tool_use", "id": "toolu_" + t.Label, "name": t.Tool, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": string(t.Args)}
	}
	msg["content"], msg["stop_reason"] = []any{}, nil
	e := newSSE(w)
	e.event("message_start", map[string]any{"type": "message_start", "message": msg})
	e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": start})
	e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": delta})
	e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	e.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 10}})
	e.event("message_stop", map[string]any{"type": "message_stop"})
	return e.err
}
