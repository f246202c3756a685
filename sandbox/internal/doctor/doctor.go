// Package doctor checks what litterbox needs, one check after another: the
// engine, the image, git, the repository and disk space (litterbox doctor).
package doctor

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/kvm"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/isolation"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
)

// Doctor runs the checks on c's engine, with the guest's image checks and
// the isolation check.
type Doctor struct {
	*core.Common
	guest *guest.Guest
	iso   *isolation.Checker
}

// New is the doctor of c's engine.
func New(c *core.Common, g *guest.Guest, iso *isolation.Checker) *Doctor {
	return &Doctor{Common: c, guest: g, iso: iso}
}

// MinGit is the oldest git litterbox works with: review merges in memory
// with `git merge-tree --write-tree` (git 2.38).
var MinGit = [2]int{2, 38}

// Disk space below which doctor warns, and below which it fails: snapshots
// and merges write objects into the repository.
const (
	diskWarn = 1 << 30
	diskFail = 100 << 20
)

// Run checks what litterbox needs, one check after another: the engine
// (reachable, version, pause, isolation), the image (held, its platform, the
// guest contract), git (version, and in a repository its signing and hooks)
// and disk space. dir is where the command runs; outside a repository the
// repository's checks are skipped. It never fails itself: every problem is a
// check.
func (d *Doctor) Run(ctx context.Context, dir string) []api.Check {
	var checks []api.Check
	add := func(c api.Check) { checks = append(checks, c) }
	image, cfg := d.doctorImage(ctx, dir)

	info, err := d.Provider.Info(ctx)
	engineOK := err == nil
	if err != nil {
		c := api.Check{Name: "engine", Status: api.CheckFail, Detail: err.Error(),
			Fix: "start the engine, or point litterbox at one that runs (--engine, DOCKER_HOST, DOCKER_CONTEXT)"}
		if errors.Is(err, provider.ErrUnreachable) {
			c.Fix = "" // its message says what to do
		}
		add(c)
	} else {
		add(engineStatus(info))
	}
	skip := func(name string) {
		add(api.Check{Name: name, Status: api.CheckSkip, Detail: "needs a reachable engine"})
	}

	if !engineOK {
		skip("pause")
		skip("runtime")
		skip("isolation")
		skip("image")
		skip("guest")
	} else {
		add(pauseCheck(info))
		add(d.runtimeCheck(ctx, info, image, cfg))
		add(d.isolationCheck(ctx, image, cfg))
		img, c := d.imageCheck(ctx, image)
		add(c)
		if img == nil {
			add(api.Check{Name: "guest", Status: api.CheckSkip, Detail: "needs the image"})
		} else {
			add(d.guestCheck(ctx, image))
		}
	}

	add(kvmCheck(info))
	add(d.gitCheck(ctx))
	return append(checks, d.repoChecks(ctx, dir)...)
}

// engineStatus describes a reachable engine, warning of a Docker with the
// network flaws docs/security.md describes.
func engineStatus(info provider.Info) api.Check {
	c := api.Check{Name: "engine", Status: api.CheckOK, Detail: fmt.Sprintf("%s %s at %s (%s/%s)", info.Engine, info.Version, info.Endpoint, info.OS, info.Arch)}
	if info.Engine == "docker" && oldDocker(info.Version) {
		c.Status = api.CheckWarn
		c.Detail += ": before 20.10.27 Docker can deadlock in its network code when containers leave a network at once (moby/moby#46661; litterbox's removals take turns to avoid it), " +
			"and 20.10 opens its isolation between bridges for a moment on every network change (the default shared bridge is not affected); see docs/security.md"
		c.Fix = "upgrade Docker to 23.0 or later (or 20.10.27 or later) when you can"
	}
	return c
}

// oldDocker reports whether a Docker version ("20.10.24+dfsg1") is older
// than 20.10.27, which has the fix of moby/moby#46661. A version that does
// not parse is taken for a new one.
func oldDocker(v string) bool {
	var n [3]int
	for i, part := range strings.SplitN(v, ".", 3) {
		digits := part
		if j := strings.IndexFunc(part, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = part[:j]
		}
		x, err := strconv.Atoi(digits)
		if err != nil {
			return false
		}
		n[i] = x
	}
	return n[0] < 20 || (n[0] == 20 && (n[1] < 10 || (n[1] == 10 && n[2] < 27)))
}

func pauseCheck(info provider.Info) api.Check {
	if info.Pause {
		return api.Check{Name: "pause", Status: api.CheckOK, Detail: "the engine can pause sandboxes"}
	}
	return api.Check{Name: "pause", Status: api.CheckWarn, Detail: "the engine cannot pause sandboxes: pause and resume will fail",
		Fix: "run the engine with cgroup v2 (or as root), where it can freeze containers"}
}

// runtimeCheck says which runtimes the engine offers and its default, which
// one the configuration asks for (failing when the engine lacks it, as
// create would refuse it), and whether gVisor works there: a hardened
// sandbox of image under it runs gVisor's kernel.
func (d *Doctor) runtimeCheck(ctx context.Context, info provider.Info, image string, cfg *config.Config) api.Check {
	c := api.Check{Name: "runtime", Status: api.CheckOK}
	offers := "the engine offers " + cmp.Or(strings.Join(info.Runtimes, ", "), "no runtime it names")
	if info.DefaultRuntime != "" {
		offers += "; its default is " + info.DefaultRuntime
	}
	if cfg != nil && cfg.Runtime != "" {
		name, err := d.EngineRuntime(ctx, cfg.Runtime)
		if err != nil {
			return api.Check{Name: "runtime", Status: api.CheckFail, Detail: "sandboxes here are configured to run under " + cfg.Runtime + ", and create refuses them: " + err.Error()}
		}
		c.Detail = fmt.Sprintf("sandboxes here run under %s (%s); ", cfg.Runtime, name)
	}
	c.Detail += offers
	gv, err := d.EngineRuntime(ctx, provider.RuntimeGVisor)
	if err != nil {
		c.Detail += "; gVisor is not installed there (`scripts/ensure-gvisor.sh` in the litterbox repository builds and registers it; docs/kernels.md)"
		return c
	}
	kernel, err := d.probeKernel(ctx, image, gv)
	if err != nil {
		c.Status = api.CheckWarn
		c.Detail += "; a sandbox under " + gv + " (gVisor) failed: " + core.CapText(err.Error())
		c.Fix = "see docs/kernels.md; `scripts/ensure-gvisor.sh` in the litterbox repository installs a runsc that works with this engine"
		return c
	}
	c.Detail += fmt.Sprintf("; gVisor works: a hardened sandbox under %s runs kernel %s", gv, kernel)
	if hc, ok := d.Provider.(provider.HostSocketChecker); ok {
		if able, err := hc.HostSockets(ctx, gv); err == nil && !able {
			c.Status = api.CheckWarn
			c.Detail += ", but runsc runs without --host-uds=all, which a confined sandbox's relay needs to reach its gateway: create refuses confined sandboxes under it"
			c.Fix = "add \"runtimeArgs\": [\"--host-uds=all\"] to " + gv + " under \"runtimes\" in /etc/docker/daemon.json and reload the engine (`scripts/ensure-gvisor.sh` in the litterbox repository does); docs/kernels.md"
		}
	}
	return c
}

// probeKernel starts a hardened sandbox of image without a network under
// runtime, and says its kernel's release.
func (d *Doctor) probeKernel(ctx context.Context, image, runtime string) (string, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sp := spec.Probe(d.ExtraLabels, "doctor", "litterbox-doctor-"+hex.EncodeToString(b), image, provider.NetworkNone, 16<<20, 128<<20, 60*time.Second)
	sp.Runtime = runtime
	sb, err := d.Provider.Create(ctx, sp)
	if err != nil {
		return "", err
	}
	defer func() {
		if err := d.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
			d.Log.Warn("could not remove doctor's sandbox", "name", sb.Name, "err", err)
		}
	}()
	res, err := d.Provider.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"uname", "-r"}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("uname -r exited %d: %s", res.ExitCode, core.CapText(string(res.Stderr)))
	}
	return strings.TrimSpace(string(res.Stdout)), err
}

// kvmCheck says whether KVM can run the VM engine's VMs here: only a
// warning with --engine vm, where its VMs run emulated without it.
func kvmCheck(info provider.Info) api.Check {
	a := kvm.Detect()
	if a.Name == "kvm" {
		return api.Check{Name: "kvm", Status: api.CheckOK, Detail: "usable: the VM engine (--engine vm) runs its VMs under KVM"}
	}
	c := api.Check{Name: "kvm", Status: api.CheckOK, Detail: "not usable (" + a.Note + "): the VM engine (--engine vm) would run emulated (" + a.Name + ")"}
	if info.Engine == provider.EngineVM {
		c.Status = api.CheckWarn
		c.Fix = "enable KVM (a kvm_intel or kvm_amd module, access to /dev/kvm), or use another engine; see docs/kernels.md"
	}
	return c
}

// isolationCheck runs the check create runs before the first sandbox on an
// engine (or reads its kept answer).
func (d *Doctor) isolationCheck(ctx context.Context, image string, cfg *config.Config) api.Check {
	v, err := d.iso.Engine(ctx, image)
	allowed := d.iso.AllowedBy(cfg)
	switch {
	case err != nil:
		return api.Check{Name: "isolation", Status: api.CheckFail, Detail: "could not check that sandboxes are kept apart: " + err.Error(),
			Fix: "make sure the image runs (see the image and guest checks), then run doctor again"}
	case v == nil:
		return api.Check{Name: "isolation", Status: api.CheckWarn, Detail: "not checked: the engine does not say which instance it is, so no answer could be kept"}
	case v.Isolated:
		return api.Check{Name: "isolation", Status: api.CheckOK, Detail: "sandboxes cannot reach each other (" + v.Detail + ")"}
	case allowed != "":
		return api.Check{Name: "isolation", Status: api.CheckWarn, Detail: "sandboxes can reach each other: " + v.Detail + "; allowed by " + allowed}
	}
	return api.Check{Name: "isolation", Status: api.CheckFail, Detail: "sandboxes can reach each other: " + v.Detail + "; create refuses this engine",
		Fix: "turn the engine's firewall on (dockerd --iptables=true), or allow it knowingly with --allow-unisolated"}
}

// imageCheck looks the image up on the engine, never pulling it, and
// judges it as create does (imageInfo): a platform litterbox has a scanner
// for, none of litterbox's own labels.
func (d *Doctor) imageCheck(ctx context.Context, image string) (*provider.Image, api.Check) {
	platform, img, err := d.guest.ImageInfo(ctx, image)
	switch {
	case errors.Is(err, api.ErrImage):
		return nil, api.Check{Name: "image", Status: api.CheckFail, Detail: err.Error()}
	case err != nil:
		return nil, api.Check{Name: "image", Status: api.CheckFail, Detail: "could not look up " + image + ": " + err.Error(),
			Fix: "check that the engine answers (`docker image inspect " + image + "`)"}
	case platform == "":
		return nil, api.Check{Name: "image", Status: api.CheckFail, Detail: image + " is not on the engine",
			Fix: fmt.Sprintf("get it with `docker pull %s` (or `docker build`/`docker load`), or choose another with image in .litterbox.toml (docs/images.md)", image)}
	case d.Scanner != "":
		return &img, api.Check{Name: "image", Status: api.CheckOK, Detail: fmt.Sprintf("%s (%s); scanner from LITTERBOX_SCANNER", image, platform)}
	}
	return &img, api.Check{Name: "image", Status: api.CheckOK, Detail: fmt.Sprintf("%s (%s, scanner built in)", image, platform)}
}

// guestCheck starts a hardened sandbox of the image with no network, runs
// the guest contract's check in it (the one create runs), and removes it.
func (d *Doctor) guestCheck(ctx context.Context, image string) api.Check {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "litterbox-doctor-" + hex.EncodeToString(b)
	sb, err := d.Provider.Create(ctx, spec.Probe(d.ExtraLabels, "doctor", name, image, provider.NetworkNone, 16<<20, 128<<20, 60*time.Second))
	if err != nil {
		return api.Check{Name: "guest", Status: api.CheckFail, Detail: "a sandbox of " + image + " did not start: " + core.CapText(err.Error()),
			Fix: "the image needs sh and sleep (the guest contract, docs/architecture.md); use one built FROM busybox"}
	}
	defer func() {
		if err := d.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
			d.Log.Warn("could not remove doctor's sandbox", "name", sb.Name, "err", err)
		}
	}()
	res, err := d.Provider.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", guest.CheckScript + "id -u"}})
	missing, lacks := guest.Missing(res.ExitCode, string(res.Stderr))
	switch {
	case err != nil:
		return api.Check{Name: "guest", Status: api.CheckFail, Detail: "could not run sh in a sandbox of " + image + ": " + err.Error(),
			Fix: "the image needs sh (the guest contract, docs/architecture.md)"}
	case lacks:
		return api.Check{Name: "guest", Status: api.CheckFail, Detail: image + " lacks " + strings.Join(missing, ", "),
			Fix: "use an image that has them (the guest contract, docs/architecture.md), such as one built FROM busybox"}
	case res.ExitCode != 0:
		return api.Check{Name: "guest", Status: api.CheckFail, Detail: fmt.Sprintf("sh in a sandbox of %s exited %d: %s", image, res.ExitCode, core.CapText(string(res.Stderr))),
			Fix: "the image needs a POSIX sh (the guest contract, docs/architecture.md)"}
	}
	return api.Check{Name: "guest", Status: api.CheckOK, Detail: fmt.Sprintf("sh, sleep, %s run as uid %s in a hardened sandbox", strings.Join(guest.Tools, ", "), strings.TrimSpace(string(res.Stdout)))}
}

// doctorImage is the image a create in dir would use by default: the
// configuration's at HEAD when dir is in a repository and it names one,
// else the service's.
func (d *Doctor) doctorImage(ctx context.Context, dir string) (string, *config.Config) {
	r, err := core.OpenRepo(ctx, d.Runner, dir)
	if err != nil {
		return d.Image, nil
	}
	head, err := r.Git.Head(ctx)
	if err != nil {
		return d.Image, nil
	}
	cfg, err := config.Load(ctx, r.Git, head, func(string) {})
	if err != nil {
		return d.Image, nil
	}
	return cmp.Or(cfg.Image, d.Image), cfg
}

var gitVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`git version (\d+)\.(\d+)`) })

// gitCheck checks git's version.
func (d *Doctor) gitCheck(ctx context.Context) api.Check {
	res, err := d.Runner.Run(ctx, runner.New("git", "version"))
	if err != nil {
		return api.Check{Name: "git", Status: api.CheckFail, Detail: "git does not run: " + err.Error(),
			Fix: fmt.Sprintf("install git %d.%d or later", MinGit[0], MinGit[1])}
	}
	out := strings.TrimSpace(string(res.Stdout))
	m := gitVersionRE().FindStringSubmatch(out)
	if m == nil {
		return api.Check{Name: "git", Status: api.CheckWarn, Detail: fmt.Sprintf("could not read the version in %q", out)}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < MinGit[0] || major == MinGit[0] && minor < MinGit[1] {
		return api.Check{Name: "git", Status: api.CheckFail, Detail: out + ": too old (merge and apply need `git merge-tree --write-tree`)",
			Fix: fmt.Sprintf("install git %d.%d or later", MinGit[0], MinGit[1])}
	}
	return api.Check{Name: "git", Status: api.CheckOK, Detail: out}
}

// repoChecks look at the repository dir is in: signing, hooks, disk space.
func (d *Doctor) repoChecks(ctx context.Context, dir string) []api.Check {
	g, err := git.Open(ctx, d.Runner, dir)
	if err != nil {
		c := api.Check{Name: "repository", Status: api.CheckWarn, Detail: dir + " is not in a git repository, so its signing and hooks were not checked",
			Fix: "run doctor inside the repository you make sandboxes of, or pass --repo"}
		if !errors.Is(err, git.ErrNotRepository) {
			c.Status, c.Detail = api.CheckFail, err.Error()
			c.Fix = "check that git can read it (`git -C " + dir + " status`)"
		}
		return append([]api.Check{c}, diskCheck(dir))
	}
	checks := []api.Check{{Name: "repository", Status: api.CheckOK, Detail: g.Root}}

	sign := api.Check{Name: "signing", Status: api.CheckOK, Detail: "commit.gpgSign is off: merge commits are not signed"}
	if g.SignsCommits(ctx) {
		sign.Detail = "commit.gpgSign is on: merge signs its commit with your key, and says so when signing fails (snapshots on litterbox/* branches are never signed)"
	}
	checks = append(checks, sign)

	hooks := api.Check{Name: "hooks", Status: api.CheckOK, Detail: "litterbox runs no git hooks (each of its git commands sets core.hooksPath=/dev/null)"}
	if n := countHooks(g); n > 0 {
		hooks.Detail = fmt.Sprintf("this repository has %d hook(s); litterbox runs none of them (core.hooksPath=/dev/null), so run your checks yourself before you push a merge", n)
	}
	checks = append(checks, hooks, settingsCheck(ctx, g))
	if c, ok := devContainerCheck(ctx, g); ok {
		checks = append(checks, c)
	}
	return append(checks, diskCheck(g.CommonDir))
}

// settingsCheck says whether the local settings file is read: only one git
// does not track is (see config.TrackedLocalWarning).
func settingsCheck(ctx context.Context, g *git.Repo) api.Check {
	c := api.Check{Name: "settings", Status: api.CheckOK}
	if _, err := os.Lstat(filepath.Join(g.Root, config.LocalFile)); err != nil {
		c.Detail = "no " + config.LocalFile + " (your local settings, see docs/config.md): agents pick no image of their own"
		return c
	}
	name, tracked, err := g.Tracked(ctx, config.LocalFile)
	switch {
	case err != nil:
		c.Status, c.Detail = api.CheckWarn, "could not ask git whether it tracks "+config.LocalFile+": "+err.Error()
	case tracked && name != config.LocalFile:
		c.Status = api.CheckWarn
		c.Detail = termtext.Quote(name) + " is tracked by git, and on a case-insensitive file system it is " + config.LocalFile + ", so that file is not read: local settings come only from a file you wrote, and a tracked one came with a commit, perhaps an agent's"
		c.Fix = "read it, then remove it (`git rm " + termtext.Quote(name) + "`) and commit"
	case tracked:
		c.Status = api.CheckWarn
		c.Detail = config.LocalFile + " is tracked by git, so it is not read: local settings come only from a file you wrote, and a tracked one came with a commit, perhaps an agent's"
		c.Fix = "read it; if it is yours, stop tracking it (`git rm --cached " + config.LocalFile + "`) and list it in .gitignore"
	default:
		c.Detail = config.LocalFile + " is read: git does not track it, so you wrote it"
	}
	return c
}

// countHooks counts the hooks git would run: executable files, not the
// samples, in the hooks directory (core.hooksPath is not followed: an
// answer is all doctor needs).
func countHooks(g *git.Repo) int {
	entries, err := os.ReadDir(filepath.Join(g.CommonDir, "hooks"))
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 && !strings.HasSuffix(e.Name(), ".sample") {
			n++
		}
	}
	return n
}

// diskCheck checks the free space where snapshots and merges write objects.
func diskCheck(dir string) api.Check {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return api.Check{Name: "disk", Status: api.CheckWarn, Detail: "could not read the free space of " + dir + ": " + err.Error()}
	}
	free := st.Bavail * uint64(st.Bsize)
	c := api.Check{Name: "disk", Status: api.CheckOK, Detail: fmt.Sprintf("%s free where the repository's objects are (%s)", humanBytes(free), dir)}
	switch {
	case free < diskFail:
		c.Status, c.Fix = api.CheckFail, "free some space: snapshots and merges write objects into the repository"
	case free < diskWarn:
		c.Status, c.Fix = api.CheckWarn, "free some space: big snapshots may not fit"
	}
	return c
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
