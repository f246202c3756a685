package netgate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/textcap"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Access requests: an agent asks for a host (the MCP tool
// network-request), the user answers (`litterbox net NAME approve|refuse
// HOST`). A request changes nothing by itself; approving one is what
// `litterbox net NAME allow HOST` does. They are kept in the sandbox's
// state directory (requests.json), on the host, out of the agent's reach.

// RequestsFile is the state directory's record of a sandbox's requests.
const RequestsFile = "requests.json"

// The states of a request.
const (
	Pending  = "pending"
	Approved = "approved"
	Refused  = "refused"
)

// Bounds of what an agent's requests keep.
const (
	// MaxPending is how many requests of a sandbox may wait for an answer
	// at once; one past it is refused, and counted.
	MaxPending = 16
	// MaxKeptRequests is how many requests a sandbox keeps, answered ones
	// going first.
	MaxKeptRequests = 64
	// MaxReason is the most bytes of a request's reason kept.
	MaxReason = 512
)

// Request is an agent's request for a way out.
type Request struct {
	// Host is the entry asked for, as `litterbox net allow` takes it.
	Host string `json:"host"`
	// Reason is the agent's, cut to MaxReason: agent text, shown escaped.
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
	// Asked counts the times it was asked.
	Asked int    `json:"asked"`
	State string `json:"state"`
	// By is who answered (cli, ui; litterbox for one refused at once).
	By string `json:"by,omitempty"`
	// Why says why litterbox refused it at once.
	Why string `json:"why,omitempty"`
}

// requests is the file's content.
type requests struct {
	Requests []Request `json:"requests"`
	// Dropped counts the requests refused because MaxPending were
	// waiting.
	Dropped int `json:"dropped,omitempty"`
}

func readRequests(gitDir, slug string) (*requests, error) {
	data, err := os.ReadFile(state.File(gitDir, slug, RequestsFile))
	if errors.Is(err, os.ErrNotExist) {
		return &requests{}, nil
	}
	if err != nil {
		return nil, err
	}
	rs := &requests{}
	if err := json.Unmarshal(data, rs); err != nil {
		return nil, fmt.Errorf("read the access requests of sandbox '%s': %w", slug, err)
	}
	return rs, nil
}

func writeRequests(gitDir, slug string, rs *requests) error {
	data, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteAtomic(state.File(gitDir, slug, RequestsFile), append(data, '\n'))
}

// Requests are slug's requests, oldest first, and how many were refused
// because too many waited; a sandbox without a gateway has none to show
// (NoGateway).
func Requests(gitDir, slug string) ([]Request, int, error) {
	if _, ok, err := Read(gitDir, slug); err != nil || !ok {
		return nil, 0, cmp.Or(err, NoGateway(slug))
	}
	rs, err := readRequests(gitDir, slug)
	if err != nil {
		return nil, 0, err
	}
	return rs.Requests, rs.Dropped, nil
}

// never is why no request may have entry, "" when one may: an address
// that is not public (the host, the engine, cloud metadata, private
// ranges), a local name, or an entry the user denied.
func never(e policy.Entry, rec *NetFile) string {
	if slices.Contains(rec.Deny, e.Text) {
		return "the user denied it (litterbox net deny)"
	}
	if e.Name == "localhost" || strings.HasSuffix(e.Name, ".localhost") {
		return e.Name + " is this machine, which a sandbox may never reach"
	}
	if e.Name == "" {
		var k policy.Classifier
		if c := k.Classify(e.Prefix.Addr()); c != policy.ClassPublic {
			return fmt.Sprintf("%s is %s: not given on request", e.Prefix.Addr(), c)
		}
		if !e.Prefix.IsSingleIP() {
			return "a range of addresses is not given on request: ask for a name or one address"
		}
	}
	return ""
}

// Ask records an agent's request for host, with its reason: pending, or,
// for a host no request may have, refused at once with why. Asking again
// for a host gives its request as it stands (its answer, once given).
func (g *Gate) Ask(ctx context.Context, r *api.Repo, slug, host, reason string) (Request, error) {
	e, err := policy.ParseEntry(host)
	if err != nil {
		return Request{}, core.NewError(api.ErrBadArgument, "%v: ask for a name (api.example.com), a name and a port (git.example.net:8443) or an address", err)
	}
	gitDir := r.Git.CommonDir
	unlock, err := lock(ctx, gitDir, slug)
	if err != nil {
		return Request{}, err
	}
	defer unlock()
	rec, ok, err := Read(gitDir, slug)
	if err != nil {
		return Request{}, err
	}
	if !ok {
		return Request{}, NoGateway(slug)
	}
	rs, err := readRequests(gitDir, slug)
	if err != nil {
		return Request{}, err
	}
	now := time.Now().UTC()
	if i := slices.IndexFunc(rs.Requests, func(q Request) bool { return q.Host == e.Text }); i >= 0 {
		rs.Requests[i].Asked++
		if rs.Requests[i].State == Approved && !slices.Contains(rec.Allow, e.Text) {
			// denied again since: ask anew
			rs.Requests[i].State, rs.Requests[i].By, rs.Requests[i].Time = Pending, "", now
		}
		return rs.Requests[i], writeRequests(gitDir, slug, rs)
	}
	q := Request{Host: e.Text, Reason: reason[:textcap.Prefix(reason, MaxReason)], Time: now, Asked: 1, State: Pending}
	switch {
	case slices.Contains(rec.Allow, e.Text):
		q.State, q.By, q.Why = Approved, "litterbox", "it is allowed already"
	default:
		if why := never(e, rec); why != "" {
			q.State, q.By, q.Why = Refused, "litterbox", why
		}
	}
	pending := 0
	for _, o := range rs.Requests {
		if o.State == Pending {
			pending++
		}
	}
	if q.State == Pending && pending >= MaxPending {
		rs.Dropped++
		if err := writeRequests(gitDir, slug, rs); err != nil {
			return Request{}, err
		}
		return Request{}, core.NewError(api.ErrBadArgument, "%d requests of sandbox '%s' wait for the user already: ask again once they are answered", MaxPending, slug)
	}
	rs.Requests = append(rs.Requests, q)
	for len(rs.Requests) > MaxKeptRequests {
		i := slices.IndexFunc(rs.Requests, func(q Request) bool { return q.State != Pending })
		rs.Requests = slices.Delete(rs.Requests, max(i, 0), max(i, 0)+1)
	}
	return q, writeRequests(gitDir, slug, rs)
}

// Answer approves or refuses slug's request for host, for by (cli, ui):
// approving allows it as Change does, then marks the request. A host no
// request asked for is refused: `litterbox net allow` allows any.
func (g *Gate) Answer(ctx context.Context, r *api.Repo, slug, host string, approve bool, by string) (st *Status, live bool, q Request, err error) {
	e, err := policy.ParseEntry(host)
	if err != nil {
		return nil, false, q, core.NewError(api.ErrBadArgument, "%v", err)
	}
	gitDir := r.Git.CommonDir
	rs, err := readRequests(gitDir, slug)
	if err != nil {
		return nil, false, q, err
	}
	if !slices.ContainsFunc(rs.Requests, func(q Request) bool { return q.Host == e.Text }) {
		return nil, false, q, core.NewError(api.ErrNotFound, "sandbox '%s' has no request for %s (`litterbox net %s requests` lists them; `litterbox net %s allow %s` allows a host unasked)", slug, e.Text, slug, slug, e.Text)
	}
	if approve {
		if st, live, err = g.Change(ctx, r, slug, e.Text, true); err != nil {
			return nil, false, q, err
		}
	}
	unlock, err := lock(ctx, gitDir, slug)
	if err != nil {
		return nil, false, q, err
	}
	defer unlock()
	if rs, err = readRequests(gitDir, slug); err != nil {
		return nil, false, q, err
	}
	for i := range rs.Requests {
		if rs.Requests[i].Host == e.Text {
			rs.Requests[i].State, rs.Requests[i].By, rs.Requests[i].Why = Refused, by, ""
			if approve {
				rs.Requests[i].State = Approved
			}
			q = rs.Requests[i]
		}
	}
	return st, live, q, writeRequests(gitDir, slug, rs)
}
