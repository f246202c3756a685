// Package control is the gateway's control protocol and the layout of the
// directory it shares with its sandbox: what the host (package egress)
// sends to `litterbox-gateway ctl` in the gateway's container and what it
// answers (the policy, the record of connections and the refusals table,
// the secrets and the CA, the gateway's state), and the files on the shared
// volume the host and the sandbox's relay look for. The program (package
// gateway) and the host both import it; the host links none of the
// program.
package control

import (
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
	// (Within, or Boot and After: a RefusalMark), "secrets" (Secrets to set them; without, to read what
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

// The shared directory (a tmpfs volume both containers mount, owned by the
// gateway's user and the sandbox user's group, mode 1770: sticky) holds:
//
//	proxy.sock       the gateway's HTTP proxy: the relay hands it connections
//	dns.sock         the gateway's resolver, DNS messages framed as over TCP
//	ports/PORT.sock  the relay's way into the sandbox's 127.0.0.1:PORT
//	litterbox-relay  the program, for the relay (the gateway runs its own copy)
//	relay.ready      made once the relay listens
//	refused.log    the gateway's refusals, one JSON line each (the gateway's RefusalLog)
//	sandbox.name   the sandbox's name, written by a pooled sandbox's setup
//	open           a new sandbox's one-time token, until its gateway took it (OpenFile)
//
// The sandbox can make files there, but not write, remove or replace the
// gateway's (refused.log, mode 0640; the relay): nothing there is trusted
// by the gateway, which only ever takes a TCP connection or a DNS message
// from it, the name in sandbox.name, which it only repeats to the
// sandbox (NameFile), and the token in open, which opens it only when its
// SHA-256 is the one the host started it with.
const (
	ProxySocket  = "proxy.sock"
	DNSSocket    = "dns.sock"
	PortsDir     = "ports"
	RefusalsFile = "refused.log"
)

// NameFile is where the setup of a sandbox claimed from the warm pool
// writes the sandbox's name: its gateway was made before the name was
// known, with a policy that names no sandbox, and takes the name from this
// file for what a refusal tells the sandbox (the command the user can run).
// The sandbox can write the file, so the name is never part of a decision,
// a record or a certificate: a sandbox that writes another name only
// misleads itself.
const NameFile = "sandbox.name"

// ReadyFile is made in the shared directory once the relay listens: what
// the host waits for before a setup command that may use the network.
const ReadyFile = "relay.ready"

// OpenFile is where a new sandbox's copy step writes the one-time token
// whose SHA-256 its gateway was started with (serve -open-sum): the
// gateway opens its sockets to the sandbox once it reads it, without
// waiting for `ctl ready`, and removes it. Only the host and that first
// step (which runs before any of the sandbox's own code) know the token,
// and the gateway takes it once per start: a gateway started again
// outside litterbox, whose argument is the same, finds no token and waits
// for `ctl ready` as before.
const OpenFile = "open"
