package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/policy"
)

// CtlSocket is the gateway's control socket: an abstract unix socket, which
// exists in the gateway's network namespace only. The sandbox, in a
// namespace of its own, cannot reach it; the host reaches it by running
// `litterbox-gateway ctl` in the gateway's container (docker exec). No file
// names it, so no path on the shared volume can lead to it.
const CtlSocket = "@litterbox-gateway-ctl"

// CtlRequest is one request to the control socket: one JSON line.
type CtlRequest struct {
	// Op is "set" (Policy), "get", "log" (Boot, After, Max), "refused"
	// (Within), "secrets" (Secrets to set them; without, to read what
	// the gateway holds, values left out), "ready" (the host gave the
	// gateway all it should hold: it opens its sockets to the sandbox) or
	// "state".
	Op     string         `json:"op"`
	Policy *policy.Policy `json:"policy,omitempty"`
	// Secrets hold values: the request travels on the control socket
	// only, which the sandbox cannot reach, from `ctl secrets`'s stdin.
	Secrets *Secrets `json:"secrets,omitempty"`
	Boot    string   `json:"boot,omitempty"`
	After   uint64   `json:"after,omitempty"`
	Max     int      `json:"max,omitempty"`
	// Within is a duration ("30s"): refusals recorded in the last Within.
	Within string `json:"within,omitempty"`
}

// CtlResponse is the answer: one JSON line.
type CtlResponse struct {
	Error   string         `json:"error,omitempty"`
	Policy  *policy.Policy `json:"policy,omitempty"`
	Batch   *Batch         `json:"batch,omitempty"`
	Refused []Record       `json:"refused,omitempty"`
	// Secrets are the secrets the gateway holds, without values, and its
	// CA's certificate.
	Secrets *SecretsInfo `json:"secrets,omitempty"`
	// State answers "ready" and "state".
	State *State `json:"state,omitempty"`
}

// State is whether the gateway serves the sandbox: Ready once the host
// said it holds the policy and the secrets the user set (`ctl ready`),
// in this run (Boot).
type State struct {
	Ready bool   `json:"ready"`
	Boot  string `json:"boot"`
}

// maxBatch bounds the records of one "log" answer.
const maxBatch = 4096

// ServeCtl serves the control socket on l.
func (g *Gateway) ServeCtl(l net.Listener) error {
	return serve(l, nil, nil, func(c net.Conn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		var req CtlRequest
		line, err := bufio.NewReaderSize(io.LimitReader(c, maxCtlRequest), 64<<10).ReadBytes('\n')
		if err == nil || errors.Is(err, io.EOF) {
			err = json.Unmarshal(line, &req)
		}
		var resp CtlResponse
		if err != nil {
			// The request may hold values: say where it is malformed,
			// never what it holds.
			resp.Error = "a malformed request: " + jsonError(err)
		} else {
			resp = g.ctl(req)
		}
		b, _ := json.Marshal(resp)
		_, _ = c.Write(append(b, '\n'))
	})
}

func (g *Gateway) ctl(req CtlRequest) CtlResponse {
	switch req.Op {
	case "set":
		if req.Policy == nil {
			return CtlResponse{Error: "set: no policy"}
		}
		if err := g.SetPolicy(*req.Policy); err != nil {
			return CtlResponse{Error: err.Error()}
		}
		p := g.Policy()
		return CtlResponse{Policy: &p}
	case "get":
		p := g.Policy()
		return CtlResponse{Policy: &p}
	case "log":
		n := req.Max
		if n <= 0 || n > maxBatch {
			n = maxBatch
		}
		b := g.Audit.Since(req.Boot, req.After, n)
		return CtlResponse{Batch: &b}
	case "refused":
		d, err := time.ParseDuration(req.Within)
		if err != nil || d <= 0 {
			return CtlResponse{Error: fmt.Sprintf("refused: within %q is not a duration such as 30s", req.Within)}
		}
		return CtlResponse{Refused: g.Audit.Refused(d)}
	case "ready":
		g.ready.Store(true)
		if g.OnReady != nil {
			g.OnReady()
		}
		return CtlResponse{State: &State{Ready: true, Boot: g.Audit.Boot()}}
	case "state":
		return CtlResponse{State: &State{Ready: g.ready.Load(), Boot: g.Audit.Boot()}}
	case "secrets":
		if req.Secrets == nil {
			info := g.SecretsInfo()
			return CtlResponse{Secrets: &info}
		}
		info, err := g.SetSecrets(*req.Secrets)
		if err != nil {
			return CtlResponse{Error: "secrets: " + err.Error()}
		}
		return CtlResponse{Secrets: &info}
	}
	return CtlResponse{Error: fmt.Sprintf("unknown op %q (set, get, log, refused, secrets, ready, state)", printableName(req.Op))}
}

// maxCtlRequest bounds a control request: secrets with their roots fit.
const maxCtlRequest = 4 << 20

// jsonError describes a JSON decoding error by where it is, never by the
// text it is in.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s, not a %s", te.Field, te.Value, te.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the JSON ends early"
	}
	return "invalid JSON"
}

// Ctl sends req to the control socket at addr and returns the answer.
func Ctl(addr string, req CtlRequest) (CtlResponse, error) {
	c, err := net.DialTimeout("unix", addr, 5*time.Second)
	if err != nil {
		return CtlResponse{}, fmt.Errorf("the gateway does not answer on its control socket: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return CtlResponse{}, err
	}
	var resp CtlResponse
	if err := json.NewDecoder(io.LimitReader(c, 64<<20)).Decode(&resp); err != nil {
		return CtlResponse{}, fmt.Errorf("read the gateway's answer: %w", err)
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}
