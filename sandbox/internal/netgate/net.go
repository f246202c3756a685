package netgate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Status is a sandbox's way out, as `litterbox net` shows it.
type Status struct {
	Sandbox string `json:"sandbox"`
	NetFile
	// Records are its recent connection attempts, oldest first.
	Records []control.Record `json:"records"`
	// Refused is every target its gateway refused, each counted, kept
	// apart from the records (egress.Book): what the sandbox did cannot
	// push one out.
	Refused egress.Book `json:"refused"`
	// Collected is false when the gateway could not be asked (it is not
	// running): the records are those the host kept.
	Collected bool   `json:"collected"`
	Note      string `json:"note,omitempty"`
}

// lock takes the lock of slug's record and store: changes and collections
// take turns, across processes.
func lock(ctx context.Context, gitDir, slug string) (func(), error) {
	return flock.Wait(ctx, lockFile(gitDir, slug), 5*time.Millisecond)
}

// lockFile is the file lock takes.
func lockFile(gitDir, slug string) string {
	return state.File(gitDir, slug, "net.lock")
}

// NoGateway is the error of a sandbox without a gateway.
func NoGateway(slug string) error {
	return core.NewError(api.ErrNotFound, "Sandbox '%s' has no egress gateway: it has no network (network = \"none\"), an open one ([network] egress = \"open\"), or was made before gateways. Its network is as the engine makes it (docs/egress.md).", slug)
}

// Show is slug's policy and its last n records, collected first when the
// gateway answers.
func (g *Gate) Show(ctx context.Context, gitDir, slug string, n int) (*Status, error) {
	rec, ok, err := Read(gitDir, slug)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, NoGateway(slug)
	}
	st := &Status{Sandbox: slug, NetFile: *rec, Records: []control.Record{}}
	if _, err := g.CollectLocked(ctx, gitDir, slug, rec); err != nil {
		st.Note = "the gateway did not answer (" + core.ErrText(err) + "): these are the records the host kept"
	} else {
		st.Collected = true
	}
	rs, err := Store(gitDir, slug).Records(n)
	if err != nil {
		return nil, err
	}
	if st.Refused, err = Store(gitDir, slug).Book(); err != nil {
		return nil, err
	}
	st.Refused.Run = egress.BookRun{}
	if rs != nil {
		st.Records = rs
	}
	return st, nil
}

// CollectLocked is Collect under the record's lock.
func (g *Gate) CollectLocked(ctx context.Context, gitDir, slug string, rec *NetFile) (int, error) {
	unlock, err := lock(ctx, gitDir, slug)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return g.Collect(ctx, gitDir, slug, rec)
}

// Change allows (or denies) entry for slug: the record first, then the
// running gateway, from its next connection on (a deny cuts open tunnels
// it refuses). Allowing removes the entry from the denials, and the
// reverse; doing it twice changes nothing more. live is false when the
// gateway did not take it (not running): it takes the record when it
// starts.
func (g *Gate) Change(ctx context.Context, r *api.Repo, slug, entry string, allow bool) (st *Status, live bool, err error) {
	if _, err := policy.ParseEntry(entry); err != nil {
		return nil, false, core.NewError(api.ErrBadArgument, "%v: give a name (api.example.com, *.example.org), a name and a port (git.example.net:8443), an address or a CIDR (10.1.2.3, 10.0.0.0/8:5432)", err)
	}
	gitDir := r.Git.CommonDir
	unlock, err := lock(ctx, gitDir, slug)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	rec, ok, err := Read(gitDir, slug)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, NoGateway(slug)
	}
	drop := func(list []string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == entry })
	}
	if allow {
		rec.Deny = drop(rec.Deny)
		if !slices.Contains(rec.Allow, entry) {
			rec.Allow = append(rec.Allow, entry)
		}
	} else {
		rec.Allow = drop(rec.Allow)
		if !slices.Contains(rec.Deny, entry) {
			rec.Deny = append(rec.Deny, entry)
		}
	}
	if err := Write(r, slug, rec); err != nil {
		return nil, false, err
	}
	st = &Status{Sandbox: slug, NetFile: *rec}
	if err := g.SetPolicy(ctx, slug, rec); err != nil {
		st.Note = fmt.Sprintf("recorded for this sandbox (a fork or a recreate of it takes it), but its gateway did not take it now: %s", core.ErrText(err))
		return st, false, nil
	}
	if serving, err := g.Serving(ctx, rec); err == nil && !serving {
		// Started again outside litterbox: it took the policy, but
		// serves the sandbox nothing until it has its secrets too.
		st.Note = fmt.Sprintf("recorded, but the gateway %s was started again outside litterbox and serves the sandbox nothing until `litterbox resume %s` gives it its policy and secrets", rec.Gateway, slug)
		return st, false, nil
	}
	return st, true, nil
}
