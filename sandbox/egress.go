package sandbox

import (
	"context"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// NetStatus is a sandbox's way out: its gateway's policy and recent
// connection attempts (docs/egress.md).
type NetStatus = netgate.Status

// Net is sandbox name's policy and its last n connection attempts (all
// kept for n <= 0), collected from its gateway first.
func (s *Sandboxes) Net(ctx context.Context, r *Repo, name string, n int) (*NetStatus, error) {
	slug, err := core.Slugify(name)
	if err != nil {
		return nil, err
	}
	return s.gate.Show(ctx, r.Git.CommonDir, slug, n)
}

// NetChange allows (allow) or denies entry for sandbox name, at once in
// its running gateway and in its record. Only the user calls it: no MCP
// tool does. live is false when the gateway did not take it now.
func (s *Sandboxes) NetChange(ctx context.Context, r *Repo, name, entry string, allow bool) (st *NetStatus, live bool, err error) {
	slug, err := core.Slugify(name)
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
	s.note(ctx, r, slug, e, start, err)
	return st, live, err
}

// CollectRefused collects the gateways' records of the sandboxes in list
// that have one and sets each one's Egress.Refused to the refusals
// collected (-1 when its gateway did not answer): list --json's. r is nil
// for list --all-repos.
func (s *Sandboxes) CollectRefused(ctx context.Context, r *Repo, list []Sandbox) {
	done := make(chan struct{}, len(list))
	n := 0
	for i := range list {
		sb := &list[i]
		if sb.Egress == nil {
			continue
		}
		// Its repository's git dir: r's, or (list --all-repos) the one
		// list found it in.
		gitDir := sb.GitDir
		if r != nil && sb.Repo == r.Root() {
			gitDir = r.Git.CommonDir
		}
		rec, ok, _ := netgate.Read(gitDir, sb.Name)
		if gitDir == "" || !ok {
			sb.Egress.Refused = -1
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			k, err := s.gate.CollectLocked(ctx, gitDir, sb.Name, rec)
			if err != nil {
				k = -1
			}
			sb.Egress.Refused = k
		}()
	}
	for range n {
		<-done
	}
}
