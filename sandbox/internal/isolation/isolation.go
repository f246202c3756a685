// Package isolation checks, once per engine start, that the engine keeps
// sandboxes apart, and refuses a create on one that does not unless the user
// allows it. The verdict is kept in the user's cache directory.
package isolation

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/guest"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// Isolation is checked, not assumed. Each sandbox has a network of its own,
// and what keeps sandboxes on different networks apart is the engine's
// firewall: a dockerd run with --iptables=false routes between its bridge
// networks, and then any sandbox reaches every other one. So before the
// first create on an engine, litterbox tries: it starts two probe sandboxes
// on networks of their own, one listening, and has the other connect. If it
// gets through, create refuses, unless the user allows it (--allow-unisolated,
// LITTERBOX_ALLOW_UNISOLATED, or allow_unisolated in .litterbox.local.toml).
//
// The answer is kept in the user's cache directory, outside any repository,
// under the engine's endpoint and instance (provider.Info.Instance: it
// changes when the engine restarts, and a restart is what changes its
// firewall), so each engine is checked once per start; every create after
// that costs one Info call, made beside create's other first steps.

// probePort is the port the listening probe sandbox listens on.
const probePort = 47474

// Checker runs the check, with the guest's scanner as the probe program.
type Checker struct {
	*core.Common
	guest *guest.Guest
}

// New is the isolation check of c's engine.
func New(c *core.Common, g *guest.Guest) *Checker { return &Checker{Common: c, guest: g} }

// Verdict is what the check found on one engine.
type Verdict struct {
	Endpoint string    `json:"endpoint"`
	Instance string    `json:"instance"`
	Isolated bool      `json:"isolated"`
	Detail   string    `json:"detail"`
	Checked  time.Time `json:"checked"`
	// cache is the file it is kept in.
	cache string
}

// Check is an isolation check started beside create's first steps.
type Check struct {
	done    chan struct{}
	verdict *Verdict
	err     error
}

// Start starts finding out whether the engine isolates
// sandboxes: at once when the answer is cached, else by probing it.
func (c *Checker) Start(ctx context.Context, image string) *Check {
	chk := &Check{done: make(chan struct{})}
	go func() {
		defer close(chk.done)
		chk.verdict, chk.err = c.Engine(ctx, image)
	}()
	return chk
}

// Wait returns the check's outcome.
func (c *Check) Wait() (*Verdict, error) {
	<-c.done
	return c.verdict, c.err
}

// Engine returns the cached verdict of the engine, or probes it. An
// engine that cannot say which instance it is (Info.Instance "") is not
// checked: nothing could key the answer.
// The probe sandboxes run image, the one the sandbox being made runs: the
// engine holds it (litterbox pulls no image but the default).
func (c *Checker) Engine(ctx context.Context, image string) (*Verdict, error) {
	var info provider.Info
	var err error
	if in, ok := c.Provider.(provider.Instancer); ok {
		info, err = in.Instance(ctx)
	} else {
		info, err = c.Provider.Info(ctx)
	}
	if err != nil {
		return nil, err
	}
	if info.Instance == "" {
		return nil, nil
	}
	// probeScheme is in the key: a verdict about the networks of an
	// earlier version proves nothing about the shared bridge.
	sum := sha256.Sum256([]byte(info.Endpoint + "\x00" + info.Instance + "\x00" + probeScheme))
	dir, err := c.cacheDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, hex.EncodeToString(sum[:12])+".json")
	if v := readVerdict(path); v != nil {
		return v, nil
	}
	// One probe per engine at a time: the others wait and read its answer.
	unlock, err := flock.Lock(path + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if v := readVerdict(path); v != nil {
		return v, nil
	}
	v, err := c.probeIsolation(ctx, image)
	if err != nil {
		return nil, err
	}
	v.Endpoint, v.Instance, v.Checked, v.cache = info.Endpoint, info.Instance, time.Now().UTC(), path
	if err := keepVerdict(v); err != nil {
		c.Log.Warn("could not keep the result of the isolation check; it runs again next time", "err", err)
	}
	return v, nil
}

// keepVerdict writes v to its cache file, and removes the other verdicts
// of its endpoint (with their locks): they are of an engine no longer
// there (Docker's instance changes at each start of the engine, a
// context's cluster made again has another) or of an older probeScheme,
// and no lookup would read them again. Without that, the cache would grow
// by one verdict at each restart of the engine.
func keepVerdict(v *Verdict) error {
	data, _ := json.MarshalIndent(v, "", "  ")
	if err := state.WriteAtomic(v.cache, append(data, '\n')); err != nil {
		return err
	}
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(v.cache), "*.json"))
	for _, p := range others {
		if old := readVerdict(p); p != v.cache && old != nil && old.Endpoint == v.Endpoint {
			_ = os.Remove(p)
			_ = os.Remove(p + ".lock")
		}
	}
	return nil
}

// cacheDir is where verdicts are kept: the options' CacheDir
// (LITTERBOX_CACHE_DIR), else the user's cache directory.
func (c *Checker) cacheDir() (string, error) {
	return c.CacheSub("engines")
}

func readVerdict(path string) *Verdict {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	v := &Verdict{cache: path}
	if json.Unmarshal(data, v) != nil || v.Checked.IsZero() {
		return nil
	}
	return v
}

// probeScheme names what probeIsolation checks, for the verdict's cache key.
const probeScheme = "isolated+own"

// probeIsolation starts three probe sandboxes of image: two as sandboxes are
// made by default (provider.NetworkIsolated: on Docker, side by side on the
// shared bridge) and one on a network of its own (provider.NetworkOwn, what
// network = "own" makes). It copies the scanner program (litterbox-scan)
// into each, starts a listener in the first and has the others connect to
// it. Either connected: not isolated. The listener first connects to itself
// on its own address, so a probe whose listener never came up fails instead
// of passing for isolation.
// probeTries is how many times a connection must get through before the
// check says the engine does not isolate.
const probeTries = 3

func (c *Checker) probeIsolation(ctx context.Context, image string) (*Verdict, error) {
	bin, err := c.guest.ProbeScanner(ctx, image)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	base := "litterbox-probe-" + hex.EncodeToString(b)
	probe := func(name, network string) provider.Spec {
		return spec.Probe(c.ExtraLabels, "isolation", name, image, network, 64<<20, 256<<20, 120*time.Second)
	}
	c.Log.Info("checking that the engine isolates sandboxes from each other (once per engine start)")
	var (
		sbs  [3]*provider.Sandbox
		errs [3]error
		wg   sync.WaitGroup
	)
	nets := [3]string{provider.NetworkIsolated, provider.NetworkOwn, provider.NetworkIsolated}
	for i, side := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sbs[i], errs[i] = c.Provider.Create(ctx, probe(base+"-"+side, nets[i])); errs[i] == nil {
				errs[i] = c.copyProbe(ctx, sbs[i].Ref, bin)
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, sb := range sbs {
			if sb != nil {
				if err := c.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
					c.Log.Warn("could not remove a probe sandbox of the isolation check", "name", sb.Name, "err", err)
				}
			}
		}
	}()
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("start the probe sandboxes: %w", err)
	}

	// The listener says "ready IP..." once it listens; then the other side
	// connects, and the listener is stopped.
	lctx, stopListener := context.WithCancel(ctx)
	defer stopListener()
	ready := newLineWaiter("ready ")
	var lerr error
	go func() {
		_, lerr = c.Provider.Exec(lctx, provider.ExecRequest{Ref: sbs[0].Ref, Cmd: []string{"/tmp/litterbox-scan", "probe", "listen", strconv.Itoa(probePort), "60s"}, Stdout: ready, Stderr: io.Discard})
		ready.close()
	}()
	ips, ok := ready.wait()
	if !ok {
		return nil, fmt.Errorf("the listening probe sandbox did not come up (%v)", lerr)
	}
	// b, on another network, first; then c, on the listener's own when
	// the provider shares one.
	var details []string
	for i, where := range []string{"on a different network", "on the same shared network"} {
		if where == "on the same shared network" && (sbs[2].Network == "" || sbs[2].Network != sbs[0].Network) {
			where = "on a different network"
		}
		// A connection that gets through is tried again before it counts:
		// Docker 20.10 lifts its isolation between bridges for a moment
		// whenever any network is made or removed (docs/security.md), and
		// an engine that does not isolate lets every try through.
		var res provider.ExecResult
		var out string
		for try := 1; ; try++ {
			res, err = c.Provider.Exec(ctx, provider.ExecRequest{Ref: sbs[1+i].Ref, Cmd: append([]string{"/tmp/litterbox-scan", "probe", "connect", strconv.Itoa(probePort), "3s"}, strings.Fields(ips)...)})
			if err != nil {
				return nil, fmt.Errorf("run the connecting probe: %w", err)
			}
			out = strings.TrimSpace(string(res.Stdout))
			if !strings.HasPrefix(out, "reached ") || try == probeTries {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		switch {
		case strings.HasPrefix(out, "reached "):
			return &Verdict{Isolated: false, Detail: fmt.Sprintf("a sandbox connected to %s, another sandbox's address %s", strings.TrimPrefix(out, "reached "), where)}, nil
		case strings.HasPrefix(out, "unreached"):
			details = append(details, out+" ("+where+")")
			continue
		}
		return nil, fmt.Errorf("the connecting probe said %q (exit %d, %s)", out, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return &Verdict{Isolated: true, Detail: strings.Join(details, "; ")}, nil
}

// copyProbe copies the scanner program to /tmp/litterbox-scan in a probe
// sandbox.
func (c *Checker) copyProbe(ctx context.Context, ref provider.Ref, bin guest.Scanner) error {
	f, err := bin.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := c.Provider.Exec(ctx, provider.ExecRequest{Ref: ref, Stdin: f,
		Cmd: []string{"sh", "-c", `cat >/tmp/litterbox-scan && chmod 0755 /tmp/litterbox-scan`}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("copy the probe program into the probe sandbox: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return err
}

// lineWaiter is a writer that waits for a line starting with prefix.
type lineWaiter struct {
	prefix string
	mu     sync.Mutex
	buf    []byte
	found  chan string
	once   sync.Once
}

func newLineWaiter(prefix string) *lineWaiter {
	return &lineWaiter{prefix: prefix, found: make(chan string, 1)}
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, w.prefix); ok {
			w.once.Do(func() { w.found <- rest; close(w.found) })
		}
	}
	return len(p), nil
}

func (w *lineWaiter) close() { w.once.Do(func() { close(w.found) }) }

// wait returns the rest of the line, or false when the writer was closed
// first.
func (w *lineWaiter) wait() (string, bool) {
	rest, ok := <-w.found
	return rest, ok
}

// refuse refuses a create on an engine whose sandboxes reach each
// other, unless allowed; allowed, it warns.
func (c *Checker) refuse(v *Verdict, allowedBy string) error {
	if v == nil || v.Isolated {
		return nil
	}
	if allowedBy != "" {
		c.Log.Warn(fmt.Sprintf("sandboxes on %s are not isolated from each other (%s); going on, as %s allows", v.Endpoint, v.Detail, allowedBy))
		return nil
	}
	return &api.Error{Kind: api.ErrUnisolated,
		Msg: fmt.Sprintf("Refusing to create a sandbox: sandboxes on the engine at %s are not isolated from each other: %s. "+
			"Its firewall does not separate its networks (a dockerd started with --iptables=false does this; so does a Kubernetes cluster whose network plugin does not enforce NetworkPolicy, such as the bridge CNI); fix the engine and restart it, "+
			"or accept it with `litterbox --allow-unisolated` (LITTERBOX_ALLOW_UNISOLATED=1) or allow_unisolated = true in %s. "+
			"Checked once per engine start; the result is kept in %s.", v.Endpoint, v.Detail, config.LocalFile, v.cache),
		Agent: fmt.Sprintf("The sandbox was not created: the engine (%s) does not isolate sandboxes from each other, so litterbox refuses to run them there. Tell the user; they can fix the engine or allow it.", v.Endpoint)}
}

// Refuse waits for the engine's isolation check and refuses an
// engine whose sandboxes reach each other, unless the user allows it.
func (c *Checker) Refuse(check *Check, cfg *config.Config) error {
	v, err := check.Wait()
	if err != nil {
		if errors.Is(err, provider.ErrUnreachable) {
			return err
		}
		// A check that could not run says nothing of the engine: go on,
		// and try again next time.
		c.Log.Warn("could not check that the engine isolates sandboxes from each other; it is checked again next time", "err", err)
		return nil
	}
	return c.refuse(v, c.AllowedBy(cfg))
}

// AllowedBy names what lets sandboxes run on an engine that does not keep
// them apart, or is "" when nothing does.
func (c *Checker) AllowedBy(cfg *config.Config) string {
	switch {
	case c.AllowUnisolated:
		return "--allow-unisolated (LITTERBOX_ALLOW_UNISOLATED)"
	case cfg != nil && cfg.AllowUnisolated:
		return "allow_unisolated in " + config.LocalFile
	}
	return ""
}
