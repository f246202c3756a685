// Package provision makes sandboxes: Create reads as its steps (check the
// engine's isolation, write the journal, claim the branch, start the
// container or claim a pooled one, fill it with the commit and run the
// setup, then mark it ready), each step that makes something pushing its
// undo; the settings a create takes are the user's, never what an agent
// wrote (trust.go); Fork creates a sandbox from another's branch tip.
package provision

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/cache"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/secrets"
)

// Provisioner makes sandboxes on c's engine, with the other concerns it
// composes: the guest fills them, the isolation check guards the engine,
// the pool hands out members, the inventory finds what a name left, the
// supervisor installs the services, the recorder snapshots a fork's source.
type Provisioner struct {
	*core.Common
	guest    *guest.Guest
	iso      *isolation.Checker
	pool     *pool.Pool
	inv      *inventory.Inventory
	services *services.Supervisor
	rec      *recording.Recorder
	gate     *netgate.Gate
}

// New is the provisioner of c's sandboxes over the concerns it composes.
func New(c *core.Common, g *guest.Guest, iso *isolation.Checker, p *pool.Pool, inv *inventory.Inventory, sv *services.Supervisor, rec *recording.Recorder, gate *netgate.Gate) *Provisioner {
	return &Provisioner{Common: c, guest: g, iso: iso, pool: p, inv: inv, services: sv, rec: rec, gate: gate}
}

// Create makes a sandbox: it validates the name before any git or engine
// call, takes the sandbox's create lock, claims the branch litterbox/<slug> at
// HEAD (atomically, so a name that is taken is refused), has the engine make
// the sandbox's network and start its container, copies HEAD into /src and
// runs the startup command once. Any failure before the startup command
// removes everything made so far. A failing startup command leaves the
// sandbox in place, marked failed-setup, and returns ErrSetupFailed.
//
// A create cut short where no rollback can run (kill -9, a dead engine) leaves
// its create journal behind and no ready mark, so list shows what is left as
// incomplete and no operation uses it; the next create of the name removes it
// first, when its branch holds nothing beyond its base.
func (pv *Provisioner) Create(ctx context.Context, r *api.Repo, name string, opts api.CreateOptions) (*api.Created, error) {
	ph := core.StartPhases(pv.Log, "create")
	defer ph.End()
	c, err := pv.beginCreate(ctx, r, name, opts)
	if err != nil {
		return nil, err
	}
	c.phases = ph
	ph.Done("checks")
	defer c.end()
	for _, step := range []struct {
		phase string
		run   func(context.Context) error
	}{
		{"isolation", c.checkIsolation}, // the engine keeps sandboxes apart, or the user allows it
		{"journal", c.writeJournal},     // from here on, whatever a kill leaves is known as an unfinished create
		{"gateway", c.startGateway},     // a confined sandbox's gateway, beside the rest (egress.go)
		{"branch", c.claimBranch},       // litterbox/<slug> at HEAD, unless recreating from it
		{"container", c.startContainer}, // the engine makes the network and starts the container
		{"", c.fill},                    // HEAD into /src, then setup; services and ports meanwhile (its phases are its own)
		{"", c.branchClaimed},           // the branch, made beside the engine's calls (claimBranch)
	} {
		if err := step.run(ctx); err != nil {
			return nil, c.fail(ctx, err)
		}
		switch {
		case step.phase == "container" && c.pooled != nil:
			ph.Done("claim of a pooled container")
		case step.phase != "":
			ph.Done(step.phase)
		}
	}
	defer ph.Done("ready")
	return c.finish(ctx)
}

// creation is one Create on its way.
type creation struct {
	pv       *Provisioner
	r        *api.Repo
	slug     string
	opts     api.CreateOptions
	progress func(step string)
	// head is the base label; start the commit copied into /src (the branch
	// tip when recreating from it).
	head, start string
	cfg         *config.Config
	// settings is the record of what cfg was made from (trust.go).
	settings *state.Settings
	setup    []string
	out      *api.Created
	unlock   func()
	undo     undoStack
	// Whether tracked files are dirty is only reported, so it runs beside
	// the real work.
	dirty sync.WaitGroup
	// Archiving only reads the repository, so it runs while the branch and
	// container are made, into memory, instead of after them.
	archive       *guest.Archive
	cancelArchive context.CancelFunc
	// platform is the image's os/arch; "" when the engine pulls it.
	platform string
	// volumes are the image's VOLUMEs, covered read-only (volumeMasks).
	volumes []string
	// isolation is the engine's isolation check, started beside the rest;
	// nil for a sandbox without a network.
	isolation *isolation.Check
	sandbox   *provider.Sandbox
	// stamp is the scan stamp the copy reported; setupErr a failed setup.
	stamp    int64
	setupErr error
	// pool are the warm pool's members this create may claim (pool.go);
	// pooled the one it claimed, renamed when its rename has ended.
	pool      []*pool.MemberFile
	pooled    *pool.MemberFile
	renamed   chan struct{}
	renamedTo string
	renameErr error
	// claimed ends with the engine's claim of the pooled member, on an
	// engine that has one (provider.Claimer), started beside the rest.
	claimed chan error
	// branchMade ends with the branch made (claimBranch): beside the
	// engine's calls, cold or pooled.
	branchMade chan error
	// net is the sandbox's way out through its gateway (egress.go); nil
	// for a sandbox without one. confined is the sandbox's spec behind it,
	// once startGateway planned it; volumeMade ends with its volume made,
	// gatewayMade with its container, gateway with both (its program is in
	// its image); host is what the gateway needs of the engine.
	net      *netgate.NetFile
	confined *provider.Spec
	// link is the sandbox's start beside a gateway linked by network:
	// cancelled when the gateway cannot be made (the sandbox's start waits
	// for its address).
	link       context.Context
	linkCancel context.CancelFunc
	volumeMade chan error
	// openToken is the token the copy step hands the gateway, which opens
	// on it (egress.OpenToken); "" for a gateway the host opens.
	openToken   string
	gateway     chan error
	gatewayMade chan error
	host        chan gatePrep
	// secrets are the sandbox's secrets (secrets.go); nil for none.
	secrets *secretPlan
	// bootstrap are the ignored files of the working tree copied in after
	// the commit's (bootstrap.go); nil for none.
	bootstrap    []git.ArchiveFile
	bootstrapped []string
	// dotenv are the secrets the marked values of its dotenv files are.
	dotenv []secrets.Declaration
	// phases times the create's phases for the debug log.
	phases *core.Phases
	// early is the image's inspection started beside the checks
	// (probeImage); nil when none was.
	early *imageProbe
}

// imageProbe is one image's inspection, started ahead of its need.
type imageProbe struct {
	image    string
	done     chan struct{}
	cancel   context.CancelFunc
	platform string
	img      provider.Image
	err      error
}

// probeImage starts inspecting the image a create names most often
// (--image, else the default), beside the checks of the repository and of
// its configuration, which say the image only once they end: a cold create
// inspects it next, and the checks and the inspection took turns on its
// path. Only where no warm pool's member could be claimed (a claim needs no
// inspection); the inspection is a read, and inspectImage cancels it when
// the configuration names another image.
func (c *creation) probeImage(ctx context.Context) {
	if !c.opts.NoPool && pool.HasMembers(c.r.Git.CommonDir) {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &imageProbe{image: cmp.Or(c.opts.Image, c.pv.Image), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.platform, p.img, p.err = c.pv.guest.ImageInfo(ctx, p.image)
	}()
	c.early = p
}

// result is the probe's inspection of image: ok is false when it
// inspected another image (or there is no probe), which it then stops.
func (p *imageProbe) result(image string) (platform string, img provider.Image, ok bool, err error) {
	if p == nil {
		return "", provider.Image{}, false, nil
	}
	if p.image != image {
		p.cancel()
		return "", provider.Image{}, false, nil
	}
	<-p.done
	p.cancel()
	return p.platform, p.img, true, p.err
}

// stop ends the probe, its answer unused.
func (p *imageProbe) stop() {
	if p != nil {
		p.cancel()
	}
}

// ownObjectName refuses a name that would give the sandbox's container
// the name of one of the repository's own objects: a sandbox's gateway
// (NAME-<id>-gw), or a container named apart from another repository's
// (NAME-<id>). A repository with no id yet has none.
func ownObjectName(r *api.Repo, name, slug string) error {
	if r.ID == "" {
		return nil
	}
	if id := "-" + r.ShortID(); strings.HasSuffix(slug, id) || strings.HasSuffix(slug, id+"-gw") {
		return core.NewError(api.ErrInvalidName, "Invalid sandbox name %s: names ending in %s-gw or %s name this repository's own objects (a sandbox's gateway, a container named apart from another repository's). Choose another name.", api.Quote(name), id, id)
	}
	return nil
}

// beginCreate checks everything that can be checked before anything is made
// (the name, HEAD, what an earlier sandbox of the name left, the
// configuration), takes the create lock, and starts the side work.
func (pv *Provisioner) beginCreate(ctx context.Context, r *api.Repo, name string, opts api.CreateOptions) (*creation, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	if err := ownObjectName(r, name, slug); err != nil {
		return nil, err
	}
	c := &creation{pv: pv, r: r, slug: slug, opts: opts, progress: opts.Progress}
	if c.progress == nil {
		c.progress = func(string) {}
	}
	c.probeImage(ctx)
	ok := false
	defer func() {
		if !ok {
			c.early.stop() // refused: end() does not run
		}
	}()
	// A create from HEAD reads HEAD, its branch and the committed settings
	// in one git call, under the create lock (readHead); one from another
	// commit checks that commit first.
	fromHead := opts.From == "" && !opts.FromBranch
	if !fromHead {
		if c.head, err = pv.createBase(ctx, r, slug, opts); err != nil {
			return nil, err
		}
	}
	_, statErr := os.Stat(r.StateDir(slug))
	var deleting func()
	if opts.Note != nil {
		deleting = func() {
			opts.Note(fmt.Sprintf("Waiting for the delete of %s to finish (its gateway and volume are being removed)…", name))
		}
	}
	if c.unlock, err = state.LockCreate(ctx, r, slug, deleting); err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			// A create refused here (bad configuration, a missing image)
			// made nothing, and leaves no state either.
			if os.IsNotExist(statErr) {
				_ = state.Remove(r, slug)
			}
			c.unlock()
		}
	}()
	var read *headRead
	if fromHead {
		if read, err = readHead(ctx, r, slug); err != nil {
			return nil, err
		}
		c.head = read.head
	}
	c.start = c.head
	cleaned := false
	switch fresh := os.IsNotExist(statErr); {
	case opts.FromBranch:
		if c.start, c.head, err = pv.recoverStart(ctx, r, slug); err != nil {
			return nil, err
		}
	case fresh && read != nil && !read.branch:
		// No state and no branch: nothing is left of a sandbox of the name.
	default:
		if cleaned, err = pv.clearLeftovers(ctx, r, slug, fresh); err != nil {
			return nil, err
		}
	}
	// The configuration is checked before anything is made. It is the
	// user's, never what an agent wrote (trust.go).
	inherited := false
	if c.cfg = opts.Config; c.cfg == nil {
		if c.cfg, c.settings, inherited, err = pv.createSettings(ctx, r, slug, opts, c.start, c.head, read.settings()); err != nil {
			return nil, err
		}
	} else {
		c.settings = &state.Settings{File: c.cfg.Committed}
	}
	if c.setup = opts.Setup; c.setup == nil {
		c.setup = c.cfg.Setup
	}
	// The image: --image, else the one the settings taken were made with,
	// else the configuration's, else the default. It goes into the
	// configuration the spec is made from.
	cfg := *c.cfg
	c.cfg = &cfg
	c.cfg.Egress.Allow = slices.Concat(c.cfg.Egress.Allow, opts.Allow)
	c.cfg.Secrets = secrets.Merge(opts.Secrets, c.cfg.Secrets)
	if opts.FillCache {
		c.cfg.Cache.ReadOnly = false
	}
	if err := cache.Check(pv.Provider, c.cfg.Cache); err != nil {
		return nil, err
	}
	image, byAgent := opts.Image, opts.ByAgent
	if image == "" && inherited {
		image, byAgent = c.settings.Image, c.settings.ImageByAgent
	}
	c.settings.Image, c.settings.ImageByAgent = image, byAgent && image != ""
	switch {
	case image != "" && byAgent && !slices.Contains(c.cfg.AgentImages, image):
		return nil, &api.Error{Kind: api.ErrImage,
			Msg:   fmt.Sprintf("An agent asked for the image %s, which agent_images in %s does not list: agents may pick only the images you list there (see docs/mcp.md).", image, config.LocalFile),
			Agent: fmt.Sprintf("The image %s is not one you may pick: the user lists the images agents may use in agent_images in %s. Create the sandbox without image (it gets the project's image), or ask the user to allow this one.", image, config.LocalFile)}
	case image != "":
		c.cfg.Image = image
	case c.cfg.Image == "" && c.cfg.DevContainer != nil && c.cfg.DevContainer.Dockerfile != "":
		if c.cfg.Image, err = pv.devContainerImage(ctx, r, cmp.Or(c.settings.From, c.head), c.cfg.DevContainer); err != nil {
			return nil, err
		}
	case c.cfg.Image == "":
		c.cfg.Image = pv.Image
	}
	if f := c.cfg.DevContainer; f != nil {
		rec := *f
		if rec.Dockerfile != "" {
			rec.Image, rec.Dockerfile, rec.Context = c.cfg.Image, "", ""
		}
		c.settings.DevContainer = &rec
	}
	// What the repository's devcontainer.json asks for that the sandbox
	// does not do, in one warning; none of it is applied.
	if w := c.cfg.DevContainerWarning(); w != "" {
		pv.Warn(w)
	}
	// The runtime: --runtime, else the one the settings taken were made
	// with, else the configuration's; by the engine's name for it, which
	// the engine is asked for before anything is made.
	runtime := opts.Runtime
	if runtime == "" && inherited {
		runtime = c.settings.Runtime
	}
	c.settings.Runtime = runtime
	if runtime != "" {
		c.cfg.Runtime = runtime
	}
	if c.cfg.Runtime, err = pv.EngineRuntime(ctx, c.cfg.Runtime); err != nil {
		return nil, err
	}
	if err := pv.checkSpec(ctx, spec.For(pv.Options, r, slug, c.head, c.cfg), slug); err != nil {
		return nil, err
	}
	// The way out: a gateway, unless the sandbox has no network or an
	// open one (egress.go).
	if err := c.planEgress(ctx, inherited); err != nil {
		return nil, err
	}
	// The ignored files of the working tree it gets (bootstrap.go); then
	// its secrets, through the gateway (secrets.go), the values of those
	// files the user marks among them.
	if err := c.planBootstrap(ctx); err != nil {
		return nil, err
	}
	if err := c.planSecrets(ctx, inherited); err != nil {
		return nil, err
	}
	if err := c.placehold(); err != nil {
		return nil, err
	}
	// A warm pool's member made from this commit for this configuration
	// (and, for a confined sandbox, this policy: its gateway is made with
	// it) already holds the copy, and its record the image's platform. A
	// sandbox with secrets is not pooled: its values are fetched for it.
	if !opts.FromBranch && !opts.NoPool && !opts.FillCache && c.secrets == nil && len(opts.Binds) == 0 {
		key := pool.Key(spec.For(pv.Options, r, slug, c.head, c.cfg), c.net)
		if c.pool = pool.Candidates(r.Git.CommonDir, key, c.start, pool.Recopies(pv.Provider)); len(c.pool) == 0 {
			// A member's spec is fixed when it is filled: say why none
			// fits, for `--log-level debug`.
			if cfgs, commits := pool.Mismatch(r.Git.CommonDir, key, c.start); cfgs+commits > 0 {
				pv.Log.Debug(fmt.Sprintf("no pooled sandbox fits this create (%d made for another configuration, %d from another commit): it makes its own container", cfgs, commits), "sandbox", slug)
			}
		}
	}
	// A pooled sandbox was made after the same check passed on this
	// engine (FillPool), and an engine restart, which may change what the
	// check would say, stops it: a claim needs no check of its own. The
	// check asks the engine which instance it is, beside the image's
	// inspection.
	// A confined sandbox has no network to share with another: its
	// gateway keeps it apart; unless its engine links the two by network,
	// which holds only where the engine keeps sandboxes apart.
	if c.cfg.Network != config.NetworkNone && len(c.pool) == 0 && (c.net == nil || c.linked()) {
		c.isolation = pv.iso.Start(ctx, c.cfg.Image)
	}
	if len(c.pool) == 0 {
		err := c.inspectImage(ctx)
		if err == nil && opts.CheckImage != nil {
			err = opts.CheckImage(ctx, c.cfg.Image)
		}
		if err != nil {
			if c.isolation != nil {
				c.isolation.Wait()
			}
			return nil, err
		}
	}
	c.out = &api.Created{Sandbox: api.Sandbox{
		Name: slug, Status: api.StatusActive, Branch: api.BranchPrefix + slug,
		Container: r.ContainerName(slug), Repo: r.Root(), Base: c.head, Created: time.Now().UTC(),
		Runtime: c.cfg.Runtime,
	}, Image: c.cfg.Image, RemovedIncomplete: cleaned, Bootstrapped: c.bootstrapped}
	if !opts.FromBranch && opts.From == "" {
		c.dirty.Add(1)
		go func() {
			defer c.dirty.Done()
			c.out.Uncommitted, _ = r.Git.DirtyTracked(ctx)
		}()
	}
	c.cancelArchive = func() {}
	if len(c.pool) == 0 {
		c.startArchive(ctx)
	}
	c.undo.hint = fmt.Sprintf("once the cause is fixed, remove it with `litterbox delete %s`, or run `litterbox create %s` again, which removes it first", slug, slug)
	// The journal and the rest of the state go last, and only when every
	// other step was undone: what a failed rollback leaves stays marked.
	c.undo.final = func() error { return state.Remove(r, slug) }
	if opts.FromBranch {
		c.undo.hint = fmt.Sprintf("once the cause is fixed, run `litterbox create --from-branch %s` again, which removes it first (the branch keeps its work)", slug)
		c.undo.final = func() error {
			return errors.Join(state.RemoveJournal(r, slug), os.Remove(state.SinceFile(r, slug)))
		}
	}
	ok = true
	return c, nil
}

// claimPooled takes a member of the warm pool: its claim is recorded first,
// exclusively, so no other create can take it; then the container takes
// the sandbox's name, beside the setup. false when every member was taken
// meanwhile.
func (c *creation) claimPooled(ctx context.Context) (bool, error) {
	gd := c.r.Git.CommonDir
	m, err := pool.Take(gd, c.pool, pool.Claim{Slug: c.slug, Base: c.head, Claimed: time.Now().UTC()})
	if err != nil || m == nil {
		return false, err
	}
	c.progress("claimed the pooled sandbox " + m.Name)
	c.pooled, c.platform, c.volumes = m, m.Platform, m.Volumes
	if m.Commit != c.start {
		// Made from another commit (pool.Recopies): the create's own
		// commit is copied in its place.
		c.cancelArchive()
		c.startArchive(ctx)
	}
	c.sandbox = &provider.Sandbox{Ref: m.Ref, Name: m.Name}
	c.out.Container, c.out.Pooled = m.Name, true
	c.undo.push("container "+m.Name, func(ctx context.Context) error {
		return c.pv.pool.Remove(ctx, gd, *c.sandbox)
	})
	if err := c.claimGateway(ctx, m); err != nil {
		return true, err
	}
	if rn, ok := c.pv.Provider.(provider.Renamer); ok {
		c.renamed = make(chan struct{})
		go c.rename(ctx, rn)
	}
	if cl, ok := c.pv.Provider.(provider.Claimer); ok {
		// Its gateway's too: a linked gateway learns the sandbox's name
		// from it (provider.GatewayLinks.GatewayNameFile).
		var gw provider.Ref
		if c.net != nil && m.Gateway != "" {
			gw = c.pv.gate.RefOf(m.Gateway)
		}
		c.claimed = make(chan error, 1)
		go func() { c.claimed <- cl.Claim(core.Made(ctx), c.sandbox.Ref, gw, c.slug) }()
	}
	return true, nil
}

// claimEnded waits for the engine's claim of the pooled member (nil when
// there is none), once.
func (c *creation) claimEnded() error { return awaitOnce(&c.claimed) }

// awaitOnce receives the one result of *ch and forgets the channel: nil
// when there is none, or it was received already.
func awaitOnce(ch *chan error) error {
	if *ch == nil {
		return nil
	}
	err := <-*ch
	*ch = nil
	return err
}

// rename gives the claimed container the sandbox's usual name: on an
// engine whose claim has no call of its own (Docker, Podman), the one
// engine call of a claim with nothing to run in the member, and so what
// says the member is still there (renameEnded). Nothing goes by that name
// (lookups go by the claim); an engine that cannot rename (Kubernetes: a
// pod's name is fixed) keeps the pool's.
func (c *creation) rename(ctx context.Context, rn provider.Renamer) {
	defer close(c.renamed)
	name := c.r.ContainerName(c.slug)
	err := rn.Rename(core.Made(ctx), c.sandbox.Ref, name)
	if errors.Is(err, provider.ErrConflict) {
		name = c.r.SuffixedName(c.slug)
		err = rn.Rename(core.Made(ctx), c.sandbox.Ref, name)
	}
	switch {
	case err == nil:
		c.renamedTo = name
	case errors.Is(err, provider.ErrConflict):
		// Both names taken: the engine answered, so the member is
		// there; it keeps the pool's name.
		c.pv.Log.Warn("the pooled sandbox keeps the pool's container name", "container", c.sandbox.Name, "err", err)
		err = nil
	}
	c.renameErr = err
}

// renameEnded waits for the rename of the claimed container (nil when
// there is none) and returns its error, once: a member that is gone is
// ErrNotFound, which the claim replaces (replacePooled); any other failure
// (the engine unreachable) fails the claim, which may have asked the
// engine nothing else. One that stopped
// is renamed all the same: list shows it stopped, with what starts it
// again, and the next command on it says so; as a member whose gateway
// stopped or went is shown with its gateway down.
func (c *creation) renameEnded() error {
	if c.renamed == nil {
		return nil
	}
	<-c.renamed
	err := c.renameErr
	c.renameErr = nil
	return err
}

// replacePooled: the claimed container died after it was filled (an engine
// restart stops them all; a pod deleted behind litterbox's back). It is
// removed, and the create takes another member, or makes a container of
// its own after all. A confined one goes straight to its own: its
// gateway's claim was this member's.
func (c *creation) replacePooled(ctx context.Context, cause error) error {
	if c.renamed != nil {
		<-c.renamed
	}
	c.renamed, c.renamedTo = nil, ""
	_ = c.claimEnded()
	c.pv.Log.Warn("the pooled sandbox is not running; taking another or making a new container", "container", c.sandbox.Name, "err", cause)
	last := c.undo.steps[len(c.undo.steps)-1]
	if err := last.fn(core.Made(ctx)); err != nil {
		return fmt.Errorf("remove the dead pooled sandbox %s: %w", c.sandbox.Name, err)
	}
	c.undo.steps = c.undo.steps[:len(c.undo.steps)-1]
	dead := c.pooled
	c.pool = slices.DeleteFunc(c.pool, func(m *pool.MemberFile) bool { return m == dead || c.net != nil })
	c.pooled, c.out.Pooled, c.out.SetupOutput = nil, false, ""
	c.out.Services, c.out.Ports = nil, nil
	if len(c.pool) == 0 {
		if err := c.unpooled(ctx); err != nil {
			return err
		}
	}
	if err := c.startContainer(ctx); err != nil {
		return err
	}
	return c.fill(ctx)
}

// unpooled readies a create that expected a pooled sandbox to make its own
// container: the image and the engine are checked, and the copy starts.
func (c *creation) unpooled(ctx context.Context) error {
	c.pool = nil
	c.cancelArchive()
	if err := c.inspectImage(ctx); err != nil {
		return err
	}
	if c.cfg.Network != config.NetworkNone && c.isolation == nil {
		c.isolation = c.pv.iso.Start(ctx, c.cfg.Image)
		if err := c.checkIsolation(ctx); err != nil {
			return err
		}
	}
	c.startArchive(ctx)
	return nil
}

// inspectImage checks the image, when the engine holds it: it must be for a
// platform litterbox has a scanner for. That is known before anything is
// made.
func (c *creation) inspectImage(ctx context.Context) error {
	platform, img, ok, err := c.early.result(c.cfg.Image)
	if !ok {
		platform, img, err = c.pv.guest.ImageInfo(ctx, c.cfg.Image)
	}
	if err != nil {
		return err
	}
	c.platform, c.volumes = platform, img.Volumes
	if c.platform == "" && c.cfg.Image != api.DefaultImage {
		return guest.MissingImage(c.cfg.Image)
	}
	return nil
}

// startArchive starts archiving the commit into memory, beside the rest.
func (c *creation) startArchive(ctx context.Context) {
	var archCtx context.Context
	archCtx, c.cancelArchive = context.WithCancel(ctx)
	c.archive = guest.StartArchive(archCtx, c.r, c.start, c.bootstrap)
}

// createBase is the commit a new sandbox starts from: HEAD, or the commit
// opts.From names.
func (pv *Provisioner) createBase(ctx context.Context, r *api.Repo, slug string, opts api.CreateOptions) (string, error) {
	if opts.From == "" {
		return r.Git.Head(ctx)
	}
	if opts.FromBranch {
		return "", core.NewError(api.ErrBadRef, "Cannot create sandbox '%s': --from-branch recreates a sandbox from its own branch, so it takes no other starting point; drop --from.", slug)
	}
	id, ok, err := r.Git.ResolveRef(ctx, opts.From)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", api.Quote(opts.From), err)
	}
	if !ok {
		return "", &api.Error{Kind: api.ErrBadRef,
			Msg:   fmt.Sprintf("Cannot create sandbox '%s': %s names no commit in this repository. Give a branch, a tag or a commit id (`git log --oneline --all` lists them); nothing was created.", slug, api.Quote(opts.From)),
			Agent: fmt.Sprintf("Cannot create sandbox '%s': base_ref %s names no commit in this repository. Give a branch, a tag or a commit id, or leave base_ref out to start from HEAD; nothing was created.", slug, api.Quote(opts.From))}
	}
	// A fork's starting point is its source's branch tip, which Fork
	// chose; an agent's own base_ref must be one the user lets it use.
	if opts.ByAgent && opts.ForkOf == "" {
		if err := pv.agentMayStartFrom(ctx, r, slug, opts.From, id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// headRead is what a create from HEAD reads of the repository in one git
// call: HEAD, whether the sandbox's branch is there, and the committed
// settings at HEAD (config.Files).
type headRead struct {
	head   string
	branch bool
	files  []git.FileContent
}

// readHead reads HEAD, the branch of slug and the settings files at HEAD
// in one git process where it took three: ten creates at once on a small
// machine queue for the CPU, and each process is a few milliseconds of it.
func readHead(ctx context.Context, r *api.Repo, slug string) (*headRead, error) {
	head, ids, files, err := r.Git.HeadFiles(ctx, []string{api.BranchRef(slug)}, config.Files()...)
	if err != nil {
		return nil, err
	}
	return &headRead{head: head, branch: ids[0] != "", files: files}, nil
}

// settings are the settings files read at HEAD; nil when none were read.
func (h *headRead) settings() []git.FileContent {
	if h == nil {
		return nil
	}
	return h.files
}

// end stops the side work and lets the next create of the name go.
func (c *creation) end() {
	c.cancelArchive()
	c.early.stop()
	if c.renamed != nil {
		<-c.renamed
	}
	_ = c.claimEnded()
	if c.isolation != nil {
		c.isolation.Wait()
	}
	c.dirty.Wait()
	c.unlock()
}

// fail undoes every step made, newest first, and returns err.
func (c *creation) fail(ctx context.Context, err error) error {
	c.cancelArchive()
	if c.gateway != nil {
		<-c.gateway // its undo removes it: once it exists
		c.gateway = nil
	}
	_ = c.branchClaimed(ctx) // its undo removes it: once it exists
	c.dirty.Wait()
	return c.undo.run(ctx, c.pv.Log, err)
}

// checkIsolation refuses a sandbox with a network on an engine whose
// sandboxes reach each other, unless the user allows it (isolation.go).
// Nothing is made before it.
func (c *creation) checkIsolation(context.Context) error {
	if c.isolation == nil {
		return nil
	}
	return c.pv.iso.Refuse(c.isolation, c.cfg)
}

func (c *creation) writeJournal(context.Context) error {
	// Everything made from here on carries the repository's id.
	if err := core.EnsureRepoID(c.r); err != nil {
		return fmt.Errorf("create sandbox %q: %w", c.slug, err)
	}
	if err := state.WriteJournal(c.r, c.slug, state.Journal{Base: c.head, FromBranch: c.opts.FromBranch, Started: time.Now().UTC()}); err != nil {
		return fmt.Errorf("create sandbox %q: record the create in %s: %w", c.slug, c.r.StateDir(c.slug), err)
	}
	// What it is made with, for a fork of it (trust.go).
	if err := state.WriteSettings(c.r, c.slug, c.settings); err != nil {
		return fmt.Errorf("create sandbox %q: record its settings in %s: %w", c.slug, c.r.StateDir(c.slug), err)
	}
	// How long it may be idle before it is paused (pause/idle.go).
	idle := c.cfg.Idle
	if c.opts.Idle != nil {
		idle = *c.opts.Idle
	}
	if err := state.WriteIdle(c.r, c.slug, idle); err != nil {
		return fmt.Errorf("create sandbox %q: record its idle time in %s: %w", c.slug, c.r.StateDir(c.slug), err)
	}
	// What it gets from the working tree, which no snapshot records.
	return c.recordBootstrap()
}

func (c *creation) claimBranch(ctx context.Context) error {
	if c.opts.FromBranch {
		return nil
	}
	c.progress("creating branch " + c.out.Branch)
	// The engine's calls need no branch (the copy is of the commit): it is
	// made beside them, and waited for before the ready mark
	// (branchClaimed), or by a rollback, which then removes it.
	c.branchMade = make(chan error, 1)
	go func() { c.branchMade <- c.createBranch(ctx) }()
	return nil
}

// createBranch makes litterbox/<slug> at the base, refusing a branch that
// exists.
func (c *creation) createBranch(ctx context.Context) error {
	branch := api.BranchPrefix + c.slug
	if err := c.r.Git.CreateRef(core.Made(ctx), api.BranchRef(c.slug), c.head, "litterbox: create sandbox "+c.slug); err != nil {
		if errors.Is(err, git.ErrRefExists) {
			// Made since clearLeftovers looked, by something else than
			// litterbox (creates of a name take turns): not ours.
			return core.ExistsError(c.slug, "its branch "+branch+" exists")
		}
		return fmt.Errorf("create branch %s: %w", branch, err)
	}
	return nil
}

// branchClaimed waits for the branch claimBranch made, and once it is
// made, makes its removal part of the rollback.
func (c *creation) branchClaimed(context.Context) error {
	if c.branchMade == nil {
		return nil
	}
	err := <-c.branchMade
	c.branchMade = nil
	if err == nil {
		c.undoBranch()
	}
	return err
}

// undoBranch makes the branch's removal part of the rollback.
func (c *creation) undoBranch() {
	c.undo.push("branch "+c.out.Branch, func(ctx context.Context) error {
		return c.r.Git.DeleteRef(ctx, api.BranchRef(c.slug), c.head)
	})
}

func (c *creation) startContainer(ctx context.Context) error {
	if len(c.pool) > 0 {
		ok, err := c.claimPooled(ctx)
		if ok || err != nil {
			return err
		}
		// Every member was taken meanwhile: make a container after all.
		if err := c.unpooled(ctx); err != nil {
			return err
		}
	}
	sp := c.sandboxSpec()
	if c.net != nil {
		if err := c.startGateway(ctx); err != nil {
			return err
		}
		sp = *c.confined
		if err := c.volumeReady(); err != nil {
			return err
		}
	}
	c.progress("starting container " + sp.Name)
	cctx := ctx
	if c.link != nil {
		cctx = c.link
		defer c.linkCancel()
	}
	sb, err := c.pv.Provider.Create(cctx, sp)
	if err != nil && c.link != nil && c.link.Err() != nil && ctx.Err() == nil {
		// Its gateway could not be made: that is the error.
		err = c.gatewayStarted()
	}
	if errors.Is(err, provider.ErrConflict) {
		// No sandbox of this name exists (see clearLeftovers), so what holds
		// the name is a network this very sandbox left, or its container
		// from a create killed while the engine was still making it (it
		// appeared after clearLeftovers looked): ours to remove. Or it is
		// something of another repository, such as a sandbox of one whose
		// directory has the same name: never touch that, take the name
		// with this repository's id as a suffix instead.
		var removed bool
		var ours []string // the gateway this create made is no leftover
		if c.net != nil {
			ours = append(ours, c.net.Gateway)
		}
		if removed, err = c.pv.inv.RemoveLeftovers(ctx, c.r, c.slug, ours...); err != nil {
			return err
		}
		if !removed {
			c.pv.Log.Debug("container name taken by another repository's object; adding this repository's id", "name", sp.Name)
			sp.Name = c.r.SuffixedName(c.slug)
		}
		if sb, err = c.pv.Provider.Create(ctx, sp); errors.Is(err, provider.ErrConflict) {
			return c.pv.nameTaken(ctx, c.slug, sp.Name)
		}
	}
	name := sp.Name
	c.out.Container = name
	if errors.Is(err, provider.ErrNoHostPort) && !errors.Is(err, provider.ErrLeftBehind) {
		return c.portRangeError(err)
	}
	if errors.Is(err, provider.ErrUnsupported) && !errors.Is(err, provider.ErrLeftBehind) {
		// The engine refused, making nothing, what the configuration
		// asks of it, which checkSpec did not foresee.
		return unsupported(c.slug, err)
	}
	if errors.Is(err, provider.ErrLeftBehind) {
		// The engine could not clean up after itself: try again, by labels.
		c.undo.push("container "+name, func(ctx context.Context) error {
			_, err := c.pv.inv.RemoveLeftovers(ctx, c.r, c.slug)
			return err
		})
	}
	if err != nil {
		return err
	}
	c.sandbox = sb
	c.undo.push("container "+name, func(ctx context.Context) error { return c.pv.Provider.Remove(ctx, sb.Ref) })
	if err := c.secretsFetched(); err != nil {
		return err
	}
	if c.platform == "" {
		// The engine pulled the image: now its platform can be checked.
		_, err = c.pv.guest.ImagePlatform(ctx, c.cfg.Image)
	}
	return err
}

// checkSpec asks the engine, before anything is made, whether it would
// refuse sp at Create (ports under gVisor on Kubernetes, which it could
// refuse only once the branch and the gateway were made).
func (pv *Provisioner) checkSpec(ctx context.Context, sp provider.Spec, slug string) error {
	sc, ok := pv.Provider.(provider.SpecChecker)
	if !ok {
		return nil
	}
	err := sc.CheckSpec(ctx, sp)
	if errors.Is(err, provider.ErrUnsupported) {
		return unsupported(slug, err)
	}
	return err
}

// unsupported is the engine's refusal of what the configuration asks of
// it: the configuration is to change, and nothing was made.
func unsupported(slug string, err error) error {
	return core.NewError(api.ErrConfig, "Sandbox '%s' was not created: %s. Nothing was made.", slug, strings.TrimSuffix(err.Error(), "."))
}

// sandboxSpec is the spec of the sandbox's container.
func (c *creation) sandboxSpec() provider.Spec {
	sp := spec.For(c.pv.Options, c.r, c.slug, c.head, c.cfg)
	sp.Tmpfs = append(sp.Tmpfs, spec.VolumeMasks(c.volumes)...)
	sp.Binds = slices.Clone(c.opts.Binds)
	if c.platform != "" {
		sp.Labels[api.LabelPlatform] = c.platform
	}
	return sp
}

// portRangeError is a create that found no free host port in the range.
func (c *creation) portRangeError(err error) error {
	r := c.cfg.HostPorts
	return &api.Error{Kind: api.ErrPortRange,
		Msg: fmt.Sprintf("Sandbox '%s' was not created: no host port in %s is free for its %d port(s) (the range in [ports] of the configuration); other sandboxes or programs hold them. Delete sandboxes you no longer need (`litterbox list`), or widen the range. Nothing was made.\nThe engine said: %s",
			c.slug, r, len(c.cfg.Ports), core.CapText(runner.Stderr(err))),
		Agent: fmt.Sprintf("Sandbox '%s' was not created: every host port of the range %s that the user configured is taken by other sandboxes. Tell the user; nothing was made.", c.slug, r)}
}

// fill copies the commit into /src and runs the setup command in one exec,
// while the services are installed and the ports read. A failed copy, or a
// setup the engine stopped (the container paused, stopped or removed
// meanwhile), fails the create; a setup that exits non-zero does not: the
// sandbox is kept, marked failed-setup (see finish).
func (c *creation) fill(ctx context.Context) error {
	// The gateway publishes the named ports, which the extras read once
	// it runs; the copy need not wait for it.
	extras := c.pv.prepareExtras(ctx, c.r, c.sandbox.Ref, c.cfg, c.out, c.gatewayStarted)
	var so, se bytes.Buffer
	var claimErr error // the engine's claim of a pooled member
	// The shared caches are the sandbox user's to write before the setup
	// runs (package cache).
	err := cache.Open(ctx, c.pv.Provider, c.sandbox.Ref, c.cfg.Cache)
	if err != nil {
		return errors.Join(err, extras())
	}
	if c.pooled != nil && c.pooled.Commit != c.start {
		c.progress("copying " + core.Short(c.start) + " into " + api.Workdir + " of the pooled sandbox in place of " + core.Short(c.pooled.Commit) + ", then running setup: " + runner.Quote(c.setup...))
		err = c.pv.guest.ReplaceAndSetup(ctx, c.archive, c.sandbox.Ref, c.cfg.Image, c.slug, c.setupArgv(), &so, &se)
		c.stamp = guest.TakeStamp(&so)
		claimErr = c.claimEnded()
	} else if c.pooled != nil {
		setup := c.setupArgv()
		if c.pooled.Setup != nil && slices.Equal(c.setup, c.pooled.Setup) {
			// It ran when the member was filled (pool.fillSetup), after
			// its relay and gateway listened: the claim runs no exec
			// (unless ignored files are to be copied in), and the
			// rename says whether the member is still there.
			setup = nil
			so.WriteString(c.pooled.SetupOutput)
			c.progress("taking the pooled sandbox (" + core.Short(c.start) + " is copied in, its setup ran): " + runner.Quote(c.setup...))
		} else {
			c.progress("running setup in the pooled sandbox (" + core.Short(c.start) + " is copied in): " + runner.Quote(c.setup...))
		}
		var gerr error
		if c.net != nil && !slices.Equal(c.setup, config.DefaultSetup) {
			// A setup that may use the network sees the gateway with
			// its policy set, when the claim sets it (claimGateway).
			gerr = c.gatewayReady()
		}
		if gerr == nil {
			// Its relay was up when the pool filled; the setup checks
			// again (setupArgv). With nothing to run, no exec: the
			// engine's claim, if any, says the member runs.
			err = c.pv.guest.SetupOnly(ctx, c.sandbox.Ref, c.slug, c.bootstrap, setup, &so, &se)
			claimErr = errors.Join(c.claimEnded(), c.renameEnded())
		} else {
			err = gerr
		}
		c.stamp = c.pooled.Stamp
	} else {
		if c.linked() {
			// The setup may use the network: a gateway linked by
			// network has no relay for it to wait for, so the gateway
			// is waited for here (it came up beside the sandbox's pod).
			if gerr := c.gatewayReady(); gerr != nil {
				return errors.Join(gerr, extras())
			}
		}
		c.progress("copying " + core.Short(c.start) + " into " + api.Workdir + ", then running setup: " + runner.Quote(c.setup...))
		c.startTrust(ctx)
		var hand guest.Handoff
		if c.openToken != "" {
			hand = guest.Handoff{Line: c.openToken, Script: egress.HandOpenToken}
		}
		err = c.pv.guest.CopyHandingAndSetup(ctx, c.archive, c.sandbox.Ref, c.cfg.Image, hand, c.setupArgv(), &so, &se)
		c.stamp = guest.TakeStamp(&so)
	}
	c.out.SetupOutput = so.String() + se.String()
	if c.pooled != nil {
		c.phases.Done("setup and the engine's claim of the pooled sandbox")
	} else {
		c.phases.Done("copy and setup")
	}
	xerr := extras()
	gerr := c.gatewayReady()
	c.phases.Done("gateway ready, ports and services")
	dead := func(err error) bool {
		return errors.Is(err, provider.ErrNotFound) || errors.Is(err, provider.ErrStopped) || errors.Is(err, provider.ErrPaused)
	}
	if c.pooled != nil && (dead(err) || dead(gerr) || dead(claimErr)) {
		// The member, or its gateway, died after it was filled.
		return c.replacePooled(ctx, errors.Join(err, gerr, claimErr))
	}
	if claimErr != nil {
		return fmt.Errorf("claim the pooled sandbox %s: %w", c.sandbox.Name, claimErr)
	}
	if gerr != nil {
		return gerr
	}
	if terr := c.trusted(); terr != nil {
		return terr
	}
	if nerr := c.notReady(se.String()); nerr != nil {
		return nerr
	}
	if xerr != nil {
		return xerr
	}
	var ce *guest.CopyError
	switch {
	case errors.Is(err, api.ErrImage):
		return err
	case errors.As(err, &ce):
		return fmt.Errorf("copy %s into %s: %w", core.Short(c.start), api.Workdir, err)
	case errors.Is(err, provider.ErrPaused), errors.Is(err, provider.ErrStopped), errors.Is(err, provider.ErrNotFound):
		// The engine itself failed the exec (the container was paused,
		// stopped or removed meanwhile): that is no verdict on the setup
		// command, and the engine's own words say what happened.
		return fmt.Errorf("run setup in %s: the engine refused: %v", c.out.Container, err)
	case err != nil && (ctx.Err() != nil || errors.Is(err, provider.ErrUnreachable) || runner.ExitCode(err) < 0):
		return fmt.Errorf("run setup: %w", err)
	case c.stamp == 0:
		// The copy step always prints the stamp once tar has succeeded;
		// without it nothing says the copy is complete.
		return fmt.Errorf("copy %s into %s: the copy did not report completion (%v)", core.Short(c.start), api.Workdir, err)
	}
	if err != nil {
		c.setupErr = &api.SetupError{Slug: c.slug, Command: c.setup, ExitCode: runner.ExitCode(err), Output: c.out.SetupOutput}
	}
	return nil
}

// finish records the stamp and the setup's outcome and then, last, the ready
// mark that makes the sandbox usable; then it starts the services that start
// by themselves.
func (c *creation) finish(ctx context.Context) (*api.Created, error) {
	if c.renamed != nil {
		<-c.renamed
		if c.renamedTo != "" {
			c.out.Container = c.renamedTo
		}
	}
	// The copy is complete (tar read the whole archive, which git wrote
	// whole).
	if err := state.WriteSince(c.r, c.slug, c.stamp); err != nil {
		c.pv.Log.Warn("could not record the scan stamp; the first snapshot will scan all of /src", "err", err)
	}
	if c.setupErr != nil {
		c.out.Status = api.StatusFailedSetup
		if err := state.MarkSetupFailed(c.r, c.slug, c.out.SetupOutput); err != nil {
			c.pv.Log.Warn("could not record failed setup", "sandbox", c.slug, "err", err)
		}
	}
	if err := state.MarkReady(c.r, c.slug, c.sandbox.Ref.ID, c.out.Container); err != nil {
		return nil, c.fail(ctx, fmt.Errorf("create sandbox %q: mark it ready: %w", c.slug, err))
	}
	if err := state.RemoveJournal(c.r, c.slug); err != nil {
		c.pv.Log.Warn("could not remove the create journal", "sandbox", c.slug, "err", err)
	}
	if c.setupErr != nil {
		return c.out, c.setupErr
	}
	// A service that cannot be started leaves a usable sandbox: say so and
	// let the caller start it by hand.
	var err error
	if c.out.Services, err = c.pv.services.Autostart(ctx, c.r, c.sandbox.Ref, c.slug, c.cfg); err != nil {
		c.pv.Log.Warn("could not start services", "sandbox", c.slug, "err", err)
	}
	c.dirty.Wait()
	return c.out, nil
}

// clearLeftovers prepares a new create of slug. No sandbox of that name may
// exist: a usable one, a failed-setup one and one whose container is gone
// (its branch may hold work) are refused with ErrExists. What an interrupted
// create left (its journal says so, and it never became ready) is removed
// first, provided its branch holds no commit beyond the base it was made at:
// it never held work. State files of an earlier sandbox of the name whose
// container and branch are gone (a delete cut short, a removal by hand)
// describe nothing any more and are cleared, so they cannot trip the new
// sandbox up. removed reports an incomplete sandbox that was removed.
//
// fresh says the sandbox had no state directory: then only a branch can be
// in the way (a container or network of the name is refused or reused by
// the create itself), and a rev-parse instead of an engine list tells.
func (pv *Provisioner) clearLeftovers(ctx context.Context, r *api.Repo, slug string, fresh bool) (removed bool, err error) {
	if fresh {
		_, ok, err := r.Git.ResolveRef(ctx, api.BranchRef(slug))
		if err != nil || !ok {
			return false, err
		}
	}
	f, err := pv.inv.Lookup(ctx, r, slug)
	if errors.Is(err, api.ErrNotFound) {
		return false, state.Clear(r, slug)
	}
	if err != nil {
		return false, err
	}
	j := f.Journal
	if f.Ready || j == nil || j.FromBranch {
		switch {
		case f.Container != nil && !f.Ready:
			return false, core.ExistsError(slug, "it is incomplete: its container "+f.Container.Name+" never got a complete copy")
		case f.BranchID != "":
			return false, core.ExistsError(slug, "its branch "+api.BranchPrefix+slug+" exists")
		}
		return false, core.ExistsError(slug, "its container "+f.Container.Name+" exists")
	}
	if f.BranchID != "" {
		n, err := r.Git.CountCommits(ctx, j.Base, f.BranchID)
		if err != nil {
			return false, fmt.Errorf("count the commits of %s%s: %w", api.BranchPrefix, slug, err)
		}
		if n > 0 {
			return false, core.NewError(api.ErrExists, "Sandbox '%s' is incomplete (its create was interrupted), but its branch %s%s holds %d commit(s) beyond the commit it was made at, so it is not removed for you. Review them with `litterbox log %s`, then remove it with `litterbox delete --force %s` and create it again.", slug, api.BranchPrefix, slug, n, slug, slug)
		}
	}
	if _, err := pv.inv.RemoveSandbox(ctx, r, f, func() error { return state.Clear(r, slug) }); err != nil {
		return false, fmt.Errorf("remove the incomplete sandbox '%s' left by an interrupted create: %w", slug, err)
	}
	return true, nil
}

// nameTaken explains a container or network name that is already used: by a
// container of this repository left without its branch, or by a sandbox of
// another repository whose directory has the same name (containers are named
// after the directory, not its path). It looks past the extra
// labels: the other sandbox need not carry them.
func (pv *Provisioner) nameTaken(ctx context.Context, slug, container string) error {
	sbs, _ := pv.Provider.List(ctx, provider.Selector{Labels: map[string]string{api.LabelSlug: slug}, Report: core.LabelKeys})
	for _, sb := range sbs {
		if sb.Name == container && sb.Labels[api.LabelRepo] != "" {
			return core.NewError(api.ErrExists, "Sandbox '%s' cannot be created: the container name %s is taken by the sandbox '%s' of %s. Please choose a different name.", slug, container, slug, sb.Labels[api.LabelRepo])
		}
	}
	return core.ExistsError(slug, "container or network "+container+" exists")
}

// undoStack records how to remove what a create made, so a failure leaves
// nothing behind.
type undoStack struct {
	// hint says how to remove what a failed rollback left.
	hint  string
	steps []undoStep
	// final runs after every step succeeded: it removes the create's
	// journal (and state), which must outlive anything left behind so that
	// list shows it as incomplete and the next create or delete removes it.
	final func() error
}

type undoStep struct {
	what string
	fn   func(context.Context) error
}

func (u *undoStack) push(what string, fn func(context.Context) error) {
	u.steps = append(u.steps, undoStep{what, fn})
}

// run undoes every step, newest first, and returns cause. Undo runs even when
// ctx was cancelled (an interrupted create must still clean up), with its own
// deadline. Whatever could not be removed is named in the error, with the
// command that removes it.
func (u *undoStack) run(ctx context.Context, logger *log.Logger, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	var left []string
	for i := len(u.steps) - 1; i >= 0; i-- {
		st := u.steps[i]
		if err := st.fn(ctx); err != nil {
			logger.Warn("rollback failed", "what", st.what, "err", err)
			left = append(left, st.what)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w\nrollback could not remove: %s. `litterbox list` shows what is left as incomplete; %s", cause, strings.Join(left, ", "), u.hint)
	}
	if u.final != nil {
		if err := u.final(); err != nil {
			logger.Warn("rollback could not remove the sandbox's state", "err", err)
		}
	}
	return cause
}

// recoverStart is where create --from-branch starts: the branch tip to copy,
// and the merge base of HEAD and the branch as the base label (the commit
// diff, apply and merge measure the work from). It refuses while the
// sandbox's container runs or is paused; a stopped one is removed first. It
// clears a failed-setup mark left by the old container.
func (pv *Provisioner) recoverStart(ctx context.Context, r *api.Repo, slug string) (tip, base string, err error) {
	f, err := pv.inv.Lookup(ctx, r, slug)
	if errors.Is(err, api.ErrNotFound) {
		return "", "", core.NewError(api.ErrNotFound, "Sandbox '%s' has no branch %s%s to recreate it from. Create a new sandbox with `litterbox create %s`.", slug, api.BranchPrefix, slug, slug)
	}
	if err != nil {
		return "", "", err
	}
	if f.BranchID == "" {
		return "", "", core.NewError(api.ErrNotFound, "Sandbox '%s' has no branch %s%s to recreate it from.", slug, api.BranchPrefix, slug)
	}
	base, ok, err := r.Git.CommonAncestor(ctx, "HEAD", f.BranchID)
	if err != nil {
		return "", "", err
	}
	if !ok {
		base = f.BranchID
	}
	if c := f.Container; c != nil {
		if f.Ready && (c.State == provider.StateRunning || c.State == provider.StatePaused) {
			return "", "", core.ExistsError(slug, "its container "+c.Name+" is "+string(c.State)+"; only a sandbox whose container is gone or stopped is recreated from its branch")
		}
		// A stopped container holds nothing: /src was in memory, and the
		// rest of its filesystem is read-only. An incomplete one (a create
		// or recreate cut short) never held a whole copy, and no snapshot
		// ran in it. Its network goes with it: the new container gets a
		// new one.
		if err := pv.Provider.Remove(ctx, c.Ref); err != nil {
			return "", "", fmt.Errorf("remove the old container %s: %w", c.Name, err)
		}
	}
	// The old container's marks and snapshot watermark do not describe the
	// new one.
	if err := state.ForgetContainer(r, slug); err != nil {
		return "", "", fmt.Errorf("recreate sandbox %q: %w", slug, err)
	}
	return f.BranchID, base, nil
}
