// Package services runs a sandbox's long-running services: a supervisor
// (svc.sh, a busybox sh script) and the services' definitions, installed
// into the root-owned run dir, where the agent can read but not change
// them; the actions on a service (start, stop, restart, status, logs); and
// the host URLs of the sandbox's named ports. See docs/services.md.
package services

import (
	"archive/tar"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
)

// The supervisor (svc.sh) is a busybox sh script: busybox has no supervisord
// and no runit. It is installed with the service definitions by one root exec
// into RunDir, which the sandbox user can read but not change; see
// docs/services.md.
//
//go:embed svc.sh
var svcScript []byte

// Supervisor runs the service actions in c's sandboxes.
type Supervisor struct {
	*core.Common
}

// New is the supervisor of c's sandboxes' services.
func New(c *core.Common) *Supervisor { return &Supervisor{Common: c} }

// Paths of the supervisor inside the container.
const (
	svcPath     = api.RunDir + "/svc"
	svcStateDir = api.RunDir + "/state"
)

// serviceStates are the states svc.sh reports. Its state file is the
// agent's to write (see docs/services.md), so anything else is StateUnknown.
var serviceStates = []string{"not-started", "starting", "running", "backoff", "exited", "stopped", "dead", "unsupervised"}

// StateUnknown is the state of a service whose state file holds something
// the supervisor never writes: someone in the sandbox edited it.
const StateUnknown = "unknown"

// Do runs one action on a service of a running sandbox: start,
// stop, restart, status or logs (the last lines lines; 0 means
// DefaultLogLines). It runs as the sandbox user and never snapshots: what a
// service writes reaches the branch only with the next write, patch or bash.
func (sv *Supervisor) Do(ctx context.Context, h *api.Handle, name, action string, lines int) (*api.ServiceResult, error) {
	if !config.ValidServiceName(name) {
		return nil, core.NewError(api.ErrNoService, "%q is not a service name.", name)
	}
	args := []string{svcPath, action, name}
	switch action {
	case api.ActionStart, api.ActionStop, api.ActionRestart, api.ActionStatus:
	case api.ActionLogs:
		if lines <= 0 {
			lines = api.DefaultLogLines
		}
		args = append(args, strconv.Itoa(lines))
	default:
		return nil, fmt.Errorf("unknown service action %q (one of %s)", action, strings.Join(api.ServiceActions, ", "))
	}
	out := capWriter{max: maxSupervisorOutput}
	call := func() error {
		out.Reset()
		cmd, named := netgate.NameFirst(h.Repo, h.Slug, args)
		res, err := sv.Common.Exec(ctx, provider.ExecRequest{Ref: h.Ref, User: api.User, Cmd: cmd, Env: core.SandboxEnv(h.Slug)})
		if err == nil {
			named()
		}
		out.Write(res.Stdout)
		return err
	}
	err := call()
	if code := runner.ExitCode(err); code == 126 || code == 127 {
		// No supervisor in the container yet: install it on first use.
		installed, ierr := sv.InstallSaved(ctx, h)
		if ierr != nil {
			return nil, ierr
		}
		if installed {
			err = call()
		}
	}
	if err != nil {
		if errors.Is(err, provider.ErrPaused) {
			return nil, core.PausedError(h.Slug)
		}
		switch runner.ExitCode(err) {
		case 3:
			known := slices.DeleteFunc(strings.Fields(parseKV(out.String())["services"]), func(n string) bool { return !config.ValidServiceName(n) })
			if len(known) == 0 {
				return nil, core.NewError(api.ErrNoService, "Sandbox '%s' has no services. Define them under [services.NAME] in %s; they are set up when a sandbox is created.", h.Slug, api.ConfigFile)
			}
			return nil, core.NewError(api.ErrNoService, "Sandbox '%s' has no service %q; its services: %s.", h.Slug, name, strings.Join(known, ", "))
		case 126, 127:
			return nil, core.NewError(api.ErrNoService, "Sandbox '%s' has no services. Define them under [services.NAME] in %s; they are set up when a sandbox is created.", h.Slug, api.ConfigFile)
		}
		return nil, fmt.Errorf("%s service %q in sandbox %q: %w", action, name, h.Slug, err)
	}
	res := &api.ServiceResult{Sandbox: h.Slug, Action: action}
	text := out.String()
	if action == api.ActionLogs {
		head, log, _ := strings.Cut(text, "--- log\n")
		text, res.Log = head, log
		if out.cut {
			res.Log += fmt.Sprintf("\n[litterbox: the supervisor's answer passed %d bytes; the rest was dropped]\n", maxSupervisorOutput)
		}
	}
	kv := parseKV(text)
	res.Message = message(kv["message"])
	res.Status = parseStatus(name, kv)
	return res, nil
}

// maxSupervisorOutput is the most of one svc call's output the host keeps:
// svc.sh prints a few status lines (each value at most 64 bytes of a state
// file) and at most the last 1 MiB of the log (LOGMAX), so only a broken
// image's head or tail could pass it.
const maxSupervisorOutput = 1<<20 + 16<<10

// capWriter keeps the first max bytes written to it and drops the rest,
// noting that it did. It never fails a write, so the command runs to its
// end (and its exit code is known) whatever it prints.
type capWriter struct {
	bytes.Buffer
	max int
	cut bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.Len(); len(p) > room {
		w.Buffer.Write(p[:max(room, 0)])
		w.cut = true
		return len(p), nil
	}
	return w.Buffer.Write(p)
}

// Reset empties w for another call.
func (w *capWriter) Reset() {
	w.Buffer.Reset()
	w.cut = false
}

// parseKV reads key=value lines, values as they are; a later key wins.
func parseKV(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// parseStatus reads svc.sh's status lines for the service name. The
// values come from state files the agent can write, so each is checked: a
// state that is none of the supervisor's is StateUnknown, a number that is
// not plain digits in its range is left out.
func parseStatus(name string, kv map[string]string) api.ServiceStatus {
	st := api.ServiceStatus{Name: name, State: kv["state"]}
	if !slices.Contains(serviceStates, st.State) {
		st.State = StateUnknown
	}
	// Linux pids are at most 2^22 (PID_MAX_LIMIT).
	if pid, ok := parseCount(kv["pid"], 1<<22); ok && pid > 0 {
		st.PID = int(pid)
	}
	if n, ok := parseCount(kv["restarts"], 1<<31-1); ok {
		st.Restarts = int(n)
	}
	if code, ok := parseCount(kv["exit"], 255); ok {
		c := int(code)
		st.LastExitCode = &c
	}
	if sec, ok := parseCount(kv["started"], time.Now().Add(time.Minute).Unix()); ok && sec > 0 {
		st.StartedAt = time.Unix(sec, 0).UTC()
	}
	return st
}

// parseCount parses s as a number of plain decimal digits, with no sign,
// space or leading zero, of at most hi.
func parseCount(s string, hi int64) (int64, bool) {
	if s == "" || len(s) > 19 || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n <= hi
}

// message is svc.sh's message for the action ("started", "sent
// SIGHUP"): its own words, checked all the same, cut to a line and escaped.
func message(s string) string {
	if len(s) > 200 {
		s = s[:200]
	}
	return termtext.Escape(s)
}

// servicesFile keeps, in a sandbox's host-side state directory, the archive
// of its supervisor and service definitions, made from the configuration at
// create. It is installed into the container at the first service action (or
// at create when a service starts automatically), so a create that only
// defines services costs no extra exec.
const servicesFile = "services.tar"

// Save writes cfg's services archive to the sandbox's state
// directory, or removes a stale one (from an earlier sandbox of that name)
// when cfg has no services.
func Save(r *api.Repo, slug string, cfg *config.Config) ([]byte, error) {
	path := filepath.Join(r.StateDir(slug), servicesFile)
	if len(cfg.Services) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, nil
	}
	archive, err := servicesArchive(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.StateDir(slug), 0o755); err != nil {
		return nil, err
	}
	return archive, os.WriteFile(path, archive, 0o644)
}

// InstallScript unpacks the archive on stdin into RunDir. Files are renamed
// into place, never rewritten: a supervisor already running svc keeps
// reading the file it opened, so two installs racing cannot corrupt it.
// busybox tar does not restore the sticky bit under a umask, hence chmod.
const InstallScript = `set -e
t=$(mktemp -d ` + api.RunDir + `/.install.XXXXXX)
tar -x -f - -C "$t"
mkdir -p ` + api.RunDir + `/services ` + svcStateDir + `
chmod 1777 ` + svcStateDir + `
for f in "$t"/services/*; do mv -f "$f" ` + api.RunDir + `/services/; done
mv -f "$t/svc" ` + svcPath + `
rm -rf "$t"`

// Install puts the supervisor and the service definitions into the
// container's RunDir with one root exec of tar. Root is needed only because
// RunDir is root-owned, which is what keeps the definitions out of the agent's
// reach; the services themselves run as the sandbox user.
func (sv *Supervisor) Install(ctx context.Context, ref provider.Ref, archive []byte) error {
	_, err := sv.Common.Exec(ctx, provider.ExecRequest{
		Ref: ref, User: "0:0",
		Cmd:   []string{"sh", "-c", InstallScript},
		Stdin: bytes.NewReader(archive),
	})
	return err
}

// InstallSaved installs the archive Save kept for h. ok is false when
// the sandbox has no services.
func (sv *Supervisor) InstallSaved(ctx context.Context, h *api.Handle) (ok bool, err error) {
	archive, err := os.ReadFile(filepath.Join(h.Repo.StateDir(h.Slug), servicesFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := sv.Install(ctx, h.Ref, archive); err != nil {
		return false, fmt.Errorf("install the services of sandbox %q: %w", h.Slug, err)
	}
	return true, nil
}

// servicesArchive is the tar Install extracts into RunDir.
func servicesArchive(cfg *config.Config) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	add := func(name string, mode int64, body []byte) error {
		h := &tar.Header{Name: name, Mode: mode, Size: int64(len(body)), ModTime: now, Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := add("svc", 0o755, svcScript); err != nil {
		return nil, err
	}
	if err := add("services/", 0o755, nil); err != nil {
		return nil, err
	}
	if err := add("state/", 0o1777, nil); err != nil {
		return nil, err
	}
	for _, sc := range cfg.Services {
		if err := add("services/"+sc.Name+".spec", 0o644, []byte(serviceSpec(sc))); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// serviceSpec is the sh file svc.sh sources to learn one service. Every value
// is quoted, so nothing in the configuration is interpreted by the shell.
func serviceSpec(sc config.Service) string {
	var b strings.Builder
	q := func(s string) string { return runner.Quote(s) }
	fmt.Fprintf(&b, "# %s: written by litterbox at create, from %s\n", sc.Name, api.ConfigFile)
	fmt.Fprintf(&b, "STOP=%s\nRESTART_SIG=%s\nTIMEOUT=%d\nPOLICY=%s\nWORKDIR=%s\nCMDLINE=%s\n",
		q(sc.StopSignal), q(sc.RestartSignal), sc.StopTimeout, q(sc.Restart), q(sc.Workdir), q(runner.Quote(sc.Command...)))
	b.WriteString("service_exec() {\n")
	keys := make([]string, 0, len(sc.Env))
	for k := range sc.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\texport %s\n", q(k+"="+sc.Env[k]))
	}
	fmt.Fprintf(&b, "\texec %s\n}\n", runner.Quote(sc.Command...))
	return b.String()
}

// Autostart starts the services configured with Autostart, with one exec,
// sandbox slug's of r: the first command of a sandbox claimed from the
// warm pool, whose services may meet a refusal, which names it
// (netgate.NameFirst).
func (sv *Supervisor) Autostart(ctx context.Context, r *api.Repo, ref provider.Ref, slug string, cfg *config.Config) ([]api.ServiceStatus, error) {
	args := []string{svcPath, api.ActionStart}
	for _, sc := range cfg.Services {
		if sc.Autostart {
			args = append(args, sc.Name)
		}
	}
	if len(args) == 2 {
		return nil, nil
	}
	cmd, named := netgate.NameFirst(r, slug, args)
	res, err := sv.Common.Exec(ctx, provider.ExecRequest{Ref: ref, User: api.User, Cmd: cmd, Env: core.SandboxEnv(slug)})
	if err != nil {
		return nil, err
	}
	named()
	out := capWriter{max: maxSupervisorOutput}
	out.Write(res.Stdout)
	// start prints one block per service, in the order asked, each opening
	// with a message= line.
	var blocks []string
	for _, l := range strings.SplitAfter(out.String(), "\n") {
		if strings.HasPrefix(l, "message=") {
			blocks = append(blocks, "")
		}
		if len(blocks) > 0 {
			blocks[len(blocks)-1] += l
		}
	}
	var sts []api.ServiceStatus
	for i, block := range blocks[:min(len(blocks), len(args)-2)] {
		sts = append(sts, parseStatus(args[i+2], parseKV(block)))
	}
	return sts, nil
}

// restartRunningSh restarts the services that are running, and prints
// their names.
const restartRunningSh = `cd ` + api.RunDir + `/services 2>/dev/null || exit 0
for f in *.spec; do [ -e "$f" ] || continue; n=${f%.spec}
  case "$(cat ` + api.RunDir + `/state/$n/state 2>/dev/null)" in running|starting|backoff) ;; *) continue;; esac
  ` + svcPath + ` restart "$n" >/dev/null && echo "$n"
done`

// RestartRunning restarts the services of h that are running (after a
// rewind, so that they serve the rewound files) and names them.
func (sv *Supervisor) RestartRunning(ctx context.Context, h *api.Handle) ([]string, error) {
	out, err := sv.Exec(ctx, provider.ExecRequest{Ref: h.Ref, User: api.User, Cmd: []string{"sh", "-c", restartRunningSh}})
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out.Stdout)), nil
}
