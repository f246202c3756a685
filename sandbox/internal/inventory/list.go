// Package inventory finds what the engine and git hold of sandboxes: their
// containers, leftover networks, claimed pool members and branches, with
// the state files that say whether each is usable; it lists them (one
// engine list, one git call per repository), resolves a running sandbox's
// handle, and removes a sandbox (delete, prune).
package inventory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Inventory looks sandboxes up on c's engine. The pool tells whether the
// engine pools (then lookups also list pooled containers that a create
// claimed).
type Inventory struct {
	*core.Common
	pool *pool.Pool
	gate *netgate.Gate
	// Wake, when set, starts every operation Running finds a sandbox for:
	// it marks activity and undoes an idle pause (pause.Pauser.Wake);
	// resumed says it resumed the sandbox.
	Wake func(ctx context.Context, h *api.Handle) (resumed bool, err error)
}

// New is the inventory of c's engine.
func New(c *core.Common, p *pool.Pool, g *netgate.Gate) *Inventory {
	return &Inventory{Common: c, pool: p, gate: g}
}

// Sandboxes lists what the engine holds of sandboxes, with one provider
// List: those of r (see Repo.owns), or of every repository when r is nil.
// slug narrows it to one sandbox. Extra labels (LITTERBOX_LABELS) narrow
// every lookup too: they make a namespace, so a test suite's `pause
// --all-repos` never reaches a user's sandboxes, nor the reverse.
//
// r's objects are picked here, not by a label filter: those made before
// repository ids existed carry no id, only the git dir, and an engine's
// filter cannot say "this id, or no id and this git dir".
//
// A container of the warm pool carries no slug: the sandbox a create made of
// it is known from its claim (pool.go). So a list of every sandbox, and a
// Lookup in a repository that has claimed any, select by the git dir label
// instead, which both carry, and tell them apart here.
func (inv *Inventory) Sandboxes(ctx context.Context, r *api.Repo, slug string) ([]provider.Sandbox, error) {
	sbs, _, err := inv.Objects(ctx, r, slug)
	return slices.DeleteFunc(sbs, netgate.IsGateway), err
}

// withGateways is Sandboxes with the sandboxes' egress gateways, which go
// where their sandbox goes.
func (inv *Inventory) withGateways(ctx context.Context, r *api.Repo, slug string) ([]provider.Sandbox, error) {
	sbs, _, err := inv.Objects(ctx, r, slug)
	return sbs, err
}

// Objects is sandboxes, plus the pooled containers that no create claimed
// (of r, or of every repository when r is nil), Found by the same list; a
// Lookup of one slug in a repository that has claimed none finds no pool.
func (inv *Inventory) Objects(ctx context.Context, r *api.Repo, slug string) (sbs, members []provider.Sandbox, err error) {
	return inv.objects(ctx, r, slug, false)
}

// objects is Objects; containersOnly lists no networks (see
// provider.Selector), for what is shown only.
func (inv *Inventory) objects(ctx context.Context, r *api.Repo, slug string, containersOnly bool) (sbs, members []provider.Sandbox, err error) {
	sel := provider.Selector{Labels: map[string]string{api.LabelSlug: slug}, Report: core.LabelKeys, ContainersOnly: containersOnly}
	for k, v := range inv.ExtraLabels {
		sel.Labels[k] = v
	}
	var pooled []provider.Sandbox
	if slug == "" || r == nil || pool.HasClaims(r.Git.CommonDir) {
		// Sandboxes and pooled containers both carry the git dir label:
		// one engine list finds them all.
		delete(sel.Labels, api.LabelSlug)
		sel.Labels[api.LabelGitDir] = ""
		sel.Report = append(slices.Clone(core.LabelKeys), api.LabelPool, core.LabelPoolMember)
		all, err := inv.Provider.List(ctx, sel)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range all {
			switch l := o.Labels[api.LabelSlug]; {
			case o.Labels[api.LabelPool] != "":
				pooled = append(pooled, o)
			case l != "" && (slug == "" || l == slug):
				sbs = append(sbs, o)
			}
		}
	} else if sbs, err = inv.Provider.List(ctx, sel); err != nil {
		return nil, nil, err
	}
	// A pooled container a create claimed is that sandbox; the rest,
	// networks a member left included, are the pool's. Each claim is read
	// once.
	for _, p := range pooled {
		var c *pool.Claim
		if id := pool.ClaimID(p); id != "" {
			c, _ = pool.ReadClaim(p.Labels[api.LabelGitDir], id)
		}
		switch {
		case c == nil:
			members = append(members, p)
		case slug == "" || c.Slug == slug:
			sbs = append(sbs, pool.AsClaimed(p, c))
		}
	}
	if r == nil {
		return sbs, members, nil
	}
	notMine := func(sb provider.Sandbox) bool { return !r.Owns(sb.Labels) }
	return slices.DeleteFunc(sbs, notMine), slices.DeleteFunc(members, notMine), nil
}

// List returns the sandboxes of r, or of every repository when r is nil, from
// one provider List and one git for-each-ref per repository (side by side), plus a read of a small state file or two per
// sandbox. Branches without a container, containers without a branch and
// networks without either are listed too, as orphans. Across repositories, a
// repository is Found through its containers and networks: one whose
// Sandboxes all lost both is not Found, since nothing else records it.
func (inv *Inventory) List(ctx context.Context, r *api.Repo) ([]api.Sandbox, error) {
	var (
		sbs     []provider.Sandbox
		members []provider.Sandbox
		listErr error
		own     map[string]string
		pre     map[string]rowFiles
		refErr  error
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		// In one repository, the networks are listed only when
		// something of it may have left one (see needNetworks).
		sbs, members, listErr = inv.objects(ctx, r, "", r != nil)
	}()
	if r != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if own, refErr = r.Git.Refs(ctx, "refs/heads/"+api.BranchPrefix); refErr == nil {
				pre = readRows(r.Git.CommonDir, own)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(listErr, refErr); err != nil {
		return nil, err
	}
	if r != nil && needNetworks(r, sbs, members, own) {
		var err error
		if sbs, _, err = inv.Objects(ctx, r, ""); err != nil {
			return nil, err
		}
	}
	gws := GatewayStates(sbs)
	return inv.assemble(ctx, r, sbs, own, pre, gws)
}

// needNetworks says whether a list of r, whose engine list (objs and
// members, r's sandboxes and unclaimed pool members) named its containers
// only, must list the engine's networks too: a network outlives its
// sandbox's container only when something host-side still names the
// sandbox (a create makes its journal first, a delete clears its state
// last; a user who removes a container by hand leaves its branch), or its
// pool member (pool.MayHoldNetworks). Then a branch or state directory of
// a sandbox with no container says so, or a record of the pool's.
func needNetworks(r *api.Repo, objs, members []provider.Sandbox, own map[string]string) bool {
	has := map[string]bool{}
	ids := map[string]bool{}
	for _, o := range slices.Concat(objs, members) {
		if o.State != provider.StateNone && !netgate.IsGateway(o) {
			has[o.Labels[api.LabelSlug]] = true
			ids[o.Ref.ID] = true
		}
	}
	for ref := range own {
		if !has[strings.TrimPrefix(ref, "refs/heads/"+api.BranchPrefix)] {
			return true
		}
	}
	entries, err := os.ReadDir(filepath.Join(r.Git.CommonDir, "litterbox"))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case !e.IsDir():
		case name == pool.DirName:
			if pool.MayHoldNetworks(r.Git.CommonDir, func(id string) bool { return ids[id] }) {
				return true
			}
		case !strings.Contains(name, ".") && !has[name]:
			return true // a slug's state (slugs have no dot)
		}
	}
	return false
}

// GatewayStates are the states of the egress gateways among objs, by
// container name (what net.json names).
func GatewayStates(objs []provider.Sandbox) map[string]provider.State {
	gws := map[string]provider.State{}
	for _, o := range objs {
		if netgate.IsGateway(o) && o.Name != "" {
			gws[o.Name] = o.State
		}
	}
	return gws
}

// ListDir lists the sandboxes of the repository open finds, and gives the
// repository and the pooled containers of every repository (for
// pool.Entries). Finding the repository (open: git, and whatever else the
// caller does first) runs beside the engine list, which asks for every
// sandbox and are filtered here, and so does the read of the repository's
// sandboxes' state files (readRows): list costs about one engine list.
// open may give the repository's sandbox branches with it, as
// core.OpenRepoBranches does, which spares a git call; when it gives nil
// they are read here.
func (inv *Inventory) ListDir(ctx context.Context, open func(context.Context) (*api.Repo, map[string]string, error)) (*api.Repo, []api.Sandbox, []provider.Sandbox, error) {
	var (
		members []provider.Sandbox
		r       *api.Repo
		repErr  error
		own     map[string]string
		pre     map[string]rowFiles
		sbs     []provider.Sandbox
		listErr error
		wg      sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if r, own, repErr = open(ctx); repErr == nil && own == nil {
			own, repErr = r.Git.Refs(ctx, "refs/heads/"+api.BranchPrefix)
		}
		if repErr == nil {
			pre = readRows(r.Git.CommonDir, own)
		}
	}()
	go func() {
		defer wg.Done()
		sbs, members, listErr = inv.objects(ctx, nil, "", true)
	}()
	wg.Wait()
	if repErr != nil {
		return nil, nil, nil, repErr
	}
	notMine := func(sb provider.Sandbox) bool { return !r.Owns(sb.Labels) }
	if listErr == nil && needNetworks(r, slices.DeleteFunc(slices.Clone(sbs), notMine), slices.DeleteFunc(slices.Clone(members), notMine), own) {
		sbs, members, listErr = inv.Objects(ctx, nil, "")
	}
	if listErr != nil {
		return nil, nil, nil, listErr
	}
	gws := GatewayStates(sbs)
	mine := slices.DeleteFunc(sbs, notMine)
	list, err := inv.assemble(ctx, r, mine, own, pre, gws)
	return r, list, members, err
}

// assemble joins what the engine holds (containers, leftover networks) and
// branches into list rows; own are r's branches (r may be nil when listing
// every repository); gws are the states of the gateways the engine holds,
// by name; pre are the state files of r's sandboxes read already, by slug
// (readRows; the others are read here). A gateway among sbs is no row, but
// names its repository, whose delete cut short may have left it alone
// (StatusLeftover).
func (inv *Inventory) assemble(ctx context.Context, r *api.Repo, sbs []provider.Sandbox, own map[string]string, pre map[string]rowFiles, gws map[string]provider.State) ([]api.Sandbox, error) {
	var wg sync.WaitGroup
	// Every repository that has a sandbox container or network, with its
	// branches.
	repos := map[string]*owner{}
	if r != nil {
		repos[selfKey] = &owner{key: selfKey, gitDir: r.Git.CommonDir, root: r.Root(), refs: own}
	}
	ids := map[string]string{} // repository id Found in a git dir
	objOwner := make([]*owner, len(sbs))
	for i, sb := range sbs {
		o := ownerOf(r, sb.Labels, ids)
		if repos[o.key] == nil {
			repos[o.key] = &o
		}
		objOwner[i] = repos[o.key]
	}
	var mu sync.Mutex
	for _, o := range repos {
		if o.refs != nil || o.gitDir == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &git.Repo{R: inv.Runner, Root: o.root, CommonDir: o.gitDir}
			refs, err := g.Refs(ctx, "refs/heads/"+api.BranchPrefix)
			if err != nil {
				// The repository may be gone; its containers and networks
				// then show as orphans, which is the truth.
				inv.Log.Debug("cannot read branches", "repo", o.root, "err", err)
			}
			mu.Lock()
			o.refs = refs
			mu.Unlock()
		}()
	}
	wg.Wait()

	type key struct{ owner, slug string }
	rows := map[key]*api.Sandbox{}
	var order []key
	row := func(o *owner, slug string) *api.Sandbox {
		k := key{o.key, slug}
		if sb := rows[k]; sb != nil {
			return sb
		}
		sb := &api.Sandbox{Name: slug, Branch: api.BranchPrefix + slug, Repo: o.root}
		rows[k] = sb
		order = append(order, k)
		return sb
	}
	type seen struct {
		state provider.State
		id    string // the container's, which its ready mark must name
	}
	states := map[key]seen{} // of the container, for the status
	for i, c := range sbs {
		if netgate.IsGateway(c) {
			continue
		}
		o, slug := objOwner[i], c.Labels[api.LabelSlug]
		sb := row(o, slug)
		if sb.Network == "" {
			sb.Network = c.Network
		}
		if c.State == provider.StateNone || sb.Container != "" {
			continue // a leftover network, or an older second container (the newest comes first)
		}
		sb.Container, sb.Base, sb.Created, sb.Runtime = c.Name, c.Labels[api.LabelBase], c.Created, c.Labels[api.LabelRuntime]
		states[key{o.key, slug}] = seen{c.State, c.Ref.ID}
	}
	for _, o := range repos {
		for ref := range o.refs {
			row(o, strings.TrimPrefix(ref, "refs/heads/"+api.BranchPrefix))
		}
		if o.gitDir != "" {
			// A delete cut short after the container and the branch
			// went: what is left is its gateway, volume or state alone.
			for _, slug := range state.CutShort(o.gitDir) {
				row(o, slug)
			}
		}
	}
	out := make([]api.Sandbox, 0, len(order))
	for _, k := range order {
		sb := rows[k]
		o := repos[k.owner]
		hasBranch := o.refs[api.BranchRef(k.slug)] != ""
		f, ok := pre[k.slug]
		if !ok || k.owner != selfKey {
			f = readRow(o.gitDir, k.slug)
		}
		if sb.Container == "" && !hasBranch && f.deleting && f.creating {
			continue // being deleted: its user saw it go
		}
		sb.GitDir = o.gitDir
		st := states[k]
		ready := st.id != "" && f.readyID == st.id
		sb.Status = status(f, sb.Container != "", st.state, ready, hasBranch)
		sb.Egress, sb.Secrets = f.egress, f.secrets
		inv.note(sb, f, gws)
		if sb.Status == api.StatusLeftover && f.deleteFailed != "" {
			sb.Note += "; its removal in the background failed: " + strings.TrimRight(f.deleteFailed, ".")
		}
		if sb.Note == "" && sb.Status == api.StatusActive && f.run != nil {
			sb.Note = runNote(*f.run, sb.Name)
		}
		out = append(out, *sb)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repo != out[j].Repo {
			return out[i].Repo < out[j].Repo
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// note marks what the user can act on: a stopped sandbox, which resume
// starts again where the engine runs gateways, and a usable sandbox whose
// gateway is not running (its way out is gone until resume starts it), or
// is gone (resume makes it again). f are its state files.
func (inv *Inventory) note(sb *api.Sandbox, f rowFiles, gws map[string]provider.State) {
	restart := inv.gate != nil && inv.gate.Supported()
	switch sb.Status {
	case api.StatusLeftover:
		sb.Note = "a delete of it was cut short after its container and branch went: `litterbox delete " + sb.Name + "` removes what is left (its gateway, their volume, its state)"
	case api.StatusStopped:
		// Not where gateways are linked by network (Kubernetes): a pod
		// does not stop and start again.
		if restart && !inv.gate.Linked() {
			sb.Note = "its container stopped (an engine restart stops them): `litterbox resume " + sb.Name + "` starts it again and fills /src from its branch"
		}
	case api.StatusActive, api.StatusPaused, api.StatusFailedSetup:
		if sb.Status == api.StatusPaused && f.idlePaused != nil {
			sb.Note = fmt.Sprintf("paused after %s without activity, with its gateway: the next command or MCP call on it resumes it", *f.idlePaused)
		}
		if sb.Egress == nil || sb.Egress.Gateway == "" || !restart {
			return
		}
		// Where gateways are linked by network (Kubernetes), resume makes
		// a gateway pod that ended again, and a running sandbox's pod
		// with it (it knows its gateway by its old address).
		starts, again := "starts it again", ""
		if inv.gate.Linked() {
			starts = "makes it again"
			if sb.Status != api.StatusPaused {
				again = ", and its pod again (as a pause and resume do: its work is recorded first, its processes and /tmp are lost)"
			}
		}
		switch st, ok := gws[sb.Egress.Gateway]; {
		case st == provider.StatePaused && sb.Status == api.StatusPaused:
			// Paused with it (an idle pause): resume resumes both.
		case !ok || st == provider.StateNone:
			// (On Kubernetes a gateway pod that is gone leaves its
			// NetworkPolicy, listed without a state.)
			sb.Status = api.StatusGatewayDown
			sb.Note = "its egress gateway " + sb.Egress.Gateway + " is gone, and with it its way out (it reaches nothing): `litterbox resume " + sb.Name + "` makes it again, with the policy `litterbox net " + sb.Name + "` shows" + again
		case st != provider.StateRunning:
			sb.Status = api.StatusGatewayDown
			sb.Note = "its egress gateway " + sb.Egress.Gateway + " is " + string(st) + ", so it reaches nothing: `litterbox resume " + sb.Name + "` " + starts + again
		}
	}
}

// runNote says that run, a `litterbox run`, is going in sandbox slug, or
// that it was when its litterbox was stopped (state.RunFile).
func runNote(run state.Run, slug string) string {
	switch {
	case run.Going():
		return fmt.Sprintf("%s runs in it (`litterbox run`, pid %d): its work lands on litterbox/%s as it goes", run.Harness, run.PID, slug)
	}
	return fmt.Sprintf("a run of %s was going in it when its litterbox was stopped, and may still run there: `litterbox exec %s -- ps` shows it, `litterbox snapshot %s` commits what it changed", run.Harness, slug, slug)
}

// owner is a repository that list Found sandboxes of.
type owner struct {
	key string
	// gitDir is its common git dir, where its branches and state files
	// are; "" when no longer known (the repository moved, or another one
	// is at the path its objects name).
	gitDir string
	root   string
	refs   map[string]string
}

// selfKey is the owner key of the repository list runs in.
const selfKey = "self"

// ownerOf is the repository an object with labels belongs to, as list
// groups them: r when r owns it; else the one of its id, whose branches and
// state are read only where its git dir label points and that git dir still
// holds that id. An object made before ids existed belongs to whatever
// repository is at its git dir now, as Repo.owns has it. ids caches the
// id files read.
func ownerOf(r *api.Repo, labels map[string]string, ids map[string]string) owner {
	root := labels[api.LabelRepo]
	if r != nil && r.Owns(labels) {
		return owner{key: selfKey, gitDir: r.Git.CommonDir, root: r.Root()}
	}
	gd, id := labels[api.LabelGitDir], labels[api.LabelRepoID]
	there, ok := ids[gd]
	if !ok {
		there = core.ReadRepoID(gd)
		ids[gd] = there
	}
	switch {
	case id == "" && there != "":
		return owner{key: "id:" + there, gitDir: gd, root: root}
	case id == "":
		return owner{key: "gitdir:" + gd, gitDir: gd, root: root}
	case there == id:
		return owner{key: "id:" + id, gitDir: gd, root: root}
	}
	return owner{key: "id:" + id, root: root}
}

// status is what list says of a sandbox of the repository with common git
// dir gitDir, from what exists of it: its container (in state cstate,
// marked ready or not), its branch, and its state files. A create running
// now, or one cut short before the sandbox was ready, comes first: nothing of
// it may pass for a usable sandbox, nor for an orphan with work on it.
//
// Its state files f are empty when not known (see owner).
func status(f rowFiles, container bool, cstate provider.State, ready, branch bool) api.Status {
	switch {
	case f.creating:
		return api.StatusCreating
	case container && ready:
		if !branch {
			return api.StatusNoBranch
		}
		return containerStatus(cstate, f)
	case container && (branch || f.journal):
		return api.StatusIncomplete
	case container:
		return api.StatusNoBranch
	case f.journal:
		return api.StatusIncomplete
	case branch:
		return api.StatusNoContainer
	case f.deleting:
		return api.StatusLeftover
	}
	return api.StatusNoSandbox
}

func containerStatus(cstate provider.State, f rowFiles) api.Status {
	switch cstate {
	case provider.StateRunning:
		if f.setupFailed {
			return api.StatusFailedSetup
		}
		return api.StatusActive
	case provider.StatePaused:
		return api.StatusPaused
	default:
		return api.StatusStopped
	}
}

// SecretsOf are sandbox slug's secrets, from its record; nil for none.
func SecretsOf(gitDir, slug string) []api.Secret {
	bs, _, _ := netgate.ReadSecrets(gitDir, slug)
	var out []api.Secret
	for _, b := range bs {
		out = append(out, api.Secret{Name: b.Name, Env: b.Env, Hosts: append([]string{}, b.Hosts...)})
	}
	return out
}

// EgressOf is sandbox slug's way out, from its record; nil when it has no
// gateway.
func EgressOf(gitDir, slug string) *api.Egress {
	rec, ok, _ := netgate.Read(gitDir, slug)
	if !ok {
		return nil
	}
	return &api.Egress{Mode: rec.Mode, Allow: append([]string{}, rec.Allow...), Deny: append([]string{}, rec.Deny...), Registries: rec.Registries, Gateway: rec.Gateway}
}
