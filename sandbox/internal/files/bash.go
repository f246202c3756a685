package files

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
)

// Bash runs a shell command for an agent and snapshots what it changed, in
// one exec (see Run), and marks timeouts in the text so an agent
// cannot miss them. The snapshot's error, when the command ran, comes with
// its result rather than instead of it. When ctx ends the command is
// stopped, and what it changed is still committed (see Run).
func (f *Files) Bash(ctx context.Context, h *api.Handle, command string, o api.BashOptions) (*api.BashResult, *api.SnapshotResult, error) {
	if strings.TrimSpace(command) == "" {
		return nil, nil, core.NewError(api.ErrBadArgument, "give a command to run")
	}
	if err := core.CheckLen("command", command, api.MaxCommandBytes); err != nil {
		return nil, nil, err
	}
	if i := strings.IndexByte(command, 0); i >= 0 {
		// An argument of exec is a C string: the shell could not even
		// start, and Go's error would pass for a missing workdir.
		return nil, nil, core.NewError(api.ErrBadArgument, "The command holds a NUL byte (at byte %d), which a shell cannot run; nothing was run or changed. Remove it; to write a NUL byte, use printf '\\0' in the command.", i)
	}
	wd, err := core.ContainerPath(o.Workdir)
	if err != nil {
		return nil, nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = api.DefaultRunTimeout
	}
	if timeout > api.MaxBashTimeout {
		return nil, nil, core.NewError(api.ErrBadArgument, "timeout %s is over the limit of %s", timeout, api.MaxBashTimeout)
	}
	spec := recording.RunSpec{Command: command, Workdir: wd, Timeout: timeout, Cap: o.OutputCap, KeepOutput: true, Message: o.Message}
	var gw *netgate.NetFile
	if h.Repo != nil {
		if rec, ok, _ := netgate.Read(h.Repo.Git.CommonDir, h.Slug); ok {
			// The run reads what the gateway refused during it.
			gw = rec
			spec.Refusals, spec.RefusalsUID, spec.RefusalsVia = f.gate.Refusals()
		}
	}
	start := time.Now()
	run, snap, err := f.rec.Run(ctx, h, spec)
	if run == nil {
		if err == nil {
			err = errors.New("the command sent no result")
		}
		return nil, nil, err
	}
	if run.ExitCode == 127 && run.Stdout == "" && strings.HasPrefix(run.Stderr, "fork/exec /bin/sh:") {
		// The shell could not start: in a busybox sandbox that means the
		// workdir is missing, and Go's error names the shell instead.
		return nil, nil, core.NewError(api.ErrNoFile, "workdir %s does not exist or is not a directory. Use ls to find it.", core.DisplayPath(wd))
	}
	res := &api.BashResult{RunResult: *run, Workdir: core.DisplayPath(wd), DurationMs: time.Since(start).Milliseconds()}
	if gw != nil {
		res.RefusedHosts = f.refused(ctx, h, gw, run, start)
	}
	res.Refusals, res.RefusalsRead, res.RefusalsBoot, res.RefusalsAfter = "", false, "", 0
	if res.TimedOut {
		res.Stderr += fmt.Sprintf("\n[litterbox: timed out after %s; the command and every process it started were killed]\n", timeout)
	}
	return res, snap, err
}

// refused names what the sandbox's gateway refused during run: what the
// run read from the gateway's file or proxy, or, when it could not (a
// gateway made before the file, something in the sandbox put in its place,
// the gateway emptied it during the run, or its proxy did not answer in
// time), what the gateway's refusals table answers, asked by an exec of its
// own: since the mark the run found before its command, or, without one,
// since start.
func (f *Files) refused(ctx context.Context, h *api.Handle, gw *netgate.NetFile, run *api.RunResult, start time.Time) []string {
	if run.RefusalsRead {
		if hosts, ok := netgate.RefusedIn(run.Refusals); ok {
			return hosts
		}
	}
	hosts, marked, err := f.gate.RefusedAfter(ctx, gw, run.RefusalsBoot, run.RefusalsAfter)
	if !marked {
		hosts, err = f.gate.Refused(ctx, gw, start)
	}
	if err != nil {
		f.Log.Debug("could not ask the egress gateway what it refused", "sandbox", h.Slug, "err", err)
	}
	return hosts
}
