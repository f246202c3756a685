package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
)

// A one-shot command (a create) claims through a shared proxy: `litterbox
// pool N` starts, when none runs for the engine, a process of its own
// (litterbox again, Options.Daemon, in a session of its own, with no
// standard streams: nothing that waits on the command's output waits on
// it) that keeps the same `kubectl proxy` as the MCP server's
// (claimproxy.go) in a directory every process of the user finds
// (sharedDir), so that a pooled create's claim starts no kubectl: ten
// creates at once from a pool of ten were some 550 ms of kubectl start-up
// on two cores. A claim that finds no proxy, or one that does not answer,
// is kubectl annotate as before, and starts one for the next claims. The
// proxy ends when no claim used it for proxyIdle, and at `litterbox
// delete --pool`; it takes its directory with it.

var _ provider.ClaimKeeper = (*Provider)(nil)

// ProxyDaemonEnv names, in the environment of the process KeepClaims
// starts, the directory of the shared proxy it keeps (ServeProxy); its
// arguments are the proxy's argv, and its file descriptor 3 the
// directory's lock, held.
const ProxyDaemonEnv = "LITTERBOX_KUBECTL_PROXY"

// proxyIdle is how long the shared proxy runs without a claim through it
// (each claim touches its socket).
const proxyIdle = 10 * time.Minute

// The files of the shared proxy's directory.
const (
	proxySocket = "s"    // kubectl proxy's socket
	proxyNS     = "ns"   // the namespace its URLs name
	proxyPID    = "pid"  // the process that keeps it
	proxyLock   = "lock" // held by that process while it runs
)

// sharedDir is the shared proxy's directory: in the state directory
// (mode 0700), named after what decides which pods a claim reaches: the
// kubeconfig files' path and contents, kubectl, the context (endpointFile's
// name) and the namespace. Short, for the socket's path (under 104 bytes
// on macOS, 108 on Linux). "" when a kubeconfig cannot be read.
func (p *Provider) sharedDir() string {
	ep := p.endpointFile()
	if ep == "" {
		return ""
	}
	h := sha256.Sum256([]byte(filepath.Base(ep) + "\x00" + p.o.Namespace))
	return filepath.Join(p.o.StateDir, "kp-"+hex.EncodeToString(h[:5]))
}

// private says why dir is not a directory of the user's that only the
// user can open (nil when it is): nothing else is trusted with a claim.
func private(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is not a directory of mode 0700 of user %d", dir, os.Getuid())
	}
	return nil
}

// sharedClaimProxy is the client of the shared proxy when its directory
// is there, the user's alone; nil, saying why at debug level, when not.
func (p *Provider) sharedClaimProxy() *claimProxy {
	dir := p.sharedDir()
	if dir == "" {
		return nil
	}
	err := private(dir)
	var ns []byte
	if err == nil {
		ns, err = os.ReadFile(filepath.Join(dir, proxyNS))
	}
	if err != nil {
		p.o.Log.Debug("the claim goes through kubectl annotate: no shared kubectl proxy", "err", err)
		return nil
	}
	c := newClaimProxy(filepath.Join(dir, proxySocket), string(ns), p.o.Log)
	c.mark = c.sock
	// A proxy that is stuck (stopped, not killed) holds a create for no
	// longer than this; kubectl annotate then makes the claim.
	c.hc.Timeout = 10 * time.Second
	return c
}

// KeepClaims starts the shared proxy when none runs (a fill's): not in a
// long-lived process, which keeps its own, nor without Options.Daemon. The
// namespace is the provider's, else the kubeconfig's.
func (p *Provider) KeepClaims(ctx context.Context) {
	if p.o.LongLived || p.o.Daemon == "" {
		return
	}
	ns, err := p.namespace(ctx)
	if err != nil {
		p.o.Log.Debug("no shared kubectl proxy: no namespace", "err", err)
		return
	}
	p.startShared(ns)
}

// startShared starts the process that keeps the shared proxy of namespace
// ns, unless one holds its directory's lock already (then the claims of
// the fill to come count as a use of it). The lock goes to that process,
// which holds it while it runs: of two fills, one starts it.
func (p *Provider) startShared(ns string) {
	if p.o.Daemon == "" {
		return
	}
	dir := p.sharedDir()
	if dir == "" {
		return
	}
	sock := filepath.Join(dir, proxySocket)
	why := func(err error) { p.o.Log.Debug("no shared kubectl proxy", "dir", dir, "err", err) }
	if len(sock) >= len(syscall.RawSockaddrUnix{}.Path) {
		why(errors.New("the socket's path is too long"))
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		why(err)
		return
	}
	if err := private(dir); err != nil {
		why(err)
		return
	}
	path := filepath.Join(dir, proxyLock)
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		why(err)
		return
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		now := time.Now()
		_ = os.Chtimes(sock, now, now)
		return
	}
	// A proxy that ended may have removed the directory, with the lock
	// file this one opened, meanwhile: the next fill or claim starts it.
	fi, err := lock.Stat()
	if st, serr := os.Stat(path); err != nil || serr != nil || !os.SameFile(fi, st) {
		return
	}
	// What a process that was killed left.
	os.Remove(sock)
	os.Remove(filepath.Join(dir, proxyPID))
	if err := os.WriteFile(filepath.Join(dir, proxyNS), []byte(ns), 0o600); err != nil {
		why(err)
		return
	}
	cmd := exec.Command(p.o.Daemon, p.proxyArgs(sock, ns)...)
	cmd.Env = append(os.Environ(), ProxyDaemonEnv+"="+dir)
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		why(err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, proxyPID), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	_ = cmd.Process.Release()
	p.o.Log.Debug("started the shared kubectl proxy of the claims", "dir", dir, "pid", cmd.Process.Pid)
}

// EndClaims ends the shared proxy (`litterbox delete --pool`): it asks the
// process that keeps it to end, waits for it (up to 10 s), and removes
// what is left of its directory.
func (p *Provider) EndClaims(ctx context.Context) {
	dir := p.sharedDir()
	if dir == "" || private(dir) != nil {
		return
	}
	path := filepath.Join(dir, proxyLock)
	unlock, ok, err := flock.TryLock(path)
	if err != nil {
		return
	}
	if !ok {
		if b, err := os.ReadFile(filepath.Join(dir, proxyPID)); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if unlock, err = flock.Wait(wctx, path, 20*time.Millisecond); err != nil {
			p.o.Log.Debug("the shared kubectl proxy did not end", "dir", dir, "err", err)
			return
		}
	}
	os.RemoveAll(dir)
	unlock()
	p.o.Log.Debug("ended the shared kubectl proxy of the claims", "dir", dir)
}

// ServeProxy is the process that keeps the shared proxy of dir (the
// argv): kubectl under proxyScript, whose stdin is a pipe only this
// process holds, so that however it ends the proxy ends and the directory
// goes. It ends when asked (SIGTERM), when no claim touched the socket for
// proxyIdle, or when the socket does not answer (kubectl ended, the
// directory was removed). Its exit code is 0.
func ServeProxy(dir string, argv []string) int {
	// A process that lives for minutes collects its garbage.
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 62)
	lock := os.NewFile(3, proxyLock)
	defer lock.Close()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	r, w, err := os.Pipe()
	if err != nil {
		os.RemoveAll(dir)
		return 0
	}
	cmd := exec.Command("sh", append([]string{"-c", proxyScript, dir}, argv...)...)
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return 0
	}
	r.Close()
	sock := filepath.Join(dir, proxySocket)
	// Each second a look at the socket; every tenth, a connection to it.
	for n, t := 1, time.NewTicker(time.Second); ; n++ {
		select {
		case <-ctx.Done():
		case <-t.C:
			fi, err := os.Stat(sock)
			if err != nil && n < 30 {
				continue // kubectl starts
			}
			if err == nil && time.Since(fi.ModTime()) < proxyIdle && (n%10 != 0 || answers(sock)) {
				continue
			}
		}
		break
	}
	// proxyScript removes the directory: not this process once it is
	// done, which would remove a next proxy's, started meanwhile (the
	// lock went with the directory).
	w.Close()
	_ = cmd.Wait()
	return 0
}

// answers reports whether something listens on the Unix socket sock.
func answers(sock string) bool {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}
