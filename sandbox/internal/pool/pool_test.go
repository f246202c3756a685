package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/fake"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Of many creates claiming one pooled container at once, exactly one gets
// it, and its claim is whole.
func TestClaimMemberOnce(t *testing.T) {
	gd := t.TempDir()
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wg sync.WaitGroup
	won := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := ClaimMember(gd, "c0ffee", Claim{Slug: fmt.Sprintf("s%d", i), Base: "b", Claimed: time.Now()})
			if err != nil {
				t.Error(err)
			}
			won[i] = ok
		}()
	}
	wg.Wait()
	winners, winner := 0, -1
	for i, w := range won {
		if w {
			winners, winner = winners+1, i
		}
	}
	if winners != 1 {
		t.Fatalf("%d creates claimed the container, want 1", winners)
	}
	// The claim on disk is the winner's, whole: no other create's wrote
	// over it.
	c, taken := ReadClaim(gd, "c0ffee")
	if !taken || c == nil || c.Slug != fmt.Sprintf("s%d", winner) || c.Base != "b" {
		t.Fatalf("claim = %+v, taken %v; want s%d's", c, taken, winner)
	}
	left, _ := filepath.Glob(filepath.Join(poolDir(gd), "*.tmp"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// The pool key names the configuration, not the sandbox: sandboxes of other
// names and bases share it, another image or memory limit does not.
func TestPoolKey(t *testing.T) {
	s := New(&core.Common{Options: api.Options{Image: api.DefaultImage}}, nil, nil, nil)
	r := &api.Repo{Slug: "repo", ID: "0123456789abcdef0123456789abcdef", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	cfg := &config.Config{Image: api.DefaultImage}
	k := Key(spec.For(s.Options, r, "a", "base1", cfg), nil)
	if k2 := Key(spec.For(s.Options, r, "other", "base2", cfg), nil); k2 != k {
		t.Errorf("key differs by name and base: %s vs %s", k, k2)
	}
	for name, c := range map[string]*config.Config{
		"image":   {Image: "debian:12"},
		"memory":  {Image: api.DefaultImage, Memory: "512m"},
		"network": {Image: api.DefaultImage, Network: config.NetworkNone},
		"ports":   {Image: api.DefaultImage, Ports: []config.Port{{Name: "web", ContainerPort: 8080}}},
	} {
		if Key(spec.For(s.Options, r, "a", "base1", c), nil) == k {
			t.Errorf("another %s gives the same key", name)
		}
	}
	// A confined member's gateway is made with the policy: another policy
	// is another key; the gateway's names are not part of it.
	sp0 := spec.For(s.Options, r, "a", "base1", cfg)
	allow := &netgate.NetFile{Mode: "allowlist", Allow: []string{"a.example"}, Registries: true}
	ka := Key(sp0, allow)
	if ka == k {
		t.Error("a confined member has an open one's key")
	}
	if Key(sp0, &netgate.NetFile{Mode: "allowlist", Allow: []string{"a.example"}, Registries: true, Gateway: "g", Volume: "g"}) != ka {
		t.Error("the gateway's name changes the key")
	}
	for name, rec := range map[string]*netgate.NetFile{
		"allow":      {Mode: "allowlist", Allow: []string{"b.example"}, Registries: true},
		"deny":       {Mode: "allowlist", Allow: []string{"a.example"}, Deny: []string{"c.example"}, Registries: true},
		"registries": {Mode: "allowlist", Allow: []string{"a.example"}},
		"mode":       {Mode: "none", Allow: []string{"a.example"}, Registries: true},
	} {
		if Key(sp0, rec) == ka {
			t.Errorf("another %s gives the same key", name)
		}
	}
	sp := memberSpec(spec.For(s.Options, r, "a", "base1", cfg), "litterbox-pool-x")
	for _, l := range []string{api.LabelSlug, api.LabelBranch, api.LabelBase} {
		if _, ok := sp.Labels[l]; ok {
			t.Errorf("pooled spec carries %s", l)
		}
	}
	for _, e := range sp.Env {
		if e == "LITTERBOX_SANDBOX=a" {
			t.Errorf("pooled spec carries the sandbox's name in its environment")
		}
	}
	if sp.Name != "litterbox-pool-x" || sp.Hostname == "a" {
		t.Errorf("pooled spec name %q hostname %q", sp.Name, sp.Hostname)
	}
}

// A removal of the pool (a fill dropping an extra member, delete --pool)
// never takes a container that a create claimed, and a create never takes
// one a removal claimed.
func TestDropMemberRespectsClaims(t *testing.T) {
	ctx := context.Background()
	gd := t.TempDir()
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &fake.Provider{}
	s := New(&core.Common{Provider: p, Log: log.New(io.Discard)}, nil, nil, nil)
	mk := func(name string) provider.Sandbox {
		sb, err := p.Create(ctx, provider.Spec{Name: name, Network: provider.NetworkNone})
		if err != nil {
			t.Fatal(err)
		}
		return *sb
	}
	alive := func(sb provider.Sandbox) bool {
		list, err := p.List(ctx, provider.Selector{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list {
			if o.Ref.ID == sb.Ref.ID {
				return true
			}
		}
		return false
	}

	taken := mk("taken")
	if ok, err := ClaimMember(gd, taken.Ref.ID, Claim{Slug: "a", Base: "b"}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if dropped, err := s.dropMember(ctx, gd, taken, nil); dropped || err != nil || !alive(taken) {
		t.Fatalf("dropMember of a claimed container: dropped %v, err %v, alive %v", dropped, err, alive(taken))
	}

	free := mk("free")
	if dropped, err := s.dropMember(ctx, gd, free, nil); !dropped || err != nil || alive(free) {
		t.Fatalf("dropMember of a free container: dropped %v, err %v, alive %v", dropped, err, alive(free))
	}

	// A removal cut short after its claim: no create gets the container,
	// and the next removal finishes it.
	half := mk("half")
	if ok, _ := ClaimMember(gd, half.Ref.ID, Claim{}); !ok {
		t.Fatal("removal's claim refused")
	}
	if ok, _ := ClaimMember(gd, half.Ref.ID, Claim{Slug: "c", Base: "b"}); ok {
		t.Fatal("a create took a container being removed")
	}
	if dropped, err := s.dropMember(ctx, gd, half, nil); !dropped || err != nil || alive(half) {
		t.Fatalf("dropMember after a cut-short removal: dropped %v, err %v, alive %v", dropped, err, alive(half))
	}
}

// The refill's token bucket: a burst of MaxSize at once, then one member
// per 1/rate seconds; a wait cut short gives its token back.
func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	b := newBucket(2, 3)
	b.now = func() time.Time { return now }
	b.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		slept = append(slept, d)
		return nil
	}
	for i := 0; i < 5; i++ {
		if err := b.take(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// 3 from the burst, then 0.5 s and 1 s (two queued at 2/s).
	if want := []time.Duration{500 * time.Millisecond, time.Second}; !slices.Equal(slept, want) {
		t.Fatalf("waits = %v, want %v", slept, want)
	}
	// 10 s on, the bucket is full again (burst 3), not 20 tokens.
	now = now.Add(10 * time.Second)
	slept = nil
	for i := 0; i < 4; i++ {
		_ = b.take(context.Background())
	}
	if want := []time.Duration{500 * time.Millisecond}; !slices.Equal(slept, want) {
		t.Fatalf("after a rest: waits = %v, want %v", slept, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.take(ctx); err == nil {
		t.Fatal("a cancelled wait took a token")
	}
	slept = nil
	_ = b.take(context.Background())
	if want := []time.Duration{time.Second}; !slices.Equal(slept, want) {
		t.Fatalf("after a cancelled wait: waits = %v, want %v (its token given back)", slept, want)
	}
}

// A create takes members of its own commit first, oldest first; with
// recopy, then members of its key made from another commit, except one
// with a gateway (its policy went with its commit's configuration); never
// one of another key, nor one claimed.
func TestCandidatesOrder(t *testing.T) {
	gd := t.TempDir()
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC()
	write := func(id, key, commit, gateway string, age time.Duration) {
		t.Helper()
		data, _ := json.Marshal(MemberFile{Key: key, Name: id, Ref: provider.Ref{ID: id}, Commit: commit, Stamp: 1, Gateway: gateway, Filled: t0.Add(-age)})
		if err := os.WriteFile(memberPath(gd, id), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old-commit", "k", "c1", "", 3*time.Minute)
	write("same-new", "k", "c2", "", time.Minute)
	write("same-old", "k", "c2", "", 2*time.Minute)
	write("old-commit-gw", "k", "c1", "gw", 4*time.Minute)
	write("other-key", "k2", "c2", "", 5*time.Minute)
	write("claimed", "k", "c2", "", 6*time.Minute)
	if ok, err := ClaimMember(gd, "claimed", Claim{Slug: "s", Claimed: t0}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	ids := func(ms []*MemberFile) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Ref.ID)
		}
		return out
	}
	if got, want := ids(Candidates(gd, "k", "c2", false)), []string{"same-old", "same-new"}; !slices.Equal(got, want) {
		t.Errorf("Candidates without recopy = %v, want %v", got, want)
	}
	if got, want := ids(Candidates(gd, "k", "c2", true)), []string{"same-old", "same-new", "old-commit"}; !slices.Equal(got, want) {
		t.Errorf("Candidates with recopy = %v, want %v", got, want)
	}
	if !HasMembers(gd) {
		t.Error("HasMembers = false for a pool with members to take")
	}
}

// HasMembers says no for a pool whose only member is claimed, and for a
// repository without a pool: a create then inspects its image beside its
// checks.
func TestHasMembersClaimed(t *testing.T) {
	gd := t.TempDir()
	if HasMembers(gd) {
		t.Error("HasMembers = true without a pool directory")
	}
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(MemberFile{Key: "k", Name: "m", Ref: provider.Ref{ID: "m"}, Commit: "c", Stamp: 1})
	if err := os.WriteFile(memberPath(gd, "m"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !HasMembers(gd) {
		t.Fatal("HasMembers = false with one member to take")
	}
	if ok, err := ClaimMember(gd, "m", Claim{Slug: "s", Claimed: time.Now()}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if HasMembers(gd) {
		t.Error("HasMembers = true when the only member is claimed")
	}
}

// A fill's clean-up of records whose container is gone keeps the claim of
// one a delete removed and goes on from (its gateway, a pool member's, is
// its sandbox's by that claim, and the delete's end removes it): without
// it, the delete's end found no gateway of the sandbox and left it
// leftover for good.
func TestForgetGoneKeepsADeletesClaim(t *testing.T) {
	gd := t.TempDir()
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c0ffee", "decade"} {
		if ok, err := ClaimMember(gd, id, Claim{Slug: "s-" + id, Claimed: time.Now()}); !ok || err != nil {
			t.Fatalf("claim %s: %v %v", id, ok, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(gd, "litterbox", "s-c0ffee"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := state.MarkDeleting(&api.Repo{Git: &git.Repo{CommonDir: gd}}, "s-c0ffee", "c0ffee"); err != nil {
		t.Fatal(err)
	}
	forgetGone(gd, nil)
	if _, taken := ReadClaim(gd, "c0ffee"); !taken {
		t.Error("the claim of a container whose sandbox's delete goes on was forgotten")
	}
	if _, taken := ReadClaim(gd, "decade"); taken {
		t.Error("the claim of a gone container no delete needs was kept")
	}
}

// The engine may hold a network of the pool whose container is gone only
// where a record or a fill says so: while a fill runs or after one was cut
// short, and while a claim names a container the engine no longer has (a
// removal cut short between its container and its network).
func TestMayHoldNetworks(t *testing.T) {
	gd := t.TempDir()
	live := map[string]bool{"c0ffee": true}
	may := func() bool { return MayHoldNetworks(gd, func(id string) bool { return live[id] }) }
	if may() {
		t.Error("a repository without a pool may hold its networks")
	}
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	if ok, err := ClaimMember(gd, "c0ffee", Claim{Slug: "s", Claimed: time.Now()}); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if may() {
		t.Error("a pool whose every record names a live container may hold networks")
	}
	done, err := markFilling(gd)
	if err != nil {
		t.Fatal(err)
	}
	if !may() {
		t.Error("a fill going (or cut short) may leave no network")
	}
	done()
	if may() {
		t.Error("a fill that ended may still have left a network")
	}
	delete(live, "c0ffee")
	if !may() {
		t.Error("a claim of a container that is gone does not count")
	}
}

// A fill counts a member claimed and then forgotten (its sandbox deleted
// during the fill: Forget removes the claim with the record) as gone, not
// as ready again; a member another fill is still copying (no record yet)
// counts until claimed.
func TestStillReadyForgetsWhatWasClaimed(t *testing.T) {
	gd := t.TempDir()
	if err := os.MkdirAll(poolDir(gd), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "b2"} {
		if err := os.WriteFile(memberPath(gd, id), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live := []liveMember{{id: "a1", recorded: true}, {id: "b2", recorded: true}, {id: "c3"}}
	if live = stillReady(gd, live); len(live) != 3 {
		t.Fatalf("ready before any claim: %v", live)
	}
	if ok, err := ClaimMember(gd, "a1", Claim{Slug: "s", Claimed: time.Now()}); !ok || err != nil {
		t.Fatalf("claim a1: %v %v", ok, err)
	}
	live = stillReady(gd, live)
	if err := Forget(gd, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(memberPath(gd, "b2")); err != nil {
		t.Fatal(err)
	}
	if live = stillReady(gd, live); len(live) != 1 || live[0].id != "c3" {
		t.Errorf("ready after a1 was claimed and forgotten and b2's record went: %v; want only c3", live)
	}
}

// A member claimed while a fill is making others gets its replacement
// started during that fill, not after it; the fill never has more than
// size members ready and being made, and makes only what is missing.
func TestFillUpReplacesClaimsDuringTheFill(t *testing.T) {
	var mu sync.Mutex
	readyN, making, most, made := 1, 0, 0, 0 // size 2: one missing at the start
	started := make(chan struct{}, 8)
	release := make(chan struct{})
	ready := func() int { mu.Lock(); defer mu.Unlock(); return readyN }
	mk := func() error {
		mu.Lock()
		making++
		most = max(most, readyN+making)
		mu.Unlock()
		started <- struct{}{}
		<-release
		mu.Lock()
		making--
		readyN++
		made++
		mu.Unlock()
		return nil
	}
	errs := make(chan []error, 1)
	go func() { errs <- fillUp(2, 4, ready, mk) }()
	<-started
	mu.Lock()
	readyN-- // a create claims the one ready member
	mu.Unlock()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("a member claimed during the fill got no replacement while the fill ran")
	}
	close(release)
	if e := <-errs; len(e) > 0 {
		t.Fatal(e)
	}
	if made != 2 || readyN != 2 || most > 2 {
		t.Fatalf("made %d, ready %d, at most %d ready and being made; want 2, 2, at most 2", made, readyN, most)
	}
}

// A fill starts no member after one fails: a cluster out of quota is not
// asked again and again.
func TestFillUpStopsAtAFailure(t *testing.T) {
	calls := 0
	errs := fillUp(3, 1, func() int { return 0 }, func() error { calls++; return fmt.Errorf("quota exceeded") })
	if calls != 1 || len(errs) != 1 {
		t.Fatalf("%d members tried, %d errors; want 1 and 1", calls, len(errs))
	}
}

// claimer is an engine whose members are a cluster's pods (provider.Claimer).
type claimer struct{ *fake.Provider }

func (claimer) Claim(context.Context, provider.Ref, provider.Ref, string) error { return nil }

// A fill on a cluster makes more members at once than elsewhere: there a
// member's making is mostly waiting on the cluster, and one that lags
// behind the creates leaves the next create cold.
func TestFillParallelOfACluster(t *testing.T) {
	if got := fillParallelOf(&fake.Provider{}); got != fillParallel {
		t.Errorf("a container engine's fill makes %d at once, want %d", got, fillParallel)
	}
	if got := fillParallelOf(claimer{&fake.Provider{}}); got != clusterFillParallel || got <= fillParallel {
		t.Errorf("a cluster's fill makes %d at once, want %d (more than %d)", got, clusterFillParallel, fillParallel)
	}
}
