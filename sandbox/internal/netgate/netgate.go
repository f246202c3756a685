// Package netgate wires a sandbox's egress gateway (package egress,
// docs/egress.md) into the service: the record of a sandbox's policy and
// gateway in its state directory (net.json, on the host, out of the
// agent's reach), the engines that can run a gateway, the probe of the
// engine host's addresses, the policy's changes, the collection of the
// record of connections, and the removal of the gateway and its volume.
package netgate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/internal/gatewaybin"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// File is the state directory's record of a confined sandbox's gateway.
const File = "net.json"

// NetFile is net.json, what the host keeps of a confined sandbox's way out: its
// policy (as the user set it: the configuration at create, then each
// `litterbox net allow/deny`), and its gateway's container and volume.
type NetFile struct {
	Mode       string   `json:"mode"`
	Allow      []string `json:"allow,omitempty"`
	Deny       []string `json:"deny,omitempty"`
	Registries bool     `json:"registries"`
	// Gateway is the gateway container's name, Volume the shared
	// volume's.
	Gateway string `json:"gateway"`
	Volume  string `json:"volume"`
	// Ports are the named ports the gateway publishes.
	Ports []int `json:"ports,omitempty"`
	// Unnamed says the gateway's policy names no sandbox (a warm pool
	// member's, made before the name was known) and its claim told it
	// none: the sandbox's commands write the name first (NameFirst),
	// until one has run (markNamed).
	Unnamed bool `json:"unnamed,omitempty"`
}

// NameFirst is cmd, a command of sandbox slug's own (its user's, an
// agent's, a service's), made to write the sandbox's name where its
// gateway reads it (egress.WriteName) before it runs, when the record says
// the gateway was not told the name (Unnamed): a claim from the warm pool
// with nothing to run in the member is the engine's rename alone, and
// only a command run after it can meet a refusal, whose text the name is
// for. It costs that command a shell's start in the sandbox, no engine
// call. Any other cmd is returned as it is.
//
// The caller calls named once the engine ran cmd (whatever its exit
// code): the name is then in the gateway's volume, which keeps it, and
// the record says so (markNamed), so that the sandbox's later commands
// run as they are. named does nothing for a cmd returned as it is.
func NameFirst(r *api.Repo, slug string, cmd []string) (_ []string, named func()) {
	if r == nil || len(cmd) == 0 {
		return cmd, func() {}
	}
	if rec, ok, _ := Read(r.Git.CommonDir, slug); !ok || !rec.Unnamed {
		return cmd, func() {}
	}
	return append([]string{"sh", "-c", egress.WriteName + `; exec "$@"`, "sh"}, cmd...), func() { markNamed(r, slug) }
}

// markNamed clears the Unnamed mark of slug's record, under the record's
// lock; when a change holds it, the mark stays, for a later command to
// clear.
func markNamed(r *api.Repo, slug string) {
	unlock, ok, err := flock.TryLock(lockFile(r.Git.CommonDir, slug))
	if err != nil || !ok {
		return
	}
	defer unlock()
	if rec, ok, err := Read(r.Git.CommonDir, slug); err == nil && ok && rec.Unnamed {
		rec.Unnamed = false
		_ = Write(r, slug, rec)
	}
}

// FromConfig is the policy of cfg's [network] table.
func FromConfig(cfg *config.Config) NetFile {
	return NetFile{Mode: cfg.EgressMode(), Allow: slices.Clone(cfg.Egress.Allow), Deny: slices.Clone(cfg.Egress.Deny), Registries: cfg.Egress.Registries}
}

// Policy is the gateway's policy for sandbox slug, with what the engine
// says no sandbox may reach.
func (rec NetFile) Policy(slug string, r Reach) policy.Policy {
	return policy.Policy{Sandbox: slug, Mode: policy.Mode(rec.Mode), Registries: rec.Registries, Allow: rec.Allow, Deny: rec.Deny, Host: r.Host, Engine: r.Engine}
}

// Read reads sandbox slug's record; ok is false when it has none (no
// gateway: network none, egress open, or made before egress).
func Read(gitDir, slug string) (rec *NetFile, ok bool, err error) {
	data, err := os.ReadFile(state.File(gitDir, slug, File))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	rec = &NetFile{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, false, fmt.Errorf("read the egress record of sandbox '%s', %s: %w", slug, state.File(gitDir, slug, File), err)
	}
	return rec, true, nil
}

// Write records rec as sandbox slug's.
func Write(r *api.Repo, slug string, rec *NetFile) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteAtomic(state.File(r.Git.CommonDir, slug, File), append(data, '\n'))
}

// Store is where sandbox slug's record of connections is kept.
func Store(gitDir, slug string) egress.Store {
	return egress.Store{File: state.File(gitDir, slug, "net.jsonl")}
}

// Engine is p as an engine that runs gateways beside its sandboxes,
// sharing a volume (Docker, Podman, an ssh engine, the VM engine's
// Docker); false for one that cannot (Kubernetes, which links them by
// network: Linked; the fake).
func Engine(p provider.Provider) (provider.Gateways, bool) {
	g, ok := p.(provider.Gateways)
	return g, ok
}

// Linked is p as an engine that links a sandbox to its gateway by network
// (Kubernetes: egress.ConfineLinked); false for any other.
func Linked(p provider.Provider) (provider.GatewayLinks, bool) {
	g, ok := p.(provider.GatewayLinks)
	return g, ok
}

// reacher is p's Reach: both kinds of engines that run gateways say what
// their sandboxes may not reach.
func reacher(p provider.Provider) (provider.Reach, bool) {
	if e, ok := Engine(p); ok {
		return e, true
	}
	return Linked(p)
}

// Gate is what the service does with gateways on c's engine.
type Gate struct {
	*core.Common
	hostMu sync.Mutex
	reach  Reach
	hostOK bool
	// imageMu guards image, the gateway image once the engine holds it.
	imageMu sync.Mutex
	image   string
}

// imageTag names the gateway image of this litterbox's programs: a new
// program is a new image, never one an older litterbox made. The programs'
// SHA-256, which the generator recorded (bin/SUMS), names them without
// reading them: hashing the 15 MB of both at create kept them resident in
// every litterbox process (the MCP server's idle RSS went from under 30 to
// about 40 MiB).
var imageTag = sync.OnceValue(func() string {
	tag := "litterbox-gateway:"
	for _, pl := range gatewaybin.Set.Platforms {
		os, arch, _ := strings.Cut(pl, "/")
		sum, _ := gatewaybin.Set.Sum(os, arch)
		tag += sum[:min(len(sum), 12)]
	}
	return tag
})

// Image is the gateway image on the engine (egress.BuildImage): asked for
// once per process, and made from DefaultImage when the engine lacks it (once
// per engine and litterbox version: a second or so).
func (g *Gate) Image(ctx context.Context) (string, error) {
	g.imageMu.Lock()
	defer g.imageMu.Unlock()
	if g.image != "" {
		return g.image, nil
	}
	e, ok := Engine(g.Provider)
	if !ok {
		return "", fmt.Errorf("this engine runs no egress gateway")
	}
	tag := imageTag()
	_, err := g.Provider.Image(ctx, tag)
	if errors.Is(err, provider.ErrNoImage) {
		err = g.buildImage(ctx, e, tag)
	}
	if err != nil {
		return "", err
	}
	g.image = tag
	return tag, nil
}

// Tag is the gateway image's name, without asking the engine whether it
// holds it: Create makes it when the engine does not, so a create's
// gateway costs no image inspect.
func (g *Gate) Tag() string { return imageTag() }

// buildImage makes the gateway image tag from DefaultImage, with the
// program of the engine's platform.
func (g *Gate) buildImage(ctx context.Context, e provider.Gateways, tag string) error {
	img, err := g.Provider.Image(ctx, api.DefaultImage)
	if errors.Is(err, provider.ErrNoImage) {
		return fmt.Errorf("%w: the egress gateway runs from %s, which the engine must hold (`docker pull %s`)", err, api.DefaultImage, api.DefaultImage)
	}
	if err != nil {
		return err
	}
	bin, err := gatewaybin.For(img.OS, img.Arch)
	if err != nil {
		return err
	}
	g.Log.Debug("making the egress gateway's image", "image", tag, "from", api.DefaultImage)
	return egress.BuildImage(ctx, e, api.DefaultImage, tag, bin)
}

// Program is the gateway's program for the platform of the image a
// linked gateway runs from (DefaultImage, which its nodes must hold or
// pull), which egress.InstallLinked puts in it: an engine that links
// builds no image.
func (g *Gate) Program(ctx context.Context) ([]byte, error) {
	img, err := g.Provider.Image(ctx, api.DefaultImage)
	if errors.Is(err, provider.ErrNoImage) {
		return nil, fmt.Errorf("%w: the egress gateway runs from %s, which the engine must hold or pull", err, api.DefaultImage)
	}
	if err != nil {
		return nil, err
	}
	return gatewaybin.For(img.OS, img.Arch)
}

// New is the gate of c's engine.
func New(c *core.Common) *Gate { return &Gate{Common: c} }

// Supported says c's engine can run gateways.
func (g *Gate) Supported() bool {
	_, ok := reacher(g.Provider)
	return ok
}

// Linked says c's engine links a sandbox to its gateway by network: the
// sandbox keeps a network of its own, which the engine narrows to the
// gateway, so it holds only where the engine enforces that (an isolation
// check), and there is no relay to wait for.
func (g *Gate) Linked() bool {
	_, ok := Linked(g.Provider)
	return ok
}

// hostTTL is how long a probe of the engine host's addresses is kept.
const hostTTL = 10 * time.Minute

// Reach is what the engine says no sandbox may reach without the user:
// its host's addresses (refused unless an allow entry names one itself)
// and its networks' subnets, where other containers are (refused always).
type Reach struct {
	Host   []string `json:"host"`
	Engine []string `json:"engine"`
}

// Equal says r and o hold the same addresses, in whatever order (a probe
// may list them in another).
func (r Reach) Equal(o Reach) bool {
	same := func(a, b []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
	}
	return same(r.Host, o.Host) && same(r.Engine, o.Engine)
}

// Reach is the engine's Reach: probed once (a one-shot container on the
// host's network for its addresses, the engine's networks for theirs),
// then kept for hostTTL in this process and in the cache directory.
func (g *Gate) Reach(ctx context.Context) (Reach, error) {
	g.hostMu.Lock()
	defer g.hostMu.Unlock()
	if g.hostOK {
		return g.reach, nil
	}
	e, ok := reacher(g.Provider)
	if !ok {
		return Reach{}, nil
	}
	cache := g.hostCache(e)
	if cache != "" {
		if fi, err := os.Stat(cache); err == nil && time.Since(fi.ModTime()) < hostTTL {
			if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &g.reach) == nil {
				g.hostOK = true
				return g.reach, nil
			}
		}
	}
	var nets []string
	var netErr error
	done := make(chan struct{})
	go func() { defer close(done); nets, netErr = e.Subnets(ctx) }()
	host, err := e.HostAddrs(ctx, api.DefaultImage)
	<-done
	if err != nil {
		return Reach{}, fmt.Errorf("find the engine host's addresses (which sandboxes may not reach): %w", err)
	}
	if netErr != nil {
		return Reach{}, fmt.Errorf("find the engine's networks (which sandboxes may not reach): %w", netErr)
	}
	g.reach, g.hostOK = Reach{Host: host, Engine: nets}, true
	if cache != "" {
		if b, err := json.Marshal(g.reach); err == nil && os.MkdirAll(filepath.Dir(cache), 0o755) == nil {
			_ = state.WriteAtomic(cache, b)
		}
	}
	return g.reach, nil
}

// hostCache is the file the host's addresses are kept in, per endpoint.
func (g *Gate) hostCache(e provider.Reach) string {
	base := g.CacheDir
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(d, "litterbox")
	}
	sum := sha256.Sum256([]byte(e.Endpoint()))
	return filepath.Join(base, "egress-reach-"+hex.EncodeToString(sum[:8])+".json")
}

// Ref is the gateway's ref: its container's name, which the engine takes
// as an id.
func (rec NetFile) Ref() provider.Ref { return provider.Ref{ID: rec.Gateway} }

// SetPolicy makes rec's policy the running gateway's.
func (g *Gate) SetPolicy(ctx context.Context, slug string, rec *NetFile) error {
	reach, err := g.Reach(ctx)
	if err != nil {
		return err
	}
	return egress.SetPolicy(ctx, g.Provider, rec.Ref(), rec.Policy(slug, reach))
}

// Collect takes the records the gateway holds that the host's store does
// not, into the store, and its refusals table into the store's book (see
// egress.Book); it returns how many refusals the gateway made since the
// last collection.
func (g *Gate) Collect(ctx context.Context, gitDir, slug string, rec *NetFile) (refused int, err error) {
	st := Store(gitDir, slug)
	cur, err := st.Cursor()
	if err != nil {
		return 0, err
	}
	for range 64 {
		b, err := egress.Collect(ctx, g.Provider, rec.Ref(), cur)
		if err != nil {
			return refused, err
		}
		if err := st.Append(b); err != nil {
			return refused, err
		}
		if b.Refusals != nil {
			n, err := st.MergeRefusals(*b.Refusals)
			if err != nil {
				return refused, err
			}
			refused += int(n)
		} else {
			// A gateway of an older litterbox, which keeps no table.
			for _, r := range b.Records {
				if !r.Allowed {
					refused++
				}
			}
		}
		if cur, err = st.Cursor(); err != nil {
			return refused, err
		}
		if len(b.Records) == 0 || cur.Seq >= b.Last {
			break
		}
	}
	return refused, nil
}

// Refusals is where a run reads what the sandbox's gateway refused during
// its command (scanner's RunSpec.Refusals, RefusalsUID, RefusalsVia): the
// gateway's file on the volume the two share, owned by the gateway's user;
// or, on an engine that links them by network (no volume), the URL the
// gateway's proxy answers itself (control.RefusedHost), asked of the proxy
// at the name the sandbox finds it by.
func (g *Gate) Refusals() (where string, uid int, via string) {
	if l, ok := Linked(g.Provider); ok {
		return "http://" + control.RefusedHost + "/", 0, net.JoinHostPort(l.GatewayHost(), strconv.Itoa(egress.LinkedProxyPort))
	}
	return egress.Dir + "/" + control.RefusalsFile, egress.UID, ""
}

// RefusedIn are the refusals a run read from its gateway's file, as an
// agent reads them (egress.RefusedHosts); ok is false when the gateway
// emptied the file meanwhile (a control.KindCut line): lines the run did
// not read may be gone, and the gateway's refusals table is to be asked.
func RefusedIn(lines string) (hosts []string, ok bool) {
	rs := egress.ParseRecords(lines)
	if slices.ContainsFunc(rs, func(r control.Record) bool { return r.Kind == control.KindCut }) {
		return nil, false
	}
	return egress.RefusedHosts(rs), true
}

// Refused are the refusals since start (a time of the host's), as an
// agent reads them (egress.RefusedHosts). The gateway is asked for those
// of the time since start and a second more, measured on its own clock;
// of those, the ones it timed before start (less skew, 50 ms: a local
// engine shares the host's clock) are another call's.
func (g *Gate) Refused(ctx context.Context, rec *NetFile, start time.Time) ([]string, error) {
	rs, err := egress.Refused(ctx, g.Provider, rec.Ref(), (time.Since(start) + time.Second).Round(time.Millisecond).String())
	if err != nil {
		return nil, err
	}
	rs = slices.DeleteFunc(rs, func(r control.Record) bool { return r.Time.Before(start.Add(-refusedSkew)) })
	return egress.RefusedHosts(rs), nil
}

// RefusedAfter are the refusals after mark (boot, after), where a run
// found the gateway's refusals before its command, as an agent reads them;
// ok is false for a mark that is not a gateway's (its run is hex), which
// tells nothing.
func (g *Gate) RefusedAfter(ctx context.Context, rec *NetFile, boot string, after uint64) (hosts []string, ok bool, err error) {
	if _, err := hex.DecodeString(boot); err != nil || boot == "" || len(boot) > 64 {
		return nil, false, nil
	}
	rs, err := egress.RefusedAfter(ctx, g.Provider, rec.Ref(), control.RefusalMark{Boot: boot, After: after})
	if err != nil {
		return nil, true, err
	}
	return egress.RefusedHosts(rs), true, nil
}

// refusedSkew is how far the gateway's clock may be behind the host's for
// Refused to tell one call's refusals from the last one's.
const refusedSkew = 50 * time.Millisecond

// Volumes says c's engine gives gateways volumes (Engine): a gateway
// linked by network has none.
func (g *Gate) Volumes() bool {
	_, ok := Engine(g.Provider)
	return ok
}

// RemoveVolume removes a gateway's volume, once no container mounts it;
// gone already is done.
func (g *Gate) RemoveVolume(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	e, ok := Engine(g.Provider)
	if !ok {
		return nil
	}
	return e.RemoveVolume(ctx, name)
}

// RefOf is the Ref that removes object name (a gateway, or a sandbox's
// container) whole: on an engine that links them by network, its network
// (a policy) is named as it is (provider.GatewayLinks) and goes with it.
func (g *Gate) RefOf(name string) provider.Ref {
	if _, linked := Linked(g.Provider); linked {
		return provider.Ref{ID: name, NetworkID: name}
	}
	return provider.Ref{ID: name}
}

// RemoveContainer removes a sandbox's container (by id or name); netless
// says it has no network (a confined sandbox's: Gateways.RemoveNetless).
// removed is false when it was gone already.
func (g *Gate) RemoveContainer(ctx context.Context, container string, netless bool) (removed bool, err error) {
	e, ok := Engine(g.Provider)
	if !ok {
		err := g.Provider.Remove(ctx, g.RefOf(container))
		if errors.Is(err, provider.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	remove := e.RemoveAll
	if netless {
		remove = e.RemoveNetless
	}
	missing, err := remove(ctx, container)
	return err == nil && len(missing) == 0, err
}

// IsGateway says an engine object is a gateway (its container, or its
// volume), not a sandbox.
func IsGateway(sb provider.Sandbox) bool { return sb.Labels[egress.LabelGatewayOf] != "" }

// Summary is the policy in one line, for messages.
func (rec NetFile) Summary() string {
	s := rec.Mode
	if rec.Mode == config.EgressAllowlist {
		var parts []string
		if len(rec.Allow) > 0 {
			parts = append(parts, "allow "+strings.Join(rec.Allow, ", "))
		}
		if rec.Registries {
			parts = append(parts, "the package registries")
		}
		s += ": " + cmp.Or(strings.Join(parts, "; "), "nothing")
	}
	if len(rec.Deny) > 0 {
		s += "; deny " + strings.Join(rec.Deny, ", ")
	}
	return s
}
