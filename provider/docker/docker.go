// Package docker is the provider that runs sandboxes with the docker CLI:
// against a Docker engine, wherever the CLI is pointed (DOCKER_HOST,
// DOCKER_CONTEXT, `docker context use`), or against Podman's
// Docker-compatible API socket. Each operation is an argv built here and run
// through a runner.Runner, so every call is logged and can be pasted into a
// shell. The engines' failures are told apart by their stderr (the exit
// codes do not), once, in classify; what leaves this package is a neutral
// provider error.
package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// Client runs docker commands against one engine.
type Client struct {
	R runner.Runner
	// Host, when set, is passed as --host: the engine's endpoint, in the
	// argv so a logged command is whole when pasted.
	Host string
	// Dialect is how the engine spells options and words its errors.
	Dialect *Dialect

	// ep is the engine's endpoint as the user named it, for messages and
	// port URLs; tunnel, for an ssh endpoint, is the connection the CLI
	// goes through (Host is then its local socket).
	ep     Endpoint
	tunnel *sshTunnel
}

func (c *Client) dialect() *Dialect {
	if c.Dialect == nil {
		return DockerDialect
	}
	return c.Dialect
}

// Cmd starts a docker command line: a control call, which a healthy engine
// answers at once (see runner.Control); exec and run say otherwise.
func (c *Client) Cmd(args ...string) *runner.Cmd {
	cmd := runner.New("docker").As(runner.Control)
	if c.Host != "" {
		cmd.Arg("--host", c.Host)
	}
	return cmd.Arg(args...)
}

// Run runs a docker command and translates the engine's well-known failures
// (see classify). Through an ssh tunnel, it makes sure the tunnel is up
// first, and when the master went away since (it leaves after being idle)
// it brings it up again and, if the command had no streams (or an output
// that starts over, as ps's does), runs it again: a call that found no
// engine made nothing.
func (c *Client) Run(ctx context.Context, cmd *runner.Cmd) (runner.Result, error) {
	if c.tunnel != nil {
		if err := c.tunnel.ensure(ctx); err != nil {
			return runner.Result{}, err
		}
	}
	res, err := c.R.Run(ctx, cmd)
	if c.tunnel != nil && err != nil && notReached(runner.Stderr(err)) {
		c.tunnel.reset()
		again, ok := cmd.Stdout.(interface{ restart() })
		if cmd.Stdin == nil && (cmd.Stdout == nil || ok) && cmd.Stderr == nil {
			if terr := c.tunnel.ensure(ctx); terr != nil {
				return res, terr
			}
			if ok {
				again.restart() // the output parsed as it comes (psRows)
			}
			res, err = c.R.Run(ctx, cmd)
		}
	}
	return res, c.classify(err)
}

// endpoint names the engine the CLI talks to, as the user named it.
func (c *Client) endpoint() string {
	ep := c.ep
	if ep.URL == "" && ep.Context == "" {
		ep = ResolveEndpoint(c.Host)
	}
	if s := ep.String(); s != "" {
		return s
	}
	return "the docker CLI's current context"
}

// classify maps a docker CLI failure to the neutral provider errors, keeping
// the original *runner.ExitError inside: an absent CLI, an engine that is
// down or does not answer becomes a *provider.UnreachableError; a missing,
// paused or stopped container ErrNotFound, ErrPaused or ErrStopped. Other
// failures pass through unchanged. Docker's exit codes do not tell these
// apart, so stderr decides, in either engine's wording.
func (c *Client) classify(err error) error {
	if err == nil {
		return nil
	}
	d := c.dialect()
	var ni *runner.NotInstalledError
	if errors.As(err, &ni) {
		return &provider.UnreachableError{Endpoint: c.endpoint(), Err: err,
			Reason: "the docker CLI is not installed: install Docker (https://docs.docker.com/engine/install/) and try again" + d.cliNote}
	}
	var te *runner.TimeoutError
	if errors.As(err, &te) {
		return &provider.UnreachableError{Endpoint: c.endpoint(), Err: err,
			Reason: fmt.Sprintf("%s is not answering: %s: no answer within %s, so litterbox stopped it. "+
				"Check the engine with `%s` and restart it if it hangs; if it is only slow (a loaded machine, a remote engine), raise %s",
				d.Name, te.Command, te.Limit, c.infoCommand(), te.Setting())}
	}
	stderr := runner.Stderr(err)
	lower := strings.ToLower(stderr)
	switch {
	case notReached(stderr) && c.remote():
		// Another host: whether its engine runs is not known from here,
		// only that it could not be reached; the CLI's words say why.
		return &provider.UnreachableError{Endpoint: c.endpoint(), Err: err,
			Reason: fmt.Sprintf("cannot reach the %s engine at %s: %s\nCheck it with `%s`", d.Name, c.endpoint(), oneLine(stderr), c.infoCommand())}
	case notReached(stderr):
		return &provider.UnreachableError{Endpoint: c.endpoint(), Err: err,
			Reason: fmt.Sprintf("%s is not running (%s): %s", d.Name, firstLine(stderr), d.startHint)}
	case strings.Contains(stderr, "Unknown runtime specified"):
		return &provider.Error{Kind: provider.ErrNoRuntime, Msg: daemonMessage(stderr), Err: err}
	case strings.Contains(lower, "no such container"):
		return &provider.Error{Kind: provider.ErrNotFound, Msg: daemonMessage(stderr), Err: err}
	case strings.Contains(lower, "is paused"):
		return &provider.Error{Kind: provider.ErrPaused, Msg: daemonMessage(stderr), Err: err}
	case daemonSays(lower, "is not running"),
		strings.Contains(lower, "can only create exec sessions on running containers"):
		return &provider.Error{Kind: provider.ErrStopped, Msg: daemonMessage(stderr), Err: err}
	}
	return err
}

// daemonSays says a line of stderr (lower-cased) is the engine's and holds
// phrase: a command run in a sandbox may say "is not running" of anything
// (a service of its own; the relay, of a stopped egress gateway), which is
// no word on the sandbox's state.
func daemonSays(lower, phrase string) bool {
	for _, l := range strings.Split(lower, "\n") {
		if strings.Contains(l, "error response from daemon") && strings.Contains(l, phrase) {
			return true
		}
	}
	return false
}

// daemonMessage is the engine's own words in a CLI's stderr: the rest of the
// line after "Error response from daemon:", else the first line.
func daemonMessage(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if _, msg, ok := strings.Cut(line, "Error response from daemon:"); ok {
			return strings.TrimSpace(msg)
		}
	}
	return firstLine(stderr)
}

// infoCommand is the command that checks the engine, as the user would type
// it.
func (c *Client) infoCommand() string {
	switch {
	case c.tunnel != nil:
		return "ssh " + c.tunnel.host + " docker info"
	case c.Host != "":
		return "docker --host " + c.Host + " info"
	}
	return "docker info"
}

// remote reports whether the engine is on another host (tcp to a host that is
// not this one, ssh), or behind a docker context litterbox could not read.
func (c *Client) remote() bool {
	ep := c.ep
	if ep.URL == "" && ep.Context == "" {
		ep = ResolveEndpoint(c.Host)
	}
	return !ep.Local()
}

// notReached reports whether a failed call's stderr says it never reached
// the engine (no engine at the address, no permission to its socket): then
// it made nothing, and there is nothing to undo.
func notReached(stderr string) bool {
	return strings.Contains(stderr, "Cannot connect to the Docker daemon") ||
		strings.Contains(stderr, "Is the docker daemon running") ||
		strings.Contains(stderr, "error during connect") ||
		strings.Contains(stderr, "permission denied while trying to connect to the Docker daemon")
}

// neverReached reports whether a failed call never got to the engine (no
// CLI, no engine at the address, no permission to its socket): it made
// nothing.
func neverReached(err error) bool {
	var ni *runner.NotInstalledError
	return errors.As(err, &ni) || notReached(runner.Stderr(err))
}

// refused reports whether a failed call never got to the engine, or got
// there and was refused: either way it made nothing.
func refused(err error) bool {
	return neverReached(err) || strings.Contains(runner.Stderr(err), "Error response from daemon")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// Pause freezes every process of a container. already reports a container
// that was paused before the call; that is not an error.
//
// runc gives up freezing a container whose processes keep changing (a
// process starting as it freezes, on a loaded machine: "unable to
// freeze"), thawing it again; its maintainers leave the retry to the
// caller (opencontainers/runc#4388). Pause tries again, pauseTries times
// in all, a little later each time.
func (c *Client) Pause(ctx context.Context, name string) (already bool, err error) {
	for i := range pauseTries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return false, err
			case <-time.After(time.Duration(i) * 100 * time.Millisecond):
			}
		}
		_, err = c.Run(ctx, c.Cmd("pause", name))
		if err == nil || !strings.Contains(runner.Stderr(err), "unable to freeze") {
			break
		}
	}
	if err != nil && strings.Contains(runner.Stderr(err), "is already paused") {
		return true, nil
	}
	return false, err
}

// pauseTries bounds the tries of a pause that runc could not freeze.
const pauseTries = 4

// Unpause thaws a paused container. already reports a container that was not
// paused, which both engines say of a stopped one too: the caller tells them
// apart.
func (c *Client) Unpause(ctx context.Context, name string) (already bool, err error) {
	_, err = c.Run(ctx, c.Cmd("unpause", name))
	if err != nil && strings.Contains(runner.Stderr(err), "is not paused") {
		return true, nil
	}
	return false, err
}

// Remove force-removes a container with its anonymous volumes. A container
// that is already gone is provider.ErrNotFound: `docker rm --force` exits 0
// in that case, so stderr decides.
//
// On Docker, removals take turns across the processes of this machine (per
// endpoint), each followed by a short pause. Docker before 20.10.27 (Debian
// 12's docker.io is 20.10.24) can deadlock when containers leave one network
// at once: the leave of one and the engine's asynchronous cleanup of
// another's endpoint take the network's lock and the engine's in opposite
// orders (moby/moby#46661, fixed by moby/libnetwork#2679), and from then on
// every network call hangs until dockerd is restarted. Sandboxes share one
// bridge, so concurrent deletes hit it; one at a time, with the cleanup of
// each done before the next leave, they cannot.
func (c *Client) Remove(ctx context.Context, name string) error {
	missing, err := c.RemoveAll(ctx, name)
	if err == nil && len(missing) > 0 {
		return provider.ErrNotFound
	}
	return err
}

// RemoveAll force-removes containers with their anonymous volumes in one
// engine call (`docker rm --force --volumes A B`), in one removal turn (see
// Remove); missing are those of names that were gone already. The engine
// removes them side by side: only containers that do not share a network
// may go in one call (a sandbox and its gateway do not: the sandbox has
// none).
func (c *Client) RemoveAll(ctx context.Context, names ...string) (missing []string, err error) {
	return c.removeAll(ctx, true, names)
}

// RemoveNetless is RemoveAll of containers with no network (--network
// none), which takes no removal turn: the engine's network code, which the
// turn guards, has nothing to do for them.
func (c *Client) RemoveNetless(ctx context.Context, names ...string) (missing []string, err error) {
	return c.removeAll(ctx, false, names)
}

// removeAll is RemoveAll, in a removal turn when turn is set.
func (c *Client) removeAll(ctx context.Context, turn bool, names []string) (missing []string, err error) {
	if len(names) == 0 {
		return nil, nil
	}
	if turn && c.dialect().SharedNetwork != "" {
		unlock := c.removalTurn()
		defer unlock()
	}
	res, err := c.Run(ctx, c.Cmd(append([]string{"rm", "--force", "--volumes"}, names...)...))
	if err != nil {
		return nil, err
	}
	// Docker says "No such container: NAME", Podman "no container with
	// name or ID "NAME" found: no such container" (of one name alone, the
	// words are enough).
	for _, line := range strings.Split(string(res.Stderr), "\n") {
		if !strings.Contains(strings.ToLower(line), "no such container") {
			continue
		}
		for _, n := range names {
			if (len(names) == 1 || strings.HasSuffix(strings.TrimSpace(line), ": "+n) || strings.Contains(line, `"`+n+`"`)) && !slices.Contains(missing, n) {
				missing = append(missing, n)
			}
		}
	}
	return missing, nil
}

// removalSettle is how long after a removal the next one waits: the
// engine's cleanup of the endpoint runs on after docker rm has returned.
const removalSettle = 30 * time.Millisecond

// removalTurn waits for this machine's turn to remove a container from the
// engine, and then, when a removal ended less than removalSettle ago (the
// lock file's mtime says when), for the rest of that; it returns what ends
// the turn. A removal alone waits for nothing. Without a runtime directory
// there is no turn to take.
func (c *Client) removalTurn() func() {
	path, err := c.removalLock()
	if err != nil {
		return func() {}
	}
	unlock, err := flock.Lock(path)
	if err != nil {
		return func() {}
	}
	if fi, err := os.Stat(path); err == nil {
		if wait := removalSettle - time.Since(fi.ModTime()); wait > 0 {
			time.Sleep(wait)
		}
	}
	return func() {
		now := time.Now()
		_ = os.Chtimes(path, now, now)
		unlock()
	}
}

// removalLock is the file whose lock is the removal turn on c's engine.
func (c *Client) removalLock() (string, error) {
	dir, err := runtimeDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(c.endpoint()))
	return filepath.Join(dir, "rm-"+hex.EncodeToString(sum[:8])+".lock"), nil
}

// NetworkCreateArgs builds the argv of `docker network create` for a bridge
// network with labels.
func NetworkCreateArgs(name string, labels map[string]string) []string {
	args := []string{"network", "create", "--driver", "bridge"}
	for _, kv := range SortedLabels(labels) {
		args = append(args, "--label", kv)
	}
	return append(args, name)
}

// NetworkCreate creates a bridge network with labels and returns its id.
func (c *Client) NetworkCreate(ctx context.Context, name string, labels map[string]string) (string, error) {
	res, err := c.Run(ctx, c.Cmd(NetworkCreateArgs(name, labels)...))
	return strings.TrimSpace(string(res.Stdout)), err
}

// NetworkRemove removes a network. A network that is already gone is not an
// error.
func (c *Client) NetworkRemove(ctx context.Context, name string) error {
	_, err := c.Run(ctx, c.Cmd("network", "rm", name))
	if err != nil && strings.Contains(runner.Stderr(err), "not found") {
		return nil
	}
	return err
}

// ExecSpec is one command to run inside a running container.
type ExecSpec struct {
	Container string
	Cmd       []string
	User      string
	Workdir   string
	Env       []string
	// Kind sets the host-side time limit: runner.Work (the zero value) for
	// a command whose work is bounded, runner.Stream for one the caller
	// bounds itself (a shell, bash with its own timeout).
	Kind        runner.Kind
	Stdin       io.Reader // when set, stdin is attached (-i)
	Interactive bool      // attach stdin even when Stdin is nil (the caller's own)
	TTY         bool
	Detach      bool
	Stdout      io.Writer
	Stderr      io.Writer
}

// ExecArgs builds the argv of `docker exec` for s.
func ExecArgs(s ExecSpec) []string {
	args := []string{"exec"}
	if s.Stdin != nil || s.Interactive {
		args = append(args, "--interactive")
	}
	if s.TTY {
		args = append(args, "--tty")
	}
	if s.Detach {
		args = append(args, "--detach")
	}
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	if s.Workdir != "" {
		args = append(args, "--workdir", s.Workdir)
	}
	for _, e := range s.Env {
		args = append(args, "--env", e)
	}
	args = append(args, s.Container)
	return append(args, s.Cmd...)
}

// Exec runs a command in a container. A non-zero exit of the command itself
// is a *runner.ExitError carrying its code; callers that treat exit codes as
// data use runner.ExitCode.
func (c *Client) Exec(ctx context.Context, s ExecSpec) (runner.Result, error) {
	cmd := c.Cmd(ExecArgs(s)...).As(s.Kind).WithStdin(s.Stdin)
	if s.Stdout != nil {
		cmd.WithStdout(s.Stdout)
	}
	if s.Stderr != nil {
		cmd.WithStderr(s.Stderr)
	}
	return c.Run(ctx, cmd)
}

// State returns the engine's state of a container (running, paused,
// exited...).
func (c *Client) State(ctx context.Context, name string) (string, error) {
	res, err := c.Run(ctx, c.Cmd("inspect", "--type", "container", "--format", "{{.State.Status}}", name))
	return strings.TrimSpace(string(res.Stdout)), err
}

// ContainerState is the state of container name, provider.StateNone when
// there is none.
func (c *Client) ContainerState(ctx context.Context, name string) (provider.State, error) {
	st, err := c.State(ctx, name)
	if errors.Is(err, provider.ErrNotFound) {
		return provider.StateNone, nil
	}
	if err != nil {
		return provider.StateNone, err
	}
	return state(st), nil
}

// Endpoint names the engine the CLI talks to, as the user named it.
func (c *Client) Endpoint() string { return c.endpoint() }
