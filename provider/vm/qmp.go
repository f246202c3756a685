package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// qmp is a connection to qemu's machine protocol (QMP) socket of a VM:
// one JSON command a line, answered by a line with "return" or "error"
// (events, lines with "event", come between and are skipped).
type qmp struct {
	c net.Conn
	r *bufio.Reader
}

// dialQMP connects to sock and leaves the greeting's capability
// negotiation done.
func dialQMP(ctx context.Context, sock string) (*qmp, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	q := &qmp{c: c, r: bufio.NewReader(c)}
	if _, err := q.line(); err != nil { // the greeting
		c.Close()
		return nil, err
	}
	if _, err := q.do("qmp_capabilities", nil); err != nil {
		c.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmp) close() { q.c.Close() }

func (q *qmp) line() (map[string]json.RawMessage, error) {
	_ = q.c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	data, err := q.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("qemu's QMP: %w", err)
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, fmt.Errorf("qemu's QMP said %q: %w", data, err)
	}
	return msg, nil
}

// do runs one command and returns its "return".
func (q *qmp) do(cmd string, args any) (json.RawMessage, error) {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	data, _ := json.Marshal(req)
	if _, err := q.c.Write(append(data, '\n')); err != nil {
		return nil, fmt.Errorf("qemu's QMP: %w", err)
	}
	for {
		msg, err := q.line()
		if err != nil {
			return nil, err
		}
		if e, ok := msg["error"]; ok {
			return nil, fmt.Errorf("qemu's QMP refused %s: %s", cmd, e)
		}
		if r, ok := msg["return"]; ok {
			return r, nil
		}
	}
}

// status is the VM's run state as QMP's query-status says it ("running",
// "paused", "inmigrate", "postmigrate"...).
func (q *qmp) status() (string, error) {
	r, err := q.do("query-status", nil)
	if err != nil {
		return "", err
	}
	var st struct{ Status string }
	err = json.Unmarshal(r, &st)
	return st.Status, err
}

// migration is QMP's query-migrate status ("active", "completed",
// "failed"...), with the error of a failed one.
func (q *qmp) migration() (string, string, error) {
	r, err := q.do("query-migrate", nil)
	if err != nil {
		return "", "", err
	}
	var st struct {
		Status    string
		ErrorDesc string `json:"error-desc"`
	}
	err = json.Unmarshal(r, &st)
	return st.Status, st.ErrorDesc, err
}
