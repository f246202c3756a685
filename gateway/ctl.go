package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// maxBatch bounds the records of one "log" answer.
const maxBatch = 4096

// ServeCtl serves the control socket on l.
func (g *Gateway) ServeCtl(l net.Listener) error {
	return serve(l, nil, nil, func(c net.Conn) {
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		var req control.CtlRequest
		line, err := bufio.NewReaderSize(io.LimitReader(c, maxCtlRequest), 64<<10).ReadBytes('\n')
		if err == nil || errors.Is(err, io.EOF) {
			err = json.Unmarshal(line, &req)
		}
		var resp control.CtlResponse
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

func (g *Gateway) ctl(req control.CtlRequest) control.CtlResponse {
	switch req.Op {
	case "set":
		if req.Policy == nil {
			return control.CtlResponse{Error: "set: no policy"}
		}
		if err := g.SetPolicy(*req.Policy); err != nil {
			return control.CtlResponse{Error: err.Error()}
		}
		p := g.Policy()
		return control.CtlResponse{Policy: &p}
	case "get":
		p := g.Policy()
		return control.CtlResponse{Policy: &p}
	case "log":
		n := req.Max
		if n <= 0 || n > maxBatch {
			n = maxBatch
		}
		b := g.Audit.Since(req.Boot, req.After, n)
		return control.CtlResponse{Batch: &b}
	case "refused":
		if req.Within == "" && req.Boot != "" {
			return control.CtlResponse{Refused: g.Audit.RefusedAfter(control.RefusalMark{Boot: req.Boot, After: req.After})}
		}
		d, err := time.ParseDuration(req.Within)
		if err != nil || d <= 0 {
			return control.CtlResponse{Error: fmt.Sprintf("refused: within %q is not a duration such as 30s (or give -boot B -after N, a mark: the refusals since it)", req.Within)}
		}
		return control.CtlResponse{Refused: g.Audit.Refused(d)}
	case "ready":
		g.open()
		return control.CtlResponse{State: &control.State{Ready: true, Boot: g.Audit.Boot()}}
	case "state":
		return control.CtlResponse{State: &control.State{Ready: g.ready.Load(), Boot: g.Audit.Boot()}}
	case "secrets":
		if req.Secrets == nil {
			info := g.SecretsInfo()
			return control.CtlResponse{Secrets: &info}
		}
		info, err := g.SetSecrets(*req.Secrets)
		if err != nil {
			return control.CtlResponse{Error: "secrets: " + err.Error()}
		}
		return control.CtlResponse{Secrets: &info}
	}
	return control.CtlResponse{Error: fmt.Sprintf("unknown op %q (set, get, log, refused, secrets, ready, state)", printableName(req.Op))}
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
