package mcp

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// network-request: the agent asks the user for a host; only the user
// answers (docs/egress.md).

const networkRequestDesc = `Ask the user to let a sandbox reach a host its network gateway refuses (bash's refusedHosts names those). This changes nothing by itself: the request waits for the user, who approves or refuses it (litterbox net NAME approve|refuse HOST). Call it again for the same host to learn the answer; once approved, the sandbox's next connection to it goes through.
A host the policy never gives on request (this machine, the engine, cloud metadata, private ranges, a host the user denied) is refused at once, with why. Give the reason the user needs to decide: what the host is for in your task.`

// NetworkRequestArgs are network-request's arguments.
type NetworkRequestArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Host    string `json:"host" jsonschema:"The host to reach: a name (pypi.org), a name and a port (git.example.net:8443) or an address; a name without a port means ports 80 and 443"`
	Reason  string `json:"reason,omitempty" jsonschema:"Why the task needs it, for the user to decide (at most 512 bytes kept)"`
}

// NetworkRequestResult is network-request's result.
type NetworkRequestResult struct {
	plain
	Host  string `json:"host" jsonschema:"The host asked for, as the policy writes it"`
	State string `json:"state" jsonschema:"pending (the user has not answered), approved or refused"`
	// By is who answered.
	By string `json:"by,omitempty"`
	// Why says why it was refused at once.
	Why     string `json:"why,omitempty"`
	sandbox string
}

func (r *NetworkRequestResult) blocks() []string {
	switch r.State {
	case sandbox.RequestApproved:
		return []string{fmt.Sprintf("Approved: sandbox %s may reach %s, from its next connection on.", r.sandbox, r.Host)}
	case sandbox.RequestRefused:
		why := "the user refused it"
		if r.Why != "" {
			why = r.Why
		}
		return []string{fmt.Sprintf("Refused: sandbox %s may not reach %s (%s). Do the task without it, or tell the user why it is needed.", r.sandbox, r.Host, why)}
	}
	return []string{fmt.Sprintf("Pending: your request for %s waits for the user, who answers with `litterbox net %s approve|refuse %s`. Call network-request again for %s to learn the answer; until approved, connections to it are refused.", r.Host, r.sandbox, r.Host, r.Host)}
}

func (s *Server) networkRequest(ctx context.Context, a NetworkRequestArgs) (*NetworkRequestResult, error) {
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*NetworkRequestResult, error) {
		q, err := s.sandboxes.AskNet(ctx, h.Repo, h.Slug, a.Host, a.Reason)
		if err != nil {
			return nil, err
		}
		return &NetworkRequestResult{Host: q.Host, State: q.State, By: q.By, Why: q.Why, sandbox: h.Slug}, nil
	})
}
