package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// CtlSocket is the gateway's control socket: an abstract unix socket, which
// exists in the gateway's network namespace only. The sandbox, in a
// namespace of its own, cannot reach it; the host reaches it by running
// `litterbox-gateway ctl` in the gateway's container (docker exec). No file
// names it, so no path on the shared volume can lead to it.
const CtlSocket = "@litterbox-gateway-ctl"

// CtlRequest is one request to the control socket: one JSON line.
type CtlRequest struct {
	// Op is "set" (Policy), "get", "log" (Boot, After, Max) or "refused"
	// (Within).
	Op     string  `json:"op"`
	Policy *Policy `json:"policy,omitempty"`
	Boot   string  `json:"boot,omitempty"`
	After  uint64  `json:"after,omitempty"`
	Max    int     `json:"max,omitempty"`
	// Within is a duration ("30s"): refusals recorded in the last Within.
	Within string `json:"within,omitempty"`
}

// CtlResponse is the answer: one JSON line.
type CtlResponse struct {
	Error   string   `json:"error,omitempty"`
	Policy  *Policy  `json:"policy,omitempty"`
	Batch   *Batch   `json:"batch,omitempty"`
	Refused []Record `json:"refused,omitempty"`
}

// maxBatch bounds the records of one "log" answer.
const maxBatch = 4096

// ServeCtl serves the control socket on l.
func (g *Gateway) ServeCtl(l net.Listener) error {
	return serve(l, nil, nil, func(c net.Conn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		var req CtlRequest
		line, err := bufio.NewReaderSize(io.LimitReader(c, 1<<20), 64<<10).ReadBytes('\n')
		if err == nil || errors.Is(err, io.EOF) {
			err = json.Unmarshal(line, &req)
		}
		var resp CtlResponse
		if err != nil {
			resp.Error = "a malformed request: " + err.Error()
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
	}
	return CtlResponse{Error: fmt.Sprintf("unknown op %q (set, get, log, refused)", req.Op)}
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
