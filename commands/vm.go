package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// VM shows or controls the repository's VM (--engine vm).
type VM struct {
	Action string `arg:"" optional:"" default:"status" enum:"status,suspend,stop" help:"status (the default): whether the VM runs, since when, when it is suspended unless used; suspend: save it whole (memory included: the sandboxes' /src, their processes) and end it, the next command resumes it; stop: power it off (its sandboxes' containers stop and their /src is lost; their branches stay)."`
	Force  bool   `short:"f" help:"stop: power the VM off even when sandboxes run in it."`
	JSON   bool   `name:"json" help:"status: print JSON."`
}

// errNoVM is a vm command without the VM engine.
var errNoVM = errors.New("litterbox vm works only with --engine vm (or LITTERBOX_ENGINE=vm), where each repository's sandboxes run in a VM of its own")

// Run shows, suspends or stops the VM.
func (v *VM) Run(ctx context.Context, env *Env) error {
	if env.VM == nil {
		return &api.Error{Kind: api.ErrBadArgument, Msg: errNoVM.Error()}
	}
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	switch v.Action {
	case "suspend":
		if st := env.VM.Status(); st.State != vm.StateRunning {
			env.errf("The VM of %s is %s: nothing to suspend.\n", r.Root(), st.State)
			return nil
		}
		if err := env.VM.Suspend(ctx); err != nil {
			return err
		}
		env.outf("Suspended the VM of %s: the next command resumes it where it was.\n", r.Root())
		return nil
	case "stop":
		return stopVM(ctx, env, r, v.Force)
	}
	st := env.VM.Status()
	if v.JSON {
		return writeJSON(env, map[string]any{"repo": r.Root(), "vm": st})
	}
	env.outf("VM of %s: %s\n", r.Root(), vmLine(st))
	return nil
}

// stopVM powers the VM off, refusing while sandboxes run in it unless
// forced: their /src lives in the VM's memory.
func stopVM(ctx context.Context, env *Env, r *api.Repo, force bool) error {
	st := env.VM.Status()
	switch st.State {
	case vm.StateStopped:
		env.errf("The VM of %s is stopped already.\n", r.Root())
		return nil
	case vm.StateSuspended:
		env.errf("The VM of %s is suspended (its memory saved in %s); its next use resumes it. Delete its sandboxes to have it stop then.\n", r.Root(), st.Dir)
		return nil
	}
	if !force {
		names, err := inVM(ctx, env, r)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: sandboxes run in the VM (%s): a power-off loses their /src (their branches stay). Suspend it instead (`litterbox vm suspend`, which keeps everything), delete them, or stop it with --force",
				api.ErrWouldLose, strings.Join(names, ", "))
		}
	}
	if err := env.VM.Stop(ctx); err != nil {
		return err
	}
	env.outf("Stopped the VM of %s.\n", r.Root())
	return nil
}

// stopIdleVM stops the VM once the repository has no sandbox in it, after
// a delete: nothing is left that needs it.
func stopIdleVM(ctx context.Context, env *Env, r *api.Repo) {
	if env.VM == nil || env.VM.Status().State != vm.StateRunning {
		return
	}
	if names, err := inVM(ctx, env, r); err != nil || len(names) > 0 {
		return
	}
	if pool, err := env.Sandboxes.Pool(ctx, r); err != nil || len(pool) > 0 {
		return
	}
	if err := env.VM.Stop(ctx); err != nil {
		env.errf("warning: no sandbox is left in the VM, but stopping it failed: %v\n", err)
		return
	}
	env.errf("No sandbox is left in the VM: stopped the VM (the next create starts it again).\n")
}

// inVM names r's sandboxes that have a container in the VM.
func inVM(ctx context.Context, env *Env, r *api.Repo) ([]string, error) {
	list, err := env.Sandboxes.List(ctx, r)
	var names []string
	for _, sb := range list {
		if sb.Container != "" {
			names = append(names, sb.Name)
		}
	}
	return names, err
}

// vmLine says the VM's state in one line.
func vmLine(st vm.Status) string {
	var b strings.Builder
	b.WriteString(st.State)
	switch st.State {
	case vm.StateRunning:
		fmt.Fprintf(&b, " since %s (pid %d)", st.Since.Format(time.DateTime), st.PID)
		if !st.LastUsed.IsZero() && !st.StopsAt.IsZero() {
			fmt.Fprintf(&b, ", last used %s ago, stops after %s idle (at %s unless used)",
				time.Since(st.LastUsed).Round(time.Second), st.StopsAt.Sub(st.LastUsed), st.StopsAt.Format(time.TimeOnly))
		}
	case vm.StateSuspended:
		b.WriteString(": its memory is saved, the next command resumes it")
	}
	fmt.Fprintf(&b, "; %s", st.Accel.Name)
	if st.Accel.Note != "" {
		fmt.Fprintf(&b, " (%s)", st.Accel.Note)
	}
	if st.Exit != "" {
		b.WriteString("\n" + st.Exit)
	}
	return b.String()
}
