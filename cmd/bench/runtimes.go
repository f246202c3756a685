package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/runner"
)

// runtimeCases are the rows of the runtimes group: gVisor's
// runsc against runc on the same engine, in the same run, interleaved.
// The first three are measured at the provider, each saying which part of
// the service's work it is; the rest through litterbox (create --runtime
// gvisor, the MCP server, snapshot) against the same under the engine's
// default runtime.
var runtimeCases = []string{
	"sandbox start, runsc vs runc",
	"exec `true`, runsc vs runc",
	"walk 25,000 files, one changed, runsc vs runc",
	"litterbox create (no pool), gvisor vs default",
	"mcp bash `true`, gvisor vs default",
	"litterbox snapshot, 25,000 files, one changed, gvisor vs default",
}

// runtimeFiles is the file count of the walk case, as in the snapshot
// target.
const runtimeFiles = 25000

// caseRuntimes times, for runsc and for runc alike: Create and Remove of the
// sandbox the service makes (its hardened spec, the shared bridge); `true`
// through exec, the floor of an MCP `bash true`; and a walk of /src that
// stats 25,000 files and finds the one changed since a mark, as the
// snapshot's scanner does (find, not the scanner: the scanner is copied in
// by the service). The ratio is runsc's median over runc's.
func (b *bench) caseRuntimes(ctx context.Context) error {
	run := runner.Exec{Log: log.New(io.Discard)}
	p, err := docker.New(docker.Options{Runner: run})
	if err != nil {
		return err
	}
	info, err := p.Info(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(info.Runtimes, "runsc") {
		b.skip(runtimeCases, "the engine offers no runsc: run scripts/ensure-gvisor.sh")
		return nil
	}
	_, r, err := b.openRepo(ctx, b.small)
	if err != nil {
		return err
	}
	spec := func(runtime, slug string) provider.Spec {
		s := b.svc.ContainerSpec(r, slug, "HEAD")
		s.Runtime = runtime
		return s
	}
	var start = map[string][]time.Duration{}
	var exec = map[string][]time.Duration{}
	var walk = map[string][]time.Duration{}
	keep := map[string]*provider.Sandbox{}
	defer func() {
		for _, sb := range keep {
			_ = p.Remove(context.WithoutCancel(ctx), sb.Ref)
		}
	}()
	for i := 0; i <= b.n; i++ {
		for _, rt := range []string{"runc", "runsc"} {
			slug := fmt.Sprintf("rt-%s-%d", rt, i)
			var sb *provider.Sandbox
			d, err := timed(func() error { var err error; sb, err = p.Create(ctx, spec(rt, slug)); return err })
			if err != nil {
				return err
			}
			if i > 0 {
				start[rt] = append(start[rt], d)
			}
			if err := p.Remove(ctx, sb.Ref); err != nil {
				return err
			}
		}
	}
	for _, rt := range []string{"runc", "runsc"} {
		sb, err := p.Create(ctx, spec(rt, "rt-"+rt))
		if err != nil {
			return err
		}
		keep[rt] = sb
		fill := fmt.Sprintf(`cd /src && i=0; while [ $i -lt %d ]; do d=d$((i / 500)); [ -d $d ] || mkdir $d; echo $i > $d/f$i; i=$((i+1)); done; touch /tmp/mark; sleep 1.1; echo x >> d7/f3500`, runtimeFiles)
		if res, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", fill}}); err != nil || res.ExitCode != 0 {
			return fmt.Errorf("fill /src under %s: %v %s", rt, err, res.Stderr)
		}
	}
	for i := 0; i <= b.n; i++ {
		for _, rt := range []string{"runc", "runsc"} {
			sb := keep[rt]
			d, err := timed(func() error { return runCmd(ctx, "docker", "exec", sb.Ref.ID, "true") })
			if err != nil {
				return err
			}
			w, err := timed(func() error {
				res, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", "find /src -newer /tmp/mark -type f | wc -l"}})
				if err == nil && string(res.Stdout) != "1\n" {
					err = fmt.Errorf("the walk found %q changed files under %s, want 1", res.Stdout, rt)
				}
				return err
			})
			if err != nil {
				return err
			}
			if i > 0 {
				exec[rt], walk[rt] = append(exec[rt], d), append(walk[rt], w)
			}
		}
	}
	b.rows = append(b.rows,
		withNote(row(runtimeCases[0], start["runsc"], start["runc"], maxRatio(1.5)), "provider Create+start of the service's spec (no copy-in); floor: the same under runc. Target: create <= 1.5x"),
		withNote(row(runtimeCases[1], exec["runsc"], exec["runc"], maxRatio(2)), "docker exec true: the floor of MCP bash true (target: <= 2x); floor: runc"),
		withNote(row(runtimeCases[2], walk["runsc"], walk["runc"], maxRatio(2)), "find -newer over /src (tmpfs): the scanner's stat walk; floor: runc (snapshot target: <= 2x)"),
	)
	return b.runtimesThroughLitterbox(ctx)
}

// runtimesThroughLitterbox times, under gVisor (`--runtime gvisor`) and
// under the engine's default alike, interleaved: `litterbox create
// --no-pool` of the small repository (delete untimed); an MCP `bash true`
// (a tool call and the snapshot after it) in a sandbox of each; and
// `litterbox snapshot` of a sandbox of a 25,000-file repository after one
// file changed.
func (b *bench) runtimesThroughLitterbox(ctx context.Context) error {
	if !b.has(ctx, "create", "--runtime", "x") {
		b.skip(runtimeCases[3:], "not implemented yet: no `litterbox create --runtime`")
		return nil
	}
	dir, err := b.repo(ctx, b.small)
	if err != nil {
		return err
	}
	kinds := []string{"default", "gvisor"}
	create := func(dir, name, kind string) error {
		args := []string{"create", "--no-pool", name}
		if kind != "default" {
			args = append(args, "--runtime", kind)
		}
		_, err := b.litterbox(dir, args...).run(ctx)
		return err
	}
	del := func(dir, name string) {
		b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
	}
	created := map[string][]time.Duration{}
	for i := 0; i <= b.n; i++ {
		order := kinds
		if i%2 == 1 {
			order = []string{kinds[1], kinds[0]}
		}
		for _, k := range order {
			name := fmt.Sprintf("rt-%s-%d", k, i)
			d, err := timed(func() error { return create(dir, name, k) })
			if err != nil {
				return err
			}
			del(dir, name)
			if i > 0 {
				created[k] = append(created[k], d)
			}
		}
	}

	s, err := b.startMCP(ctx, dir)
	if err != nil {
		return err
	}
	defer s.close()
	for _, k := range kinds {
		if err := create(dir, "rtm-"+k, k); err != nil {
			return err
		}
		defer del(dir, "rtm-"+k)
	}
	bash, err := b.perKind(kinds, func(_ int, k string) (time.Duration, error) {
		d, _, err := s.timedCall(ctx, "bash", map[string]any{"sandbox": "rtm-" + k, "command": "true"})
		return d, err
	})
	if err != nil {
		return err
	}

	big, err := b.repo(ctx, repoSpec{Files: runtimeFiles, Bytes: runtimeFiles << 10})
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if err := create(big, "rts-"+k, k); err != nil {
			return err
		}
		defer del(big, "rts-"+k)
	}
	snap, err := b.perKind(kinds, func(i int, k string) (time.Duration, error) {
		name := "rts-" + k
		if _, err := b.litterbox(big, "exec", name, "--", "sh", "-c", fmt.Sprintf("echo %d > /src/bench-change.txt", i)).run(ctx); err != nil {
			return 0, err
		}
		return timed(func() error { _, err := b.litterbox(big, "snapshot", name).run(ctx); return err })
	})
	if err != nil {
		return err
	}
	b.rows = append(b.rows,
		withNote(row(runtimeCases[3], created["gvisor"], created["default"], maxRatio(1.5)), fmt.Sprintf("litterbox create --no-pool --runtime gvisor of %s (copy-in and setup included); floor: the same without --runtime (runc). Target: create <= 1.5x", b.small)),
		withNote(row(runtimeCases[4], bash["gvisor"], bash["default"], maxRatio(2)), "an MCP bash `true` call, its snapshot included, in a sandbox made with --runtime gvisor; floor: one under runc (target: <= 2x)"),
		withNote(row(runtimeCases[5], snap["gvisor"], snap["default"], maxRatio(2)), "litterbox snapshot after one file changed, 25,000 files in /src; floor: the same under runc (target: <= 2x)"),
	)
	return nil
}

// perKind runs measure b.n+1 times for each kind in turn and keeps its
// figures by kind, the first round (a warm-up) left out.
func (b *bench) perKind(kinds []string, measure func(i int, kind string) (time.Duration, error)) (map[string][]time.Duration, error) {
	out := map[string][]time.Duration{}
	for i := 0; i <= b.n; i++ {
		for _, k := range kinds {
			d, err := measure(i, k)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				out[k] = append(out[k], d)
			}
		}
	}
	return out, nil
}

// vmCases are the rows of the vm group: the VM engine's boot, and the round
// trip of an exec through its ssh channel against the local engine's.
var vmCases = []string{
	"VM boot to its engine answering (first, fresh disk)",
	"VM resume after an idle suspend",
	"VM boot again after a stop (image cached, disk kept)",
	"exec `true` through the VM channel vs local",
}

// caseVM boots a VM of the image scripts/ensure-vm-image.sh built (fresh),
// resumes it after a suspend, boots it again after a stop, and times `docker exec true` in a
// sandbox there (through litterbox's ssh socket) against the same on the
// local engine.
func (b *bench) caseVM(ctx context.Context) error {
	img, err := vm.LoadImage(vm.DefaultImageDir())
	if err != nil {
		b.skip(vmCases, err.Error())
		return nil
	}
	run := runner.Exec{Log: log.New(io.Discard)}
	dir, err := os.MkdirTemp(b.tmp, "vm-")
	if err != nil {
		return err
	}
	m := vm.New(vm.Config{Dir: dir, Image: img, Runner: run})
	defer func() { _ = m.Stop(context.WithoutCancel(ctx)) }()
	first, err := timed(func() error { return m.Start(ctx) })
	if err != nil {
		return err
	}
	vp, err := vm.NewProvider(m, run)
	if err != nil {
		return err
	}
	lp, err := docker.New(docker.Options{Runner: run})
	if err != nil {
		return err
	}
	_, r, err := b.openRepo(ctx, b.small)
	if err != nil {
		return err
	}
	s := b.svc.ContainerSpec(r, "vm-exec", "HEAD")
	vsb, err := vp.Create(ctx, s)
	if err != nil {
		return err
	}
	lsb, err := lp.Create(ctx, s)
	if err != nil {
		return err
	}
	defer func() { _ = lp.Remove(context.WithoutCancel(ctx), lsb.Ref) }()
	sock := vp.Docker().Client().Host
	var local, remote []time.Duration
	for i := 0; i <= b.n; i++ {
		l, err := timed(func() error { return runCmd(ctx, "docker", "exec", lsb.Ref.ID, "true") })
		if err != nil {
			return err
		}
		v, err := timed(func() error { return runCmd(ctx, "docker", "--host", sock, "exec", vsb.Ref.ID, "true") })
		if err != nil {
			return err
		}
		if i > 0 {
			local, remote = append(local, l), append(remote, v)
		}
	}
	if err := m.Suspend(ctx); err != nil {
		return err
	}
	resume, err := timed(func() error { return m.Start(ctx) })
	if err != nil {
		return err
	}
	if err := m.Stop(ctx); err != nil {
		return err
	}
	again, err := timed(func() error { return m.Start(ctx) })
	if err != nil {
		return err
	}
	accel := "accel " + m.Accel().Name
	if n := m.Accel().Note; n != "" {
		accel += ": " + n
	}
	b.rows = append(b.rows,
		withNote(row(vmCases[0], []time.Duration{first}, nil, info), accel),
		withNote(row(vmCases[1], []time.Duration{resume}, nil, info), "the VM's memory saved to its directory, loaded again; "+accel),
		withNote(row(vmCases[2], []time.Duration{again}, nil, info), accel),
		withNote(row(vmCases[3], remote, local, maxRatio(2)), "docker exec true over litterbox's ssh socket into the VM; floor: the local engine. "+accel),
	)
	return nil
}
