package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// An ssh engine (DOCKER_HOST=ssh://host) is reached through one ssh
// connection per endpoint, which litterbox keeps open and shares between its
// processes: an ssh master (ControlMaster) that forwards a local unix socket
// to the remote engine's socket. The docker CLI is pointed at that socket
// (--host unix://...), so each docker call costs a channel on a connection
// that is already up, not a new ssh login (the docker CLI's own ssh://
// support starts ssh twice per `docker exec`, which made an MCP `bash true`
// 3.4-4.1x slower than on a local socket; this makes it about the same).
//
// The master and its sockets live in a per-user runtime directory, never in
// the repository. The master leaves by itself once no connection has used it
// for sshPersist (ControlPersist). Every ssh command is run, logged and
// pasteable like the docker ones, and so is every docker command: it names
// the local socket, which works as long as the master does.

// sshPersist is how long the master outlives its last use.
const sshPersist = 10 * time.Minute

// sshTunnel is the shared connection to one ssh endpoint.
type sshTunnel struct {
	ep Endpoint
	r  runner.Runner
	// user, port and host name the destination, as the docker CLI reads
	// them from ssh://[user@]host[:port]; path is the engine's socket on
	// the remote host when the URL gives it (Podman's CONTAINER_HOST does).
	user, port, host, path string
	// ctl is the master's control socket, sock the local end of the
	// forward, lock serializes setting them up between processes.
	ctl, sock, lock string
	// config, when set, is the ssh configuration file (-F).
	config string
	// connectTimeout bounds ssh's connection and banner exchange.
	connectTimeout time.Duration

	mu  sync.Mutex
	up  bool  // the socket answered since the last reset
	err error // how the last attempt failed
	// tries counts attempts, so that callers that waited for one share its
	// failure instead of each trying again.
	tries atomic.Int64
}

// newSSHTunnel prepares (without connecting) the tunnel to an ssh endpoint.
func newSSHTunnel(ep Endpoint, r runner.Runner, config string, connect time.Duration) (*sshTunnel, error) {
	u, err := url.Parse(ep.URL)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("ssh endpoint %s: not of the form ssh://[user@]host[:port]", ep)
	}
	dir, err := runtimeDir()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(ep.URL))
	base := filepath.Join(dir, "ssh-"+hex.EncodeToString(sum[:6]))
	t := &sshTunnel{ep: ep, r: r, user: u.User.Username(), port: u.Port(), host: u.Hostname(),
		path: u.Path, ctl: base + ".ctl", sock: base + ".sock", lock: base + ".lock", config: config, connectTimeout: connect}
	if t.path == "/" {
		t.path = ""
	}
	return t, nil
}

// runtimeDir is the per-user directory for the ssh sockets:
// $XDG_RUNTIME_DIR/litterbox, else $TMPDIR/litterbox-<uid>. It must be the
// user's alone: its sockets reach the engine, which is as good as root there.
func runtimeDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("litterbox-%d", os.Getuid()))
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		dir = filepath.Join(x, "litterbox")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make litterbox's runtime directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is not a directory only you can use: remove it (litterbox keeps its ssh connections there)", dir)
	}
	return dir, nil
}

// Host is the --host the docker CLI gets: the local end of the forward.
func (t *sshTunnel) Host() string { return "unix://" + t.sock }

// ssh starts an ssh command line through the master: options, the
// destination, then args (a remote command, or nothing).
func (t *sshTunnel) ssh(opts []string, args ...string) *runner.Cmd {
	cmd := runner.New("ssh").As(runner.Control)
	if t.config != "" {
		cmd.Arg("-F", t.config)
	}
	cmd.Arg("-o", "ControlPath="+t.ctl)
	cmd.Arg(opts...)
	if t.user != "" {
		cmd.Arg("-l", t.user)
	}
	if t.port != "" {
		cmd.Arg("-p", t.port)
	}
	return cmd.Arg("--", t.host).Arg(args...)
}

// ensure makes sure the forward answers: once per process (and again after
// reset), and each time quickly when another litterbox process made it.
// Calls that wait while another one tries share its outcome.
func (t *sshTunnel) ensure(ctx context.Context) error {
	tries := t.tries.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.up {
		return nil
	}
	if t.tries.Load() != tries && t.err != nil {
		return t.err
	}
	t.err = t.connect(ctx)
	t.up = t.err == nil
	t.tries.Add(1)
	return t.err
}

// connect finds or makes the master and its forward.
func (t *sshTunnel) connect(ctx context.Context) error {
	if answers(t.sock) {
		return nil
	}
	unlock, err := flock.Lock(t.lock)
	if err != nil {
		return err
	}
	defer unlock()
	if answers(t.sock) { // made by another process meanwhile
		return nil
	}
	if _, err := t.r.Run(ctx, t.ssh([]string{"-O", "check"})); err != nil {
		// No master: start one. A control socket left by a master that
		// died would stop the new one from listening.
		os.Remove(t.ctl)
		master := t.ssh([]string{"-f", "-N",
			"-o", "ControlMaster=yes",
			"-o", "ControlPersist=" + strconv.Itoa(int(sshPersist.Seconds())),
			// No prompt can be answered: litterbox runs under agents,
			// with stdin not a terminal. Keys come from the agent or
			// from files without a passphrase.
			"-o", "BatchMode=yes",
			"-o", "ConnectTimeout=" + strconv.Itoa(int(t.connectTimeout.Seconds())),
			"-o", "ServerAliveInterval=30",
			"-o", "StreamLocalBindUnlink=yes",
		})
		if _, err := t.r.Run(ctx, master); err != nil {
			return t.unreachable(err)
		}
	}
	remote, err := t.remoteSocket(ctx)
	if err != nil {
		return err
	}
	os.Remove(t.sock) // left by a master that died; nothing answers on it
	if _, err := t.r.Run(ctx, t.ssh([]string{"-O", "forward", "-L", t.sock + ":" + remote})); err != nil {
		return t.unreachable(err)
	}
	if !answers(t.sock) {
		return &provider.UnreachableError{Endpoint: t.ep.String(),
			Reason: fmt.Sprintf("cannot reach the engine at %s: ssh forwards %s to the remote engine's %s, but nothing answers there. Check the engine with `ssh %s docker version`", t.ep, t.sock, remote, t.host)}
	}
	return nil
}

// reset makes the next ensure check the forward again.
func (t *sshTunnel) reset() {
	t.mu.Lock()
	t.up = false
	t.mu.Unlock()
}

// remoteSocket is where the engine listens on the remote host: the URL's
// path, else what the remote docker CLI would use (the remote user's
// DOCKER_HOST or context; the docker CLI's ssh support asks it too, with
// `docker system dial-stdio`), else the default socket when the remote host
// has no docker CLI.
func (t *sshTunnel) remoteSocket(ctx context.Context) (string, error) {
	if t.path != "" {
		return t.path, nil
	}
	res, err := t.r.Run(ctx, t.ssh(nil, "docker context inspect --format '{{.Endpoints.docker.Host}}'"))
	if runner.ExitCode(err) == 127 {
		return strings.TrimPrefix(DefaultSocket, "unix://"), nil
	}
	if err != nil {
		return "", t.unreachable(err)
	}
	fields := strings.Fields(string(res.Stdout))
	if len(fields) == 0 {
		return "", fmt.Errorf("ask %s for its docker endpoint: `docker context inspect` printed nothing", t.ep)
	}
	host := fields[len(fields)-1]
	if p, ok := strings.CutPrefix(host, "unix://"); ok {
		return p, nil
	}
	if hp, ok := strings.CutPrefix(host, "tcp://"); ok {
		return hp, nil
	}
	return "", fmt.Errorf("the docker CLI on %s points at %s, which litterbox cannot forward to over ssh: point DOCKER_HOST at that engine directly", t.host, host)
}

// unreachable words a failed ssh command: the endpoint, then ssh's own
// words, then what to check.
func (t *sshTunnel) unreachable(err error) error {
	var te *runner.TimeoutError
	if errors.As(err, &te) {
		return &provider.UnreachableError{Endpoint: t.ep.String(), Err: err,
			Reason: fmt.Sprintf("cannot reach the engine at %s: ssh did not answer within %s. Check that `ssh %s docker version` works, or raise %s", t.ep, te.Limit, t.host, te.Setting())}
	}
	var ni *runner.NotInstalledError
	if errors.As(err, &ni) {
		return &provider.UnreachableError{Endpoint: t.ep.String(), Err: err,
			Reason: fmt.Sprintf("cannot reach the engine at %s: the ssh client is not installed: install OpenSSH's client and try again", t.ep)}
	}
	words := strings.TrimSpace(runner.Stderr(err))
	if words == "" {
		words = err.Error()
	}
	return &provider.UnreachableError{Endpoint: t.ep.String(), Err: err,
		Reason: fmt.Sprintf("cannot reach the engine at %s: ssh says: %s\nCheck that `ssh %s docker version` works without a prompt (litterbox runs ssh with BatchMode=yes: a key from ssh-agent or without a passphrase, a known host key), then try again", t.ep, oneLine(words), t.host)}
}

// Forward makes a port of the remote host (hostIP:port, as the engine bound
// it) reachable on this machine's 127.0.0.1, through the master, and
// returns the local port: the same number when it is free here. Asking again
// for a forward that exists is a no-op for ssh, so each call is idempotent.
func (t *sshTunnel) Forward(ctx context.Context, hostIP string, port int) (int, error) {
	if err := t.ensure(ctx); err != nil {
		return 0, err
	}
	if hostIP == "" || hostIP == "0.0.0.0" || hostIP == "::" {
		hostIP = "127.0.0.1"
	}
	forward := func(local int) error {
		_, err := t.r.Run(ctx, t.ssh([]string{"-O", "forward", "-L", fmt.Sprintf("127.0.0.1:%d:%s:%d", local, hostIP, port)}))
		return err
	}
	recorded := t.portsFile()
	if local := readForward(recorded, hostIP, port); local != 0 && forward(local) == nil {
		return local, nil
	}
	if forward(port) == nil {
		return port, nil
	}
	// Taken here: by another program, or by an earlier forward of another
	// port. Another free port, recorded so the next call asks for the same.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	local := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := forward(local); err != nil {
		return 0, fmt.Errorf("forward port %d of %s over ssh: %s", port, t.host, oneLine(runner.Stderr(err)))
	}
	writeForward(recorded, hostIP, port, local)
	return local, nil
}

// portsFile records the forwards that could not keep their port number.
func (t *sshTunnel) portsFile() string { return strings.TrimSuffix(t.sock, ".sock") + ".ports" }

func readForward(path, hostIP string, port int) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	key := fmt.Sprintf("%s:%d", hostIP, port)
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func writeForward(path, hostIP string, port, local int) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s:%d %d\n", hostIP, port, local)
}

// answers reports whether something accepts connections on the unix socket
// at path.
func answers(path string) bool {
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// oneLine joins the lines of s with "; ", for a message.
func oneLine(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}
