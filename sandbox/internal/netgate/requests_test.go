package netgate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// requestRepo is a repository whose sandbox box has a gateway record
// allowing ok.example and denying bad.example.
func requestRepo(t *testing.T) *api.Repo {
	t.Helper()
	r := &api.Repo{Git: &git.Repo{CommonDir: t.TempDir()}}
	if err := Write(r, "box", &NetFile{Mode: "allowlist", Allow: []string{"ok.example"}, Deny: []string{"bad.example"}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// A request waits for the user; one the policy never gives is refused at
// once with why; one already allowed says so; a bad host changes nothing.
func TestAskAnsweredAtOnceOrPending(t *testing.T) {
	ctx := context.Background()
	r := requestRepo(t)
	g := &Gate{}
	for _, tt := range []struct{ host, state, why string }{
		{"PyPI.org", Pending, ""},
		{"169.254.169.254", Refused, "link-local (cloud metadata services live there): not given on request"},
		{"10.0.0.0/8", Refused, "10.0.0.0 is private"},
		{"127.0.0.1:8080", Refused, "loopback"},
		{"8.8.0.0/16", Refused, "a range of addresses is not given on request"},
		{"localhost:3000", Refused, "this machine"},
		{"bad.example", Refused, "the user denied it"},
		{"ok.example", Approved, "allowed already"},
	} {
		q, err := g.Ask(ctx, r, "box", tt.host, "for the task")
		if err != nil {
			t.Fatalf("Ask(%s): %v", tt.host, err)
		}
		if q.State != tt.state || !strings.Contains(q.Why, tt.why) || q.Reason != "for the task" {
			t.Errorf("Ask(%s) = %+v, want %s (%s)", tt.host, q, tt.state, tt.why)
		}
	}
	q, err := g.Ask(ctx, r, "box", "pypi.org", "again")
	if err != nil || q.Asked != 2 || q.State != Pending || q.Reason != "for the task" {
		t.Errorf("asked again: %+v, %v", q, err)
	}
	before, _, _ := Requests(r.Git.CommonDir, "box")
	if _, err := g.Ask(ctx, r, "box", "not a host!", ""); !errors.Is(err, api.ErrBadArgument) {
		t.Errorf("a bad host: %v", err)
	}
	if after, _, _ := Requests(r.Git.CommonDir, "box"); len(after) != len(before) {
		t.Errorf("a bad host was recorded: %+v", after)
	}

	// the user refuses: the agent learns it by asking again
	if _, _, q, err := g.Answer(ctx, r, "box", "pypi.org", false, "cli"); err != nil || q.State != Refused || q.By != "cli" {
		t.Errorf("refused: %+v, %v", q, err)
	}
	if q, _ := g.Ask(ctx, r, "box", "pypi.org", ""); q.State != Refused || q.By != "cli" {
		t.Errorf("asked after the refusal: %+v", q)
	}
	if _, _, _, err := g.Answer(ctx, r, "box", "never.asked", true, "cli"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("answering a request never made: %v", err)
	}
}

// An agent flooding requests is bounded: MaxPending wait, those after are
// refused and counted, the reason is cut, the file keeps MaxKeptRequests.
func TestAskBounded(t *testing.T) {
	ctx := context.Background()
	r := requestRepo(t)
	g := &Gate{}
	long := strings.Repeat("x", 5000)
	for i := range MaxPending {
		if q, err := g.Ask(ctx, r, "box", fmt.Sprintf("h%d.example", i), long); err != nil || len(q.Reason) != MaxReason {
			t.Fatalf("request %d: %+v, %v", i, len(q.Reason), err)
		}
	}
	for i := range 3 {
		if _, err := g.Ask(ctx, r, "box", fmt.Sprintf("more%d.example", i), ""); err == nil || !strings.Contains(err.Error(), "wait for the user already") {
			t.Fatalf("request past the bound: %v", err)
		}
	}
	// refused at once, they do not wait: the file keeps the newest
	for i := range MaxKeptRequests {
		if _, err := g.Ask(ctx, r, "box", fmt.Sprintf("10.0.%d.1", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	qs, dropped, err := Requests(r.Git.CommonDir, "box")
	if err != nil || dropped != 3 || len(qs) != MaxKeptRequests {
		t.Fatalf("kept %d, dropped %d, %v", len(qs), dropped, err)
	}
	pending := 0
	for _, q := range qs {
		if q.State == Pending {
			pending++
		}
	}
	if pending != MaxPending {
		t.Errorf("%d pending kept, want every one of %d", pending, MaxPending)
	}
	// the answered ones went oldest first: the first 16 refused made room
	var refused []string
	for _, q := range qs {
		if q.State == Refused {
			refused = append(refused, q.Host)
		}
	}
	if want := MaxKeptRequests - MaxPending; len(refused) != want || refused[0] != fmt.Sprintf("10.0.%d.1", MaxPending) || refused[want-1] != fmt.Sprintf("10.0.%d.1", MaxKeptRequests-1) {
		t.Errorf("refused kept: %v, want 10.0.%d.1 to 10.0.%d.1", refused, MaxPending, MaxKeptRequests-1)
	}
}
