// Package pool keeps a repository's warm pool: sandboxes made ahead of
// time, each a hardened container like any sandbox's, started, with HEAD
// already copied into /src and litterbox's default setup run. A create
// that finds one made for its configuration claims it instead of starting
// a container: it makes the branch beside the engine's rename of the
// container, runs the user's own setup command if there is one, and marks
// the sandbox ready, which takes a fraction of a docker run (docs/pool.md).
//
// Engines cannot change a container's labels, and a pooled container's are
// set before anyone knows which sandbox it becomes: it carries the
// repository's labels and LabelPool, never a slug. What it became is
// recorded on the host, beside the sandboxes' state, in
// <common git dir>/litterbox/pool.d/ (the dot keeps it apart from every
// slug):
//
//	ID.member  written once the copy of HEAD is complete: the commit, the
//	           scan stamp, the image's platform. A container without it is
//	           still being filled, or its fill was cut short.
//	ID.claim   made exclusively (O_EXCL) by the create that takes the
//	           container, before anything else: two creates never get the
//	           same one. It names the sandbox (slug and base), so every
//	           lookup finds the container under that name from then on.
//
// A crash at any point leaves a container that lookups see: before its
// claim, as a pool member (`litterbox pool` and `list` show it, `delete
// --pool` and the next fill remove it); after, as the sandbox it was
// becoming, incomplete until marked ready, as any interrupted create.
package pool

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/internal/atomicfile"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/cache"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// DirName is the pool's directory under <common git dir>/litterbox.
const DirName = "pool.d"

// poolFillStale is how long a member may go without its record before a fill
// takes it for one cut short and removes it.
const poolFillStale = 10 * time.Minute

// MaxSize bounds a pool: each member holds a copy of the repository in
// memory.
const MaxSize = 16

// Pool fills, lists and empties the warm pools of c's engine; create claims
// their members (Candidates, Claim, Remove).
type Pool struct {
	*core.Common
	guest *guest.Guest
	iso   *isolation.Checker
	gate  *netgate.Gate

	// refill bounds how fast this process makes members (refill.go), at
	// the options' rate.
	refill *bucket
}

// New is the warm pool of c's engine, filled through g, checked with iso;
// confined members get their gateways through gate.
func New(c *core.Common, g *guest.Guest, iso *isolation.Checker, gate *netgate.Gate) *Pool {
	return &Pool{Common: c, guest: g, iso: iso, gate: gate, refill: newBucket(c.PoolRefillRate, MaxSize)}
}

func poolDir(gitDir string) string { return filepath.Join(gitDir, "litterbox", DirName) }

// MemberFile is what the host records of a filled member (pool.d/ID.member).
type MemberFile struct {
	Key    string `json:"key"`
	Name   string `json:"name"`
	Ref    provider.Ref
	Commit string `json:"commit"`
	// Stamp is the scan stamp taken after the copy, as create's.
	Stamp    int64     `json:"stamp"`
	Image    string    `json:"image"`
	Platform string    `json:"platform,omitempty"`
	Volumes  []string  `json:"volumes,omitempty"`
	Filled   time.Time `json:"filled"`
	// Gateway names a confined member's egress gateway, container and
	// volume (docs/egress.md); Ports are the named ports its relay serves.
	Gateway string `json:"gateway,omitempty"`
	Ports   []int  `json:"ports,omitempty"`
	// Setup is the setup command that ran when the member was filled
	// (fillSetup), after its relay and gateway listened, and SetupOutput
	// what it printed: a create whose setup is the same reports that
	// output and runs none. nil: none ran (a member filled before every
	// engine ran it then, or a setup of the user's).
	Setup       []string `json:"setup,omitempty"`
	SetupOutput string   `json:"setup_output,omitempty"`
	// Reach is what the engine said of its host and networks when the
	// gateway's policy was made (the policy refuses them): a claim that
	// finds the engine says the same leaves the policy as it is. Its
	// policy names no sandbox: the claim's setup writes the name where
	// the gateway reads it (egress.WriteName), or on an engine that links
	// the two by network (Kubernetes) the engine's claim gives it
	// (provider.Claimer). nil: a member filled before this was recorded,
	// whose claim sets the policy anew.
	Reach *netgate.Reach `json:"reach,omitempty"`
}

// Claim is what the create that took a member records.
type Claim struct {
	Slug    string    `json:"slug"`
	Base    string    `json:"base"`
	Claimed time.Time `json:"claimed"`
}

func memberPath(gitDir, id string) string { return filepath.Join(poolDir(gitDir), id+".member") }
func claimPath(gitDir, id string) string  { return filepath.Join(poolDir(gitDir), id+".claim") }

func readMember(gitDir, id string) *MemberFile {
	data, err := os.ReadFile(memberPath(gitDir, id))
	if err != nil {
		return nil
	}
	var m MemberFile
	if json.Unmarshal(data, &m) != nil || m.Ref.ID != id || m.Stamp == 0 {
		return nil
	}
	return &m
}

// ReadClaim returns the claim of container id; claimed is true when a claim
// file exists at all, even one that cannot be read (a claim cut short is
// still a claim: that container is never handed out again).
func ReadClaim(gitDir, id string) (c *Claim, claimed bool) {
	data, err := os.ReadFile(claimPath(gitDir, id))
	if err != nil {
		return nil, !errors.Is(err, os.ErrNotExist)
	}
	var pc Claim
	if json.Unmarshal(data, &pc) != nil || pc.Slug == "" {
		return nil, true
	}
	return &pc, true
}

// liveMember is a member a fill counts as ready: recorded once its record
// was written (a member another fill is still copying has none yet).
type liveMember struct {
	id       string
	recorded bool
}

// stillReady is what of live is still ready: a member once claimed, or
// whose record is gone, is dropped for good. A claim file alone is not
// enough: deleting the sandbox made from a member removes its claim with
// its record (Forget), and the member must not count as ready again.
func stillReady(gitDir string, live []liveMember) []liveMember {
	return slices.DeleteFunc(live, func(m liveMember) bool {
		if _, claimed := ReadClaim(gitDir, m.id); claimed {
			return true
		}
		_, err := os.Stat(memberPath(gitDir, m.id))
		return m.recorded && err != nil
	})
}

// claimedBySandbox reports whether container id is claimed by a create (not
// by a removal, whose claim names no sandbox, nor by a claim that cannot be
// read): such a container is a sandbox, the others are still the pool's.
func claimedBySandbox(gitDir, id string) bool {
	c, _ := ReadClaim(gitDir, id)
	return c != nil
}

// ClaimMember takes container id for slug; false when another create has it.
// The claim is written whole to a file of its own, then linked into place,
// which fails when the name exists: of two creates one wins, and no kill
// leaves a claim half written.
func ClaimMember(gitDir, id string, c Claim) (bool, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return false, err
	}
	return atomicfile.Create(claimPath(gitDir, id), append(data, '\n'), 0o644)
}

// Forget removes the host's record of container id.
func Forget(gitDir, id string) error {
	var errs []error
	for _, p := range []string{memberPath(gitDir, id), claimPath(gitDir, id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fillingFile marks a fill that makes members (pool.d/filling): written
// before the first is made, removed once the fill ended without error. A
// fill cut short (a kill) leaves it, and with it perhaps a network that
// the engine made for a member whose container was not made yet: list
// then asks the engine for its networks (MayHoldNetworks) until a fill or
// `delete --pool`, which remove such networks, end cleanly.
const fillingFile = "filling"

// MayHoldNetworks says whether the engine may hold a network of r's pool
// (its common git dir) whose container is gone: one only the engine's
// network list finds. live says which containers the engine's list holds.
// It does while a fill runs or after one was cut short (fillingFile), and
// while a record names a container that is gone (a member removed by hand
// or whose removal was cut short, a claimed one whose sandbox's delete
// goes on). Otherwise every network of the pool has its container, which
// names it: list needs the container list alone.
func MayHoldNetworks(gitDir string, live func(id string) bool) bool {
	entries, err := os.ReadDir(poolDir(gitDir))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		name := e.Name()
		if name == fillingFile {
			return true
		}
		id, ok := strings.CutSuffix(name, ".member")
		if !ok {
			id, ok = strings.CutSuffix(name, ".claim")
		}
		if ok && !live(id) {
			return true
		}
	}
	return false
}

// markFilling writes fillingFile (see there); done removes it.
func markFilling(gitDir string) (done func(), err error) {
	p := filepath.Join(poolDir(gitDir), fillingFile)
	if err := atomicfile.Write(p, []byte("a fill makes members\n"), 0o644); err != nil {
		return nil, err
	}
	return func() { _ = os.Remove(p) }, nil
}

// HasClaims reports whether any container of r's pool was claimed: only then
// do lookups also list pooled containers.
func HasClaims(gitDir string) bool {
	entries, err := os.ReadDir(poolDir(gitDir))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".claim") {
			return true
		}
	}
	return false
}

// containers lists every pooled container on the engine (of every
// repository, within the extra labels), claimed or not.
func (p *Pool) containers(ctx context.Context) ([]provider.Sandbox, error) {
	sel := provider.Selector{Labels: map[string]string{api.LabelPool: ""}, Report: append(slices.Clone(core.LabelKeys), api.LabelPool, core.LabelPoolMember)}
	for k, v := range p.ExtraLabels {
		sel.Labels[k] = v
	}
	return p.Provider.List(ctx, sel)
}

// ClaimID is the container whose claim decides what pooled container p is:
// its own, or for a member's egress gateway its member's (one claim takes
// both).
func ClaimID(p provider.Sandbox) string {
	if m := p.Labels[core.LabelPoolMember]; m != "" {
		return m
	}
	return p.Ref.ID
}

// isGateway says a pooled container is a member's egress gateway.
func isGateway(p provider.Sandbox) bool { return p.Labels[core.LabelGatewayOf] != "" }

// AsClaimed is pooled container p as the sandbox claim c made of it: the
// claim's slug and base as labels.
func AsClaimed(p provider.Sandbox, c *Claim) provider.Sandbox {
	p.Labels = cloneLabels(p.Labels)
	p.Labels[api.LabelSlug] = c.Slug
	p.Labels[api.LabelBranch] = api.BranchPrefix + c.Slug
	p.Labels[api.LabelBase] = c.Base
	p.Created = c.Claimed // the sandbox's age, not the fill's
	return p
}

func cloneLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Key names the configuration a pooled container was made for: the spec
// with what belongs to one sandbox (name, hostname, slug, branch, base, its
// LITTERBOX_SANDBOX) left out, and the policy of its egress gateway (nil for
// none). A create claims only a member of its own key: a member's gateway
// lets through what the create's policy would, from the claim on.
func Key(sp provider.Spec, net *netgate.NetFile) string {
	sp = memberSpec(sp, "")
	sp.Name = ""
	var egress *netgate.NetFile
	if net != nil {
		egress = &netgate.NetFile{Mode: net.Mode, Allow: net.Allow, Deny: net.Deny, Registries: net.Registries}
	}
	b, _ := json.Marshal(struct {
		Spec   provider.Spec
		Egress *netgate.NetFile `json:",omitempty"`
	}{sp, egress})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// egressOf is the way out of members made with cfg: a gateway's policy,
// or nil when they have none.
func (p *Pool) egressOf(cfg *config.Config) *netgate.NetFile {
	if !cfg.Confined() || !p.gate.Supported() {
		return nil
	}
	rec := netgate.FromConfig(cfg)
	return &rec
}

// memberSpec is sp made into a pool member's spec named name.
func memberSpec(sp provider.Spec, name string) provider.Spec {
	sp.Name, sp.Hostname = name, "litterbox"
	l := cloneLabels(sp.Labels)
	delete(l, api.LabelSlug)
	delete(l, api.LabelBranch)
	delete(l, api.LabelBase)
	delete(l, api.LabelPool)
	delete(l, api.LabelPlatform)
	sp.Labels = l
	sp.Env = slices.DeleteFunc(slices.Clone(sp.Env), func(e string) bool { return strings.HasPrefix(e, "LITTERBOX_SANDBOX=") })
	sp.Tmpfs = slices.Clone(sp.Tmpfs)
	return sp
}

// List lists r's unclaimed pooled containers.
func (p *Pool) List(ctx context.Context, r *api.Repo) ([]api.PoolEntry, error) {
	ms, _, err := p.unclaimed(ctx, r)
	if err != nil {
		return nil, err
	}
	key, head := "", ""
	if cfg, h, err := p.poolConfig(ctx, r); err == nil {
		key, head = Key(spec.For(p.Options, r, "x", h, cfg), p.egressOf(cfg)), h
	}
	return poolEntries(ms, key, head), nil
}

// poolEntries describes members; one made for another key or commit than
// key and head is stale.
func poolEntries(ms []member, key, head string) []api.PoolEntry {
	out := make([]api.PoolEntry, 0, len(ms))
	for _, m := range ms {
		e := m.entry()
		if e.State == "ready" && (m.rec.Key != key || m.rec.Commit != head) {
			e.State = "stale"
		}
		out = append(out, e)
	}
	return out
}

// Entries describes the pooled containers of objs that r owns and no create
// claimed (list shows them; objs is what the engine holds, claimed or not).
// A member's gateway is part of the member, not an entry.
func Entries(r *api.Repo, objs []provider.Sandbox) []api.PoolEntry {
	var out []api.PoolEntry
	for _, o := range objs {
		if !r.Owns(o.Labels) || isGateway(o) {
			continue
		}
		if m, claimed := newMember(r.Git.CommonDir, o); !claimed {
			out = append(out, m.entry())
		}
	}
	return out
}

// member is a pooled container no create claimed, with what the host
// records of it.
type member struct {
	c   provider.Sandbox
	rec *MemberFile
	// removing: a removal claimed it and was cut short.
	removing bool
}

// newMember reads the host's records of pooled container c; claimed is true
// when a create claimed it, and then it is a sandbox, not a member.
func newMember(gitDir string, c provider.Sandbox) (m member, claimed bool) {
	if c.Ref.ID == "" {
		// A network alone is what a fill cut short left (network "own"):
		// listed, so that the next fill and delete --pool remove it.
		return member{c: c}, false
	}
	cl, taken := ReadClaim(gitDir, c.Ref.ID)
	if cl != nil {
		return member{}, true
	}
	return member{c: c, rec: readMember(gitDir, c.Ref.ID), removing: taken}, false
}

// entry describes the member: ready once its record is written, filling
// before, removing when a removal was cut short, and the container's state
// when it does not run (an engine restart stops them; the next fill
// replaces it).
func (m member) entry() api.PoolEntry {
	e := api.PoolEntry{Container: m.c.Name, State: "filling", Created: m.c.Created}
	switch {
	case m.c.State != provider.StateRunning:
		e.State = string(m.c.State)
	case m.removing:
		e.State = "removing"
	case m.rec != nil:
		e.State = "ready"
	}
	if m.rec != nil {
		e.Commit = m.rec.Commit
	}
	return e
}

// unclaimed are r's pooled containers that no create claimed, oldest first
// (members' gateways aside: they go with their members).
func (p *Pool) unclaimed(ctx context.Context, r *api.Repo) ([]member, []provider.Sandbox, error) {
	all, err := p.containers(ctx)
	if err != nil {
		return nil, nil, err
	}
	var out []member
	for _, c := range all {
		if !r.Owns(c.Labels) || isGateway(c) {
			continue
		}
		if m, claimed := newMember(r.Git.CommonDir, c); !claimed {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].c.Created.Before(out[j].c.Created) })
	return out, all, nil
}

// poolConfig is the configuration and commit pooled sandboxes are made
// with: HEAD's, with the service's image unless the configuration names one,
// and its runtime as the engine names it.
func (p *Pool) poolConfig(ctx context.Context, r *api.Repo) (*config.Config, string, error) {
	head, err := r.Git.Head(ctx)
	if err != nil {
		return nil, "", err
	}
	cfg, err := p.LoadConfig(ctx, r, head)
	if err != nil {
		return nil, "", err
	}
	c := *cfg
	if c.Image == "" {
		c.Image = p.Image
	}
	// Members run under the runtime a create would ask for, by the
	// engine's name: the key holds it, so a member of another runtime is
	// never handed out.
	if c.Runtime, err = p.EngineRuntime(ctx, c.Runtime); err != nil {
		return nil, "", err
	}
	return &c, head, nil
}

// Fill brings r's pool to size ready members made from HEAD with its
// configuration: it removes members made for another commit or
// configuration, fills cut short, members beyond size, and the records of
// containers that are gone, then makes the missing ones (fillUp: those
// claimed while it runs too), at the pace of the refill's token bucket.
// Fills of one repository take turns.
func (p *Pool) Fill(ctx context.Context, r *api.Repo, size int) ([]api.PoolEntry, error) {
	if size < 0 || size > MaxSize {
		return nil, core.NewError(api.ErrBadArgument, "A pool holds 0 to %d sandboxes, not %d: each keeps a copy of the repository in memory.", MaxSize, size)
	}
	if err := core.EnsureRepoID(r); err != nil {
		return nil, err
	}
	unlock, err := state.Lock(ctx, poolDir(r.Git.CommonDir))
	if err != nil {
		return nil, err
	}
	defer unlock()
	cfg, head, err := p.poolConfig(ctx, r)
	if err == nil {
		err = cache.Check(p.Provider, cfg.Cache)
	}
	if err != nil {
		return nil, err
	}
	// Pooled sandboxes are sandboxes: none is made on an engine that does
	// not keep them apart, unless the user allows it.
	// A confined member has no network: its gateway keeps it apart; unless
	// its engine links the two by network (Kubernetes), which holds only
	// where the engine keeps sandboxes apart.
	var check *isolation.Check
	if cfg.Network != config.NetworkNone && (p.egressOf(cfg) == nil || p.gate.Linked()) {
		check = p.iso.Start(ctx, cfg.Image)
	}
	platform, img, err := p.guest.ImageInfo(ctx, cfg.Image)
	if check != nil {
		err = errors.Join(err, p.iso.Refuse(check, cfg))
	}
	if err != nil {
		return nil, err
	}
	if platform == "" {
		return nil, guest.MissingImage(cfg.Image)
	}
	if k, ok := p.Provider.(provider.ClaimKeeper); ok && size > 0 {
		// The claims of the creates to come (a shared kubectl proxy on
		// Kubernetes).
		k.KeepClaims(ctx)
	}
	full := spec.For(p.Options, r, "x", head, cfg)
	net := p.egressOf(cfg)
	key := Key(full, net)
	full.Tmpfs = append(full.Tmpfs, spec.VolumeMasks(img.Volumes)...)
	var gw gatePrep
	if net != nil {
		// What every member's gateway needs of the engine, asked once.
		if gw.host, err = p.gate.Reach(ctx); err == nil && p.gate.Linked() {
			gw.program, err = p.gate.Program(ctx)
		} else if err == nil {
			gw.image, err = p.gate.Image(ctx)
		}
		if err != nil {
			return nil, err
		}
		gw.net = net
	}
	ms, all, err := p.unclaimed(ctx, r)
	if err != nil {
		return nil, err
	}
	gws := gatewaysOf(r, all)
	var drop []provider.Sandbox
	var live []liveMember // the ready members
	for _, m := range ms {
		switch {
		case m.removing:
			drop = append(drop, m.c)
		case m.rec == nil && m.c.State == provider.StateRunning && time.Since(m.c.Created) < poolFillStale:
			live = append(live, liveMember{id: m.c.Ref.ID}) // another fill's, still copying
		case m.rec == nil, m.rec.Key != key, m.rec.Commit != head, m.c.State != provider.StateRunning, len(live) >= size:
			drop = append(drop, m.c)
		default:
			live = append(live, liveMember{id: m.c.Ref.ID, recorded: true})
		}
	}
	var errs []error
	for _, c := range drop {
		if _, err := p.dropMember(ctx, r.Git.CommonDir, c, gws[c.Ref.ID]); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, p.dropOrphanGateways(ctx, r.Git.CommonDir, all, gws))
	forgetGone(r.Git.CommonDir, all)
	sp := memberSpec(full, "")
	sp.Labels[api.LabelPool] = key
	sp.Labels[api.LabelPlatform] = platform
	var mu sync.Mutex
	ready := func() int {
		mu.Lock()
		defer mu.Unlock()
		live = stillReady(r.Git.CommonDir, live)
		return len(live)
	}
	filling, err := markFilling(r.Git.CommonDir)
	if err != nil {
		return nil, err
	}
	errs = append(errs, fillUp(size, fillParallelOf(p.Provider), ready, func() error {
		id, err := p.makeMember(ctx, r, sp, head, platform, img.Volumes, gw, fillSetup(cfg))
		if err == nil {
			mu.Lock()
			live = append(live, liveMember{id: id, recorded: true})
			mu.Unlock()
		}
		return err
	})...)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fill the pool: %w", err)
	}
	filling()
	if ms, _, err = p.unclaimed(ctx, r); err != nil {
		return nil, err
	}
	return poolEntries(ms, key, head), nil
}

// fillSetup is the setup command a member runs when it is filled, nil for
// none: litterbox's default setup, on every engine. It reads nothing of the
// sandbox it runs for (neither its name nor the ignored files a create
// copies in), so its output is the same either way, and a claim that has
// nothing else to do in the member then runs no exec: on Docker the claim
// is the rename alone, on Kubernetes the engine's claim
// (provider.Claimer). A setup of the user's runs at the claim, as it
// always did: it may read LITTERBOX_SANDBOX or those files.
func fillSetup(cfg *config.Config) []string {
	if slices.Equal(cfg.Setup, config.DefaultSetup) {
		return slices.Clone(config.DefaultSetup)
	}
	return nil
}

// gatePrep is what a fill's confined members are made with: the policy of
// their gateways (nil for none), the engine host's addresses, the gateway
// image, or on an engine that links them by network the gateway's program
// (egress.InstallLinkedReady).
type gatePrep struct {
	net     *netgate.NetFile
	host    netgate.Reach
	image   string
	program []byte
}

// makeMember makes one pooled container, copies head into it, then runs
// preSetup (fillSetup) in the same exec, and returns its id; a
// confined one gets its gateway (named after it, with the policy the
// pool's key names, which names no sandbox: the claim gives it the name),
// which is made once the container is, beside the copy; on an engine that
// links the two by network (Kubernetes), beside the container's start,
// which waits for the gateway's address.
func (p *Pool) makeMember(ctx context.Context, r *api.Repo, sp provider.Spec, head, platform string, volumes []string, gw gatePrep, preSetup []string) (id string, err error) {
	if err := p.refill.take(ctx); err != nil {
		return "", err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	sp.Name = "litterbox-pool-" + r.ShortID() + "-" + hex.EncodeToString(b[:])
	var plan *egress.Plan
	if gw.net != nil {
		pl, err := p.planGateway(ctx, sp, gw)
		if err != nil {
			return "", err
		}
		defer func() {
			if err != nil {
				err = errors.Join(err, p.removeGateway(core.Made(ctx), pl.Gateway.Name))
			}
		}()
		plan, sp = &pl, pl.Sandbox
	}
	made := make(chan error, 1)
	startCtx := ctx
	if plan != nil && plan.Linked() {
		// The gateway first: the sandbox's pod waits for its address.
		var cancel context.CancelFunc
		startCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			err := p.makeGateway(ctx, plan, sp.Name, gw)
			if err != nil {
				cancel()
			}
			made <- err
		}()
	}
	sb, err := p.Provider.Create(startCtx, sp)
	if err != nil {
		if plan != nil && plan.Linked() {
			err = errors.Join(err, <-made)
		}
		return "", err
	}
	switch {
	case plan == nil:
		made <- nil
	case !plan.Linked():
		go func() { made <- p.makeGateway(ctx, plan, sb.Ref.ID, gw) }()
	}
	a := guest.StartArchive(ctx, r, head, nil)
	var so, se bytes.Buffer
	setup := preSetup
	if plan != nil && !plan.Linked() {
		// A member is ready once its relay and gateway listen: a create
		// that claims it hands it over at once, and its setup (the
		// default's, which uses no network) runs after the wait, as a
		// create's would. (A gateway linked by network has no relay: the
		// fill waits for the gateway itself.)
		setup = append([]string{"sh", "-c", egress.WaitReady + `; exec "$@"`, "sh"}, preSetup...)
	}
	err = p.guest.CopyAndSetup(ctx, a, sb.Ref, sp.Image, setup, &so, &se)
	stamp := guest.TakeStamp(&so)
	if err == nil && stamp == 0 {
		err = errors.New("the copy did not report completion")
	}
	if err != nil && egress.NotReady(se.String()) {
		err = fmt.Errorf("its egress relay and gateway %s did not listen within 30 s", plan.Gateway.Name)
	}
	if gerr := <-made; err == nil && gerr != nil {
		err = fmt.Errorf("its egress gateway: %w", gerr)
	}
	if err == nil {
		rec := MemberFile{Key: sp.Labels[api.LabelPool], Name: sp.Name, Ref: sb.Ref, Commit: head, Stamp: stamp,
			Image: sp.Image, Platform: platform, Volumes: volumes, Filled: time.Now().UTC()}
		if plan != nil {
			rec.Gateway, rec.Ports, rec.Reach = plan.Gateway.Name, plan.Ports, &gw.host
		}
		if preSetup != nil {
			rec.Setup, rec.SetupOutput = preSetup, so.String()+se.String()
		}
		data, _ := json.Marshal(rec)
		err = state.WriteAtomic(memberPath(r.Git.CommonDir, sb.Ref.ID), append(data, '\n'))
	}
	if err != nil {
		return "", errors.Join(fmt.Errorf("pooled sandbox %s: %w", sp.Name, err), p.Remove(core.Made(ctx), r.Git.CommonDir, *sb))
	}
	return sb.Ref.ID, nil
}

// planGateway plans member sp behind a gateway with the pool's policy
// (gw): linked to it by network on an engine that links them
// (egress.ConfineLinked), else sharing a volume, made here when the
// engine does not make it as a container mounts it (Podman).
func (p *Pool) planGateway(ctx context.Context, sp provider.Spec, gw gatePrep) (egress.Plan, error) {
	pol := gw.net.Policy("", gw.host)
	if l, ok := netgate.Linked(p.Provider); ok {
		pl, err := egress.ConfineLinked(sp, api.DefaultImage, pol, sp.Labels, l.GatewayHost(), l.GatewayNameFile())
		if err == nil {
			pl.NameGateway(sp.Name + "-gw")
		}
		return pl, err
	}
	pl, err := egress.Confine(sp, api.DefaultImage, pol, sp.Labels)
	if err != nil {
		return pl, err
	}
	eng, _ := netgate.Engine(p.Provider)
	atMount := pl.MountOn(eng)
	pl.FromImage(gw.image)
	if !atMount {
		if err := eng.CreateVolume(core.Made(ctx), pl.Volume); err != nil {
			return pl, err
		}
	}
	return pl, nil
}

// makeGateway makes plan's gateway for the member whose id is member; a
// linked one gets its program (egress.InstallLinkedReady). It holds its pool's
// policy and no secret (the claim gives it the sandbox's name): it serves
// the member from now on.
func (p *Pool) makeGateway(ctx context.Context, plan *egress.Plan, member string, gw gatePrep) error {
	g := plan.Gateway
	g.Labels = cloneLabels(g.Labels)
	g.Labels[core.LabelPoolMember] = member
	_, err := p.Provider.Create(core.Made(ctx), g)
	switch {
	case err != nil:
	case plan.Linked():
		// It holds no secret: installed and told ready in one exec.
		err = egress.InstallLinkedReady(ctx, p.Provider, provider.Ref{ID: g.Name}, bytes.NewReader(gw.program))
	default:
		err = egress.Ready(ctx, p.Provider, provider.Ref{ID: g.Name})
	}
	return err
}

// gatewaysOf are r's members' gateways in all (the engine's pooled
// containers), by the id of their member.
func gatewaysOf(r *api.Repo, all []provider.Sandbox) map[string][]provider.Sandbox {
	out := map[string][]provider.Sandbox{}
	for _, c := range all {
		if r.Owns(c.Labels) && isGateway(c) {
			out[c.Labels[core.LabelPoolMember]] = append(out[c.Labels[core.LabelPoolMember]], c)
		}
	}
	return out
}

// dropOrphanGateways removes the gateways whose member is gone (removed
// behind litterbox's back, or a removal cut short) and that no create
// claimed: what a claimed member's gateway is, is its sandbox's.
func (p *Pool) dropOrphanGateways(ctx context.Context, gitDir string, all []provider.Sandbox, gws map[string][]provider.Sandbox) error {
	live := map[string]bool{}
	for _, c := range all {
		if !isGateway(c) {
			live[c.Ref.ID] = true
		}
	}
	var errs []error
	for id, gs := range gws {
		if live[id] || claimedBySandbox(gitDir, id) {
			continue
		}
		for _, g := range gs {
			errs = append(errs, p.removeGateway(ctx, g.Name))
		}
	}
	return errors.Join(errs...)
}

// dropMember removes an unclaimed pooled container (and gws, its
// gateways), claiming it first, so
// that a create taking it at that very moment is never handed a container
// being removed: of the two, the one whose claim is linked first has it.
// dropped is false when a create got it.
func (p *Pool) dropMember(ctx context.Context, gitDir string, c provider.Sandbox, gws []provider.Sandbox) (dropped bool, err error) {
	if c.Ref.ID != "" {
		ok, err := ClaimMember(gitDir, c.Ref.ID, Claim{Claimed: time.Now().UTC()})
		if err != nil {
			return false, err
		}
		if !ok && claimedBySandbox(gitDir, c.Ref.ID) {
			return false, nil
		}
	}
	errs := []error{p.Remove(ctx, gitDir, c)}
	for _, g := range gws {
		errs = append(errs, p.removeGateway(ctx, g.Name))
	}
	return true, errors.Join(errs...)
}

// Remove removes a pooled container, its gateway (as its record names it)
// and its record.
func (p *Pool) Remove(ctx context.Context, gitDir string, c provider.Sandbox) error {
	rec := readMember(gitDir, c.Ref.ID)
	if err := p.Provider.Remove(ctx, c.Ref); err != nil {
		return fmt.Errorf("remove pooled sandbox %s: %w", c.Name, err)
	}
	if rec != nil && rec.Gateway != "" {
		if err := p.removeGateway(ctx, rec.Gateway); err != nil {
			return err
		}
	}
	return Forget(gitDir, c.Ref.ID)
}

// removeGateway removes a member's gateway container and its volume (named
// as it is); gone already is done.
func (p *Pool) removeGateway(ctx context.Context, name string) error {
	if err := p.Provider.Remove(ctx, p.gate.RefOf(name)); err != nil {
		return fmt.Errorf("remove pooled sandbox's gateway %s: %w", name, err)
	}
	return p.gate.RemoveVolume(ctx, name)
}

// forgetGone removes the pool records of containers that no longer exist
// (removed by hand, or with a sandbox): all is the engine's list of pooled
// containers, taken under the pool's lock (a container dropped since has
// lost its record already). Errors are left for the next fill.
func forgetGone(gitDir string, all []provider.Sandbox) {
	entries, err := os.ReadDir(poolDir(gitDir))
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, c := range all {
		live[c.Ref.ID] = true
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".member")
		if !ok {
			id, ok = strings.CutSuffix(e.Name(), ".claim")
		}
		if ok && !live[id] && !beingDeleted(gitDir, id) {
			_ = Forget(gitDir, id)
		}
	}
}

// beingDeleted says the claim of container id is still needed: the delete
// of the sandbox that claimed it removed the container and goes on with
// the rest (state.MarkDeleting), among it the gateway, a pool member's,
// which the claim makes the sandbox's. That delete forgets it at its end.
func beingDeleted(gitDir, id string) bool {
	c, _ := ReadClaim(gitDir, id)
	return c != nil && state.DeletingID(gitDir, c.Slug) == id
}

// Delete removes every unclaimed pooled container of r and its record;
// it returns their names.
func (p *Pool) Delete(ctx context.Context, r *api.Repo) ([]string, error) {
	unlock, err := state.Lock(ctx, poolDir(r.Git.CommonDir))
	if err != nil {
		return nil, err
	}
	defer unlock()
	ms, all, err := p.unclaimed(ctx, r)
	if err != nil {
		return nil, err
	}
	removed := []string{}
	var errs []error
	gws := gatewaysOf(r, all)
	for _, m := range ms {
		dropped, err := p.dropMember(ctx, r.Git.CommonDir, m.c, gws[m.c.Ref.ID])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if dropped {
			removed = append(removed, m.c.Name)
		}
	}
	errs = append(errs, p.dropOrphanGateways(ctx, r.Git.CommonDir, all, gws))
	forgetGone(r.Git.CommonDir, all)
	err = errors.Join(errs...)
	if err == nil {
		// Every member went, a network a fill cut short left among them.
		_ = os.Remove(filepath.Join(poolDir(r.Git.CommonDir), fillingFile))
		if k, ok := p.Provider.(provider.ClaimKeeper); ok {
			k.EndClaims(ctx)
		}
	}
	return removed, err
}

// Take claims the first of candidates (Candidates) that no other create
// took meanwhile, for the sandbox c names; nil when every one was taken.
func Take(gitDir string, candidates []*MemberFile, c Claim) (*MemberFile, error) {
	for _, m := range candidates {
		ok, err := ClaimMember(gitDir, m.Ref.ID, c)
		if err != nil {
			return nil, fmt.Errorf("claim the pooled sandbox %s: %w", m.Name, err)
		}
		if ok {
			return m, nil
		}
	}
	return nil, nil
}

// Candidates are the filled, unclaimed members recorded for key, oldest
// first: host files only, no engine call. Those made from commit come
// first; with recopy (Recopies), members without a gateway made from
// another commit follow, for a claim that copies commit into them.
func Candidates(gitDir, key, commit string, recopy bool) []*MemberFile {
	var same, other []*MemberFile
	for m := range filled(gitDir) {
		switch {
		case m.Key != key:
		case m.Commit == commit:
			same = append(same, m)
		case recopy && m.Gateway == "":
			other = append(other, m)
		}
	}
	for _, l := range [][]*MemberFile{same, other} {
		sort.Slice(l, func(i, j int) bool { return l[i].Filled.Before(l[j].Filled) })
	}
	return append(same, other...)
}

// Recopies says whether a create on pv's engine takes a member made from
// another commit than its own, copying its commit in (in place of the
// member's tree, in the exec that runs its setup), rather than making its
// own sandbox: on an engine whose claim is one call (provider.Claimer:
// Kubernetes) a sandbox's start costs seconds, a copy a fraction of that.
// Elsewhere such a member is stale: the next fill replaces it.
func Recopies(pv provider.Provider) bool {
	_, ok := pv.(provider.Claimer)
	return ok
}

// Mismatch says why no filled, unclaimed member is a candidate for key and
// commit (Candidates found none): how many were made for another
// configuration (their spec or policy differ: the key), how many from
// another commit. Both 0: the pool is empty.
func Mismatch(gitDir, key, commit string) (otherConfig, otherCommit int) {
	for m := range filled(gitDir) {
		switch {
		case m.Key != key:
			otherConfig++
		case m.Commit != commit:
			otherCommit++
		}
	}
	return otherConfig, otherCommit
}

// HasMembers says whether the pool of the repository at gitDir holds a
// member filled and not claimed: it reads up to the first one (every
// create asks, a pooled one too).
func HasMembers(gitDir string) bool {
	for range filled(gitDir) {
		return true
	}
	return false
}

// filled are the records of the members filled and not claimed, read one
// at a time.
func filled(gitDir string) iter.Seq[*MemberFile] {
	return func(yield func(*MemberFile) bool) {
		entries, err := os.ReadDir(poolDir(gitDir))
		if err != nil {
			return
		}
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".member")
			if !ok {
				continue
			}
			if _, taken := ReadClaim(gitDir, id); taken {
				continue
			}
			if m := readMember(gitDir, id); m != nil && !yield(m) {
				return
			}
		}
	}
}
