package sandbox

import (
	"context"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// NetStore is where sandbox slug's record of connections is kept on the
// host (collected from its gateway; `litterbox net log`).
func NetStore(gitDir, slug string) egress.Store { return netgate.Store(gitDir, slug) }

// NetStatus is a sandbox's way out: its gateway's policy and recent
// connection attempts (docs/egress.md).
type NetStatus = netgate.Status

// Net is sandbox name's policy and its last n connection attempts (all
// kept for n <= 0), collected from its gateway first.
func (s *Sandboxes) Net(ctx context.Context, r *api.Repo, name string, n int) (*NetStatus, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	return s.gate.Show(ctx, r.Git.CommonDir, slug, n)
}

// NetChange allows (allow) or denies entry for sandbox name, at once in
// its running gateway and in its record. Only the user calls it: no MCP
// tool does. live is false when the gateway did not take it now.
func (s *Sandboxes) NetChange(ctx context.Context, r *api.Repo, name, entry string, allow bool) (st *NetStatus, live bool, err error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, false, err
	}
	start := time.Now()
	st, live, err = s.gate.Change(ctx, r, slug, entry, allow)
	e := activity.Event{Kind: activity.KindNet, Action: "deny", Target: entry}
	if allow {
		e.Action = "allow"
	}
	if err == nil && !live {
		e.Message = "recorded; the running gateway did not take it now"
	}
	s.ops.Note(ctx, r, slug, e, start, err)
	return st, live, err
}

// NetRequest is an agent's request for a way out (docs/egress.md).
type NetRequest = netgate.Request

// The states of a request.
const (
	RequestPending  = netgate.Pending
	RequestApproved = netgate.Approved
	RequestRefused  = netgate.Refused
)

// AskNet records a request for host for sandbox name, with the asker's
// reason: pending until the user answers (AnswerNet), or refused at once
// for a host no request may have. It changes no policy.
func (s *Sandboxes) AskNet(ctx context.Context, r *api.Repo, name, host, reason string) (NetRequest, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return NetRequest{}, err
	}
	start := time.Now()
	q, err := s.gate.Ask(ctx, r, slug, host, reason)
	e := activity.Event{Kind: activity.KindNet, Action: "request", Target: host, Message: reason}
	if err == nil && q.Asked == 1 {
		e.Target = q.Host
		if q.State == RequestRefused {
			e.Error = "refused at once: " + q.Why
		}
	}
	if err != nil || q.Asked == 1 {
		s.ops.Note(ctx, r, slug, e, start, err)
	}
	return q, err
}

// NetRequests are sandbox name's requests, oldest first, and how many were
// refused because too many waited.
func (s *Sandboxes) NetRequests(ctx context.Context, r *api.Repo, name string) ([]NetRequest, int, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, 0, err
	}
	return netgate.Requests(r.Git.CommonDir, slug)
}

// AnswerNet approves (as NetChange allows) or refuses sandbox name's
// request for host, as whoever ctx says acts.
func (s *Sandboxes) AnswerNet(ctx context.Context, r *api.Repo, name, host string, approve bool) (st *NetStatus, live bool, q NetRequest, err error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, false, q, err
	}
	start := time.Now()
	st, live, q, err = s.gate.Answer(ctx, r, slug, host, approve, activity.Actor(ctx))
	e := activity.Event{Kind: activity.KindNet, Action: "refuse", Target: host, Message: "the agent's request"}
	if approve {
		e.Action = "allow"
		if err == nil && !live {
			e.Message += "; recorded, the running gateway did not take it now"
		}
	}
	s.ops.Note(ctx, r, slug, e, start, err)
	return st, live, q, err
}

// CollectRefused sets each confined sandbox of list's Egress.Refused from
// its gateway's records (inventory's CollectRefused): list --json's.
func (s *Sandboxes) CollectRefused(ctx context.Context, r *api.Repo, list []api.Sandbox) {
	s.inv.CollectRefused(ctx, r, list)
}
