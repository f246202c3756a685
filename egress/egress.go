// Package egress is the host's side of a sandbox's egress gateway (package
// gateway): the specs of the two containers, how the gateway's program gets
// into them, how the host sets the policy and collects the record of
// connections, and where it keeps that record. docs/egress.md is the design.
//
// On Docker and Podman a confined sandbox has no network at all (network
// "none": its loopback only). Beside it runs its gateway, a hardened
// container on the network all gateways share, which is the only thing
// that reaches out. The two share a small in-memory volume: the gateway
// listens there on unix sockets, and a relay inside the sandbox (the same
// program, started by the sandbox's own main process once the gateway's
// install has put it on the volume) hands the sandbox's connections to
// 127.0.0.1:3128 (the proxy) to the gateway, carries its queries to
// 127.0.0.1:53 (the resolver), and serves the gateway's published ports on
// the sandbox's 127.0.0.1. Everything on the sandbox's side, the relay and
// the volume included, is the agent's to use or break: the gateway judges
// whatever comes, and runs its own copy of the program, from a directory of
// its own. Nothing depends on the host's firewall, so it holds on a remote
// engine, or one whose firewall is off.
package egress

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/gateway/policy"
	"github.com/litterbox-dev/litterbox/provider"
)

const (
	// Dir is where the shared volume is mounted, in both containers.
	Dir = "/run/litterbox-gw"
	// ProgramDir is the gateway's own in-memory directory, which holds the
	// program it runs: not the shared volume, which the sandbox can write.
	ProgramDir = "/run/gw"
	// UID is the gateway's user: no sandbox user's, so nothing in the
	// sandbox can signal it or write its directory. It shares the sandbox
	// user's group, which owns the volume.
	UID = 65532
	// ProxyAddr is where the sandbox's clients find the proxy.
	ProxyAddr = "127.0.0.1:3128"
	// LabelGatewayOf marks a gateway's container and volume with the name
	// of the sandbox container they serve.
	LabelGatewayOf = "dev.litterbox.gateway-of"
)

// Name is the name of the gateway container, and of the shared volume, of
// the sandbox container named sandbox (volumes and containers are named
// apart, so one name serves both).
func Name(sandbox string) string { return sandbox + "-gw" }

// Env is what every command in a confined sandbox needs: the proxy, in the
// spellings clients read (curl reads only the lower-case http_proxy, Go and
// Python both), and the sandbox's own loopback left out of it.
func Env() []string { return proxyEnv(ProxyAddr) }

// proxyEnv is Env for a proxy at addr.
func proxyEnv(addr string) []string {
	url := "http://" + addr
	noProxy := "localhost,127.0.0.1,::1"
	return []string{
		"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	}
}

// Plan is what one confined sandbox is made of on Docker or Podman.
type Plan struct {
	// Sandbox is the sandbox's spec, confined: no network, the shared
	// volume, the relay's resolver, the proxy in its environment, and no
	// ports of its own.
	Sandbox provider.Spec
	// Gateway is the gateway container's spec: on the network all
	// gateways share (provider.NetworkShared: each refuses the networks it
	// is on, so none reaches another), publishing the sandbox's named
	// ports.
	Gateway provider.Spec
	// Volume is the shared volume, made first.
	Volume provider.SharedVolume
	// Ports are the sandbox's named ports the relay serves.
	Ports []int
	// serve is the gateway program's argv.
	serve []string
}

// ImageProgram is where a gateway image (BuildImage) holds the program.
const ImageProgram = "/usr/local/bin/litterbox-gateway"

// MountOn has both containers mount the shared volume as engine g mounts
// it: made by the first mount where g can (Docker: atMount is true), else
// to be made by g's CreateVolume first (Podman).
func (p *Plan) MountOn(g provider.Gateways) (atMount bool) {
	mount, atMount := g.MountShared(p.Volume, Dir)
	p.Gateway.Volumes[0] = mount
	p.Sandbox.Volumes[len(p.Sandbox.Volumes)-1] = mount
	return atMount
}

// FromImage makes the plan's gateway run from image, a gateway image made
// by BuildImage: its main process copies the relay from the image onto the
// volume and becomes the image's program, which the gateway's user cannot
// change (root's, on a read-only root), so that no exec installs it, and a
// gateway the engine restarts (the volume is in memory, and empty again)
// puts the relay there again by itself. Its own directory gets only a link
// to the program, where ctl runs it: the program is not copied, one 8 MB
// copy fewer before the relay and the gateway listen.
func (p *Plan) FromImage(image string) {
	p.Gateway.Image, p.Gateway.NoPull = image, true
	script := "set -e\n" + relayScript(ImageProgram) + "\nln -sf " + ImageProgram + " " + ProgramDir + "/litterbox-gateway\nexec " + ImageProgram + ` "$@"`
	p.Gateway.Cmd = append([]string{"sh", "-c", script, "sh"}, p.serve...)
}

// Confine plans sandbox s behind a gateway run from image (busybox will
// do: the gateway needs only sh until its program is installed) with policy
// p at its start. labels go on the gateway and the volume, with
// LabelGatewayOf.
func Confine(s provider.Spec, image string, p policy.Policy, labels map[string]string) (Plan, error) {
	gw, pj, gid, err := gatewaySpec(s, image, p, labels)
	if err != nil {
		return Plan{}, err
	}
	// Sticky, as /tmp is: the sandbox's group can make files there but
	// not remove or replace the gateway's (its refusal log, the relay).
	vol := provider.SharedVolume{Name: gw.Name, Labels: gw.Labels, UID: UID, GID: gid, Mode: 0o1770, Size: 32 << 20}
	mount := provider.Volume{Name: gw.Name, Path: Dir}

	var ports []int
	serve := []string{"serve", "-dir", Dir, "-policy", pj}
	relay := Dir + "/litterbox-relay relay -dir " + Dir + " -proxy " + ProxyAddr + " -dns 127.0.0.1:53"
	for _, ps := range s.Ports {
		ports = append(ports, ps.Port)
		serve = append(serve, "-port", strconv.Itoa(ps.Port))
		relay += " -port " + strconv.Itoa(ps.Port)
	}
	gw.Network = provider.NetworkShared
	gw.Ports, gw.HostPorts = s.Ports, s.HostPorts
	gw.Volumes = []provider.Volume{mount}
	gw.Cmd = append(gw.Cmd, serve...)

	sb := s
	sb.Network = provider.NetworkNone
	sb.Ports, sb.HostPorts = nil, provider.PortRange{}
	sb.Volumes = append(append([]provider.Volume(nil), s.Volumes...), mount)
	sb.DNS = []string{"127.0.0.1"}
	sb.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
	for k, v := range s.Sysctls {
		sb.Sysctls[k] = v
	}
	sb.Env = append(append([]string(nil), s.Env...), Env()...)
	// The sandbox's main process starts the relay once the gateway's
	// install puts it on the volume (again, a second later, should it
	// end), then becomes what it was: no exec on create's path, and a
	// sandbox that restarts (its engine did) starts its relay by itself.
	// relay.ready goes first, and whenever the relay ends: a volume its
	// gateway kept mounted (the sandbox alone restarted) holds the last
	// relay's, which WaitReady would take for this one's.
	if len(s.Cmd) > 0 {
		ready := `rm -f ` + Dir + `/` + control.ReadyFile
		start := `(` + ready + `; until [ -x ` + Dir + `/litterbox-relay ]; do sleep 0.01; done; while :; do ` + relay + `; ` + ready + `; sleep 1; done) & exec "$@"`
		sb.Cmd = append([]string{"sh", "-c", start, "sh"}, s.Cmd...)
	}
	return Plan{Sandbox: sb, Gateway: gw, Volume: vol, Ports: ports, serve: serve}, nil
}

// Ports a linked gateway serves (ConfineLinked): the proxy, and the
// resolver (UDP and TCP).
const (
	LinkedProxyPort = 3128
	LinkedDNSPort   = 53
)

// ConfineLinked plans sandbox s behind a gateway on an engine that links
// the two by network (provider.GatewayLinks: Kubernetes). The sandbox
// keeps its network, which the engine narrows to its gateway; its proxy is
// the gateway at host (the name the engine gives it), and its resolver the
// gateway's. The gateway, run from image (it needs only sh), waits until
// Install puts its program in its own directory, then serves the proxy
// and the resolver on its own address: no volume, no relay. The sandbox
// keeps its named ports: the engine forwards them to it directly. A
// gateway whose policy names no sandbox (a warm pool's) reads the name its
// refusals give from nameFile (provider.GatewayLinks.GatewayNameFile).
func ConfineLinked(s provider.Spec, image string, p policy.Policy, labels map[string]string, host, nameFile string) (Plan, error) {
	gw, pj, _, err := gatewaySpec(s, image, p, labels)
	if err != nil {
		return Plan{}, err
	}
	link := &provider.Link{Sandbox: s.Name, Gateway: gw.Name, TCP: []int{LinkedProxyPort, LinkedDNSPort}, UDP: []int{LinkedDNSPort}, Closed: p.Engine}
	serve := []string{"serve", "-dir", ProgramDir, "-listen", ":" + strconv.Itoa(LinkedProxyPort), "-dns", ":" + strconv.Itoa(LinkedDNSPort), "-name-file", nameFile, "-policy", pj}
	gw.Network = provider.NetworkIsolated
	gw.Link = link
	// Its user binds port 53.
	gw.Sysctls = map[string]string{"net.ipv4.ip_unprivileged_port_start": "0"}
	gw.Cmd = append(gw.Cmd, serve...)

	sb := s
	sb.Link = link
	sb.Env = append(append([]string(nil), s.Env...), proxyEnv(net.JoinHostPort(host, strconv.Itoa(LinkedProxyPort)))...)
	return Plan{Sandbox: sb, Gateway: gw, serve: serve}, nil
}

// Linked says the plan's two halves are linked by network
// (ConfineLinked), not by a shared volume.
func (p *Plan) Linked() bool { return p.Gateway.Link != nil }

// NameGateway gives the plan's gateway (and its volume, or its link) the
// name name.
func (p *Plan) NameGateway(name string) {
	p.Volume.Name, p.Gateway.Name = name, name
	if p.Gateway.Link != nil {
		p.Gateway.Link.Gateway = name
	}
}

// gatewaySpec is what a gateway for sandbox s is on every engine: its
// user (the gateway's, in the sandbox user's group gid), its hardening and
// bounds, its own in-memory directory for its program, its labels, and a
// main process that waits there for the program and becomes it (its argv
// goes after Cmd). pj is policy p as its -policy argument.
func gatewaySpec(s provider.Spec, image string, p policy.Policy, labels map[string]string) (gw provider.Spec, pj string, gid int, err error) {
	b, err := json.Marshal(p)
	if err != nil {
		return gw, "", 0, err
	}
	if _, err := policy.ParsePolicy(b); err != nil {
		return gw, "", 0, err
	}
	if gid, err = groupOf(s.User); err != nil {
		return gw, "", 0, err
	}
	l := map[string]string{LabelGatewayOf: s.Name}
	for k, v := range labels {
		l[k] = v
	}
	gwUser := fmt.Sprintf("%d:%d", UID, gid)
	// Until the host installs the program, the gateway's main process
	// waits; then the program takes its place (and its pid, 1).
	wait := `until [ -x ` + ProgramDir + `/litterbox-gateway ]; do sleep 0.05; done; exec ` + ProgramDir + `/litterbox-gateway "$@"`
	return provider.Spec{
		Name:            Name(s.Name),
		Image:           image,
		Labels:          l,
		User:            gwUser,
		ReadOnlyRoot:    true,
		DropCaps:        true,
		NoNewPrivileges: true,
		NoHealthcheck:   true,
		Tmpfs:           []provider.Tmpfs{{Path: ProgramDir, Size: 16 << 20, Mode: 0o700, Owner: gwUser, Exec: true}},
		// One CPU: a sandbox that keeps its gateway busy (a flood of
		// refused connections, TLS it terminates) takes no more of the
		// host's; the log's bound keeps what it writes off the disk.
		Limits: provider.Limits{Pids: 256, Memory: 256 << 20, CPUs: 1, Log: provider.DefaultLog},
		Cmd:    []string{"sh", "-c", wait, "sh"},
	}, string(b), gid, nil
}

// groupOf reads the group of a uid:gid; a sandbox with no user set runs
// as the image's, which litterbox never does.
func groupOf(user string) (int, error) {
	_, g, ok := strings.Cut(user, ":")
	if !ok {
		g = user
	}
	gid, err := strconv.Atoi(g)
	if err != nil || gid < 0 {
		return 0, fmt.Errorf("confine a sandbox whose user is %q: want uid:gid", user)
	}
	return gid, nil
}

// Execer runs commands in containers: a provider does.
type Execer interface {
	Exec(ctx context.Context, req provider.ExecRequest) (provider.ExecResult, error)
}

// installScript puts the program (which from reads: stdin) in the
// gateway's own directory, and for the relay on the volume: each under a
// temporary name, then renamed, so that nothing runs half of it.
func installScript(from string) string {
	return programScript(from) + "\n" + relayScript(`"$t"`) + `
mv -f "$t" ` + ProgramDir + `/litterbox-gateway`
}

// relayScript copies the program at src (a shell word) onto the volume as
// the relay, under a temporary name, then renamed. The volume is the
// sandbox's to fill: when the relay cannot be copied there, the one there
// stays (the sandbox's relay runs already, when only the gateway
// restarted) and the gateway still starts, saying so on its log; it never
// fails for it. On the volume, which the sandbox can write, mktemp makes a
// new file and mv replaces a name, never following what the sandbox may
// have put there.
func relayScript(src string) string {
	return `r=
if r=$(mktemp ` + Dir + `/.relay.XXXXXX) && cp ` + src + ` "$r" && chmod 0755 "$r" && mv -f "$r" ` + Dir + `/litterbox-relay; then :; else
  rm -f "$r"
  if [ -x ` + Dir + `/litterbox-relay ]; then
    echo "litterbox-gateway: could not copy the relay to the shared volume (full?): the sandbox keeps the one there" >&2
  else
    echo "litterbox-gateway: could not copy the relay to the shared volume ` + Dir + `: it is full of the sandbox's own files, and the sandbox reaches nothing until they are removed" >&2
  fi
fi`
}

// programScript puts the program (which from reads) in the gateway's own
// directory under a temporary name, "$t", made executable.
func programScript(from string) string {
	return `set -e
t=$(mktemp ` + ProgramDir + `/.inst.XXXXXX)
` + from + ` >"$t"
chmod 0755 "$t"`
}

// Install copies the gateway's program (gatewaybin's, for the engine's
// platform) into its running container, whose main process then starts
// it, and onto the volume, where the sandbox's main process finds the
// relay.
func Install(ctx context.Context, e Execer, gw provider.Ref, program io.Reader) error {
	return install(ctx, e, gw, program, installScript("cat"))
}

// InstallLinked copies the gateway's program into its running container
// (a linked gateway's: ConfineLinked), whose main process then starts it.
// There is no volume, and no relay.
func InstallLinked(ctx context.Context, e Execer, gw provider.Ref, program io.Reader) error {
	return install(ctx, e, gw, program, linkedScript)
}

// InstallLinkedReady is InstallLinked and then Ready, in the same exec:
// for a linked gateway that is given no secret (a warm pool's, whose
// policy is in its argv), one exec less to make it. Once the program is
// in place, the gateway's main process starts it; `ctl ready` is tried
// again while the gateway does not answer yet (as ctlWaiting does), until
// ctlReadyWait has passed.
func InstallLinkedReady(ctx context.Context, e Execer, gw provider.Ref, program io.Reader) error {
	tries := int(ctlReadyWait / (50 * time.Millisecond))
	return install(ctx, e, gw, program, linkedScript+`
i=0
until o=$(`+ProgramDir+`/litterbox-gateway ctl ready 2>&1); do
  case $o in *"`+notAnswering+`"*) ;; *) echo "$o" >&2; exit 1 ;; esac
  i=$((i+1))
  if [ $i -ge `+strconv.Itoa(tries)+` ]; then echo "$o" >&2; exit 1; fi
  sleep 0.05
done`)
}

// linkedScript puts the program in a linked gateway's own directory
// (InstallLinked).
var linkedScript = programScript("cat") + "\nmv -f \"$t\" " + ProgramDir + "/litterbox-gateway"

func install(ctx context.Context, e Execer, gw provider.Ref, program io.Reader, script string) error {
	res, err := e.Exec(ctx, provider.ExecRequest{Ref: gw, Stdin: program, Cmd: []string{"sh", "-c", script}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err != nil {
		return fmt.Errorf("install the egress gateway: %w", err)
	}
	return nil
}

// BuildImage makes image tag on engine g: base (any image: busybox) with
// program at ImageProgram, owned by root and read-only to every other user,
// so the gateway's user cannot change it. It runs once per engine and
// program (the tag names the program): a build whose context (a Dockerfile
// and the program) only copies the program in. The image carries no label
// of litterbox's: a gateway takes its labels from its own run, not from
// what an image made for another sandbox said.
func BuildImage(ctx context.Context, g provider.Gateways, base, tag string, program []byte) error {
	const name = "litterbox-gateway"
	dockerfile := []byte("FROM " + base + "\nCOPY " + name + " " + ImageProgram + "\n")
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"Dockerfile", 0o644, dockerfile}, {name, 0o755, program}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := g.BuildImage(ctx, tag, "Dockerfile", &tb); err != nil {
		return fmt.Errorf("make the egress gateway's image from %s: %w", base, err)
	}
	return nil
}

// relayUp is a shell test, true once the sandbox's relay listens (it made
// relay.ready) and so does its gateway (dns.sock, which the gateway makes
// after proxy.sock): a client's connection to 127.0.0.1:3128 then reaches
// the gateway.
const relayUp = `[ -e ` + Dir + `/` + control.ReadyFile + ` ] && [ -S ` + Dir + `/` + control.DNSSocket + ` ]`

// WaitRelay is a shell command that waits, up to 30 s, until the sandbox's
// relay and its gateway listen.
const WaitRelay = `i=0; until ` + relayUp + ` || [ $i -ge 3000 ]; do sleep 0.01; i=$((i+1)); done`

// WaitReady is WaitRelay, and fails (exit NotReadyExit, NotReadyMarker on
// stderr) when the two did not come up: what create runs before the setup
// command, in the exec of the copy, so that the sandbox is ready only once
// its first client finds its way out. It costs nothing when they listen
// already.
const WaitReady = WaitRelay + `; ` + relayUp + ` || { echo "` + NotReadyMarker + `" >&2; exit ` + NotReadyExit + `; }`

// WriteName is a shell command that writes the sandbox's name
// ($LITTERBOX_SANDBOX) where its gateway reads it (control.NameFile): what
// the setup of a sandbox claimed from the warm pool runs, since its
// gateway's policy, made before the claim, names no sandbox. A name it
// cannot write costs only that name in a refusal's text.
const WriteName = `{ printf '%s\n' "$LITTERBOX_SANDBOX" >` + Dir + `/` + control.NameFile + `; } 2>/dev/null || :`

// NotReadyMarker and NotReadyExit are how WaitReady says the way out did
// not come up.
const (
	NotReadyMarker = "litterbox: the egress relay or gateway does not listen"
	NotReadyExit   = "97"
)

// NotReady says stderr, of an exec that ran WaitReady, is its saying the
// way out did not come up.
func NotReady(stderr string) bool { return strings.Contains(stderr, NotReadyMarker) }

// ctlReadyWait is how long ctl waits for a gateway that has just started.
const ctlReadyWait = 20 * time.Second

// starting says a ctl exec found the gateway not ready yet: its program
// not installed (nothing to run: 126, 127), or not listening on its
// control socket (its own words, control.Ctl's).
func starting(res provider.ExecResult) bool {
	return res.ExitCode == 126 || res.ExitCode == 127 ||
		res.ExitCode != 0 && strings.Contains(string(res.Stderr), notAnswering)
}

// notAnswering is what `litterbox-gateway ctl` says of a gateway that
// does not listen on its control socket yet (control.Ctl).
const notAnswering = "does not answer on its control socket"

// ctl runs `litterbox-gateway ctl args...` in the gateway's container.
//
// A gateway that has just started (create, resume) may not be ready for
// it: its main process installs the program, which then listens on the
// control socket. Until ctlReadyWait has passed, an exec that found it
// starting is tried again, its stdin whole; every call waits so, and none
// needs a wait of its own.
func ctl(ctx context.Context, e Execer, gw provider.Ref, stdin []byte, args ...string) ([]byte, error) {
	return ctlWaiting(ctx, e, gw, stdin, false, args...)
}

// ctlWaiting is ctl; with created set, a gateway container the engine has
// made but not started yet (a loaded engine starts it late) is waited for
// as a starting one is.
func ctlWaiting(ctx context.Context, e Execer, gw provider.Ref, stdin []byte, created bool, args ...string) ([]byte, error) {
	var (
		res provider.ExecResult
		err error
	)
	deadline := time.Now().Add(ctlReadyWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		req := provider.ExecRequest{Ref: gw, Cmd: append([]string{ProgramDir + "/litterbox-gateway", "ctl"}, args...)}
		if stdin != nil {
			req.Stdin = bytes.NewReader(stdin)
		}
		res, err = e.Exec(ctx, req)
		late := created && errors.Is(err, provider.ErrStopped)
		if (err != nil || !starting(res)) && !late || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("%s", strings.TrimSpace(string(res.Stderr)))
	}
	if err != nil {
		return nil, fmt.Errorf("egress gateway %s: %w", args[0], err)
	}
	return res.Stdout, nil
}

// SetPolicy makes p the gateway's policy: from its next connection on, and
// open tunnels that p refuses are cut.
func SetPolicy(ctx context.Context, e Execer, gw provider.Ref, p policy.Policy) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = ctl(ctx, e, gw, b, "set")
	return err
}

// GetPolicy is the policy in force in the gateway.
func GetPolicy(ctx context.Context, e Execer, gw provider.Ref) (policy.Policy, error) {
	out, err := ctl(ctx, e, gw, nil, "get")
	if err != nil {
		return policy.Policy{}, err
	}
	var p policy.Policy
	if err := json.Unmarshal(out, &p); err != nil {
		return policy.Policy{}, fmt.Errorf("egress gateway get: %w", err)
	}
	return p, nil
}

// Collect fetches the records after cursor c (up to 4096: call again while
// the batch's Last is beyond what it holds).
func Collect(ctx context.Context, e Execer, gw provider.Ref, c Cursor) (control.Batch, error) {
	out, err := ctl(ctx, e, gw, nil, "log", "-boot", c.Boot, "-after", strconv.FormatUint(c.Seq, 10))
	if err != nil {
		return control.Batch{}, err
	}
	var b control.Batch
	if err := json.Unmarshal(out, &b); err != nil {
		return control.Batch{}, fmt.Errorf("egress gateway log: %w", err)
	}
	return b, nil
}

// Refused fetches the refusals of the last within (a duration measured by
// the host, so the two clocks need not agree): an MCP bash call asks for
// its own length, plus a margin, when its run left no mark.
func Refused(ctx context.Context, e Execer, gw provider.Ref, within string) ([]control.Record, error) {
	return refused(ctx, e, gw, "-within", within)
}

// RefusedAfter fetches the refusals after mark m (where a run found the
// gateway's refusals before its command), whatever the clocks say.
func RefusedAfter(ctx context.Context, e Execer, gw provider.Ref, m control.RefusalMark) ([]control.Record, error) {
	return refused(ctx, e, gw, "-boot", m.Boot, "-after", strconv.FormatUint(m.After, 10))
}

func refused(ctx context.Context, e Execer, gw provider.Ref, args ...string) ([]control.Record, error) {
	out, err := ctl(ctx, e, gw, nil, append([]string{"refused"}, args...)...)
	if err != nil {
		return nil, err
	}
	var rs []control.Record
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Errorf("egress gateway refused: %w", err)
	}
	return rs, nil
}

// Ready tells the gateway it holds what it should, the policy and the
// secrets the user set: it opens its sockets to the sandbox then (see
// gateway's serve), and the sandbox's relay reaches it. Every start of a
// gateway, a restart by the engine included, waits for it: a gateway
// started outside litterbox leaves its sandbox cut off until `litterbox
// resume` gives it its policy and secrets again. A gateway of an older
// litterbox, which has no such wait, takes it as done.
func Ready(ctx context.Context, e Execer, gw provider.Ref) error {
	_, err := ctlWaiting(ctx, e, gw, nil, true, "ready")
	if err != nil && strings.Contains(err.Error(), `unknown op "ready"`) {
		return nil
	}
	return err
}

// IsReady says whether the gateway was told Ready in its current run: a
// gateway the engine started again by itself was not. An older
// litterbox's gateway always is.
func IsReady(ctx context.Context, e Execer, gw provider.Ref) (bool, error) {
	out, err := ctl(ctx, e, gw, nil, "state")
	if err != nil {
		if strings.Contains(err.Error(), `unknown op "state"`) {
			return true, nil
		}
		return false, err
	}
	var st control.State
	if err := json.Unmarshal(out, &st); err != nil {
		return false, fmt.Errorf("egress gateway state: %w", err)
	}
	return st.Ready, nil
}
