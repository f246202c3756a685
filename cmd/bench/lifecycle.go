package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// caseCreate times `litterbox create` and `litterbox delete` on the big and
// the small repository, each beside its floor, runs interleaved so both see
// the same noise; with -before, the binary it names is timed in the same
// rounds.
func (b *bench) caseCreate(ctx context.Context) error {
	bins := []string{b.bin}
	if b.before != "" {
		bins = append(bins, b.before)
	}
	for _, spec := range []repoSpec{b.big, b.small} {
		dir, r, err := b.openRepo(ctx, spec)
		if err != nil {
			return err
		}
		head, err := r.Git.Head(ctx)
		if err != nil {
			return err
		}
		create, del := make([][]time.Duration, len(bins)), make([][]time.Duration, len(bins))
		var fCreate, fDel []time.Duration
		var bound boundSamples
		// Run 0 warms the page cache and docker; it is not counted.
		for i := 0; i <= b.n; i++ {
			var steps []func() error
			for k, bin := range bins {
				name := fmt.Sprintf("c%d-%d", i, k)
				steps = append(steps, func() error {
					lb := func(args ...string) error {
						_, err := (proc{args: append([]string{bin}, args...), dir: dir, env: b.env}).run(ctx)
						return err
					}
					dc, err := timed(func() error { return lb("create", name) })
					if err != nil {
						return err
					}
					dd, err := timed(func() error { return lb("delete", name) })
					if err != nil {
						return err
					}
					// Untimed: what delete leaves to a process of its own
					// (the gateway, their volume, the state) goes before
					// the next step, which would otherwise bear it.
					if err := waitGone(ctx, filepath.Join(r.Git.CommonDir, "litterbox", name)); err != nil {
						return err
					}
					if i > 0 {
						create[k], del[k] = append(create[k], dc), append(del[k], dd)
					}
					return nil
				})
			}
			fname := fmt.Sprintf("f%d", i)
			steps = append(steps, func() error {
				dc, err := timed(func() error { return b.floorCreate(ctx, dir, r, head, fname) })
				if err != nil {
					return err
				}
				dd, err := timed(func() error { return b.floorDelete(ctx, dir, r, fname) })
				if err != nil {
					return err
				}
				// The naive script's own network goes outside the timing: a
				// sandbox on the shared bridge has none to remove.
				if err := runCmd(ctx, "docker", "network", "rm", r.ContainerName(fname)); err != nil {
					return err
				}
				if i > 0 {
					fCreate, fDel = append(fCreate, dc), append(fDel, dd)
				}
				return nil
			})
			// The engine's own bounds, in the same rounds: one bare
			// container run and removed, a confined sandbox's two, and
			// the naive script with no network, alone and beside a
			// gateway's bare container (its delete untimed).
			steps = append(steps, func() error {
				run, rm, err := b.bareContainer(ctx)
				if err == nil && i > 0 {
					bound.bareRun, bound.bareRm = append(bound.bareRun, run), append(bound.bareRm, rm)
				}
				return err
			})
			steps = append(steps, func() error {
				d, err := b.barePair(ctx)
				if err == nil && i > 0 {
					bound.pair = append(bound.pair, d)
				}
				return err
			})
			for _, gateway := range []bool{false, true} {
				nname := fmt.Sprintf("n%d", i)
				into := &bound.none
				if gateway {
					nname, into = fmt.Sprintf("ng%d", i), &bound.noneGW
				}
				steps = append(steps, func() error {
					var gw string
					d, err := timed(func() error {
						var err error
						gw, err = b.floorCreateNone(ctx, dir, r, head, nname, gateway)
						return err
					})
					if gw != "" {
						if rerr := runCmd(ctx, "docker", "rm", "-f", gw); err == nil {
							err = rerr
						}
					}
					if err != nil {
						return err
					}
					if err := b.floorDelete(ctx, dir, r, nname); err != nil {
						return err
					}
					if i > 0 {
						*into = append(*into, d)
					}
					return nil
				})
			}
			// Rotate which goes first, so none always runs on a warmer (or
			// busier) machine.
			for j := range steps {
				if err := steps[(i+j)%len(steps)](); err != nil {
					return err
				}
			}
		}
		for k := range bins {
			suffix, t := "", maxRatio(1.3)
			if spec == b.big {
				t = all(maxRatio(1.3), under(1000))
			}
			if k > 0 {
				suffix = ", before (" + filepath.Base(b.before) + ")"
			}
			b.rows = append(b.rows,
				row("create "+spec.String()+suffix, create[k], fCreate, t),
				row("delete "+spec.String()+suffix, del[k], fDel, maxRatio(1.2)), // the delete target
				row("create + delete "+spec.String()+suffix, sums(create[k], del[k]), sums(fCreate, fDel), maxRatio(0.5)),
			)
		}
		b.rows = append(b.rows, boundRows(spec, bound, fCreate, fDel)...)
		if spec == b.small {
			if err := b.parallelCreates(ctx, dir, spec, median(create[0])); err != nil {
				return err
			}
			rw, err := b.bareAtOnce(ctx, spec, median(bound.bareRun))
			if err != nil {
				return err
			}
			b.rows = append(b.rows, rw)
		}
		if spec == b.big && b.has(ctx, "pool") {
			if err := b.pooledCreates(ctx, dir, spec); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitGone waits (a minute at most) for path to be gone.
func waitGone(ctx context.Context, path string) error {
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is still there a minute after delete returned", path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sums are a[i]+b[i]: each round's two steps together.
func sums(a, b []time.Duration) []time.Duration {
	out := make([]time.Duration, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] + b[i]
	}
	return out
}

// pooledCreates times `litterbox create` taking a sandbox of the warm pool
// (`litterbox pool 1` before each, untimed) against a bare `docker run -d
// busybox`, interleaved. The pool is emptied at the end, so no
// other case takes from it.
func (b *bench) pooledCreates(ctx context.Context, dir string, spec repoSpec) error {
	defer b.litterbox(dir, "delete", "--pool").run(context.WithoutCancel(ctx))
	var lbs, floor []time.Duration
	for i := 0; i <= b.n; i++ {
		name := fmt.Sprintf("pool%d", i)
		if _, err := b.litterbox(dir, "pool", "1").run(ctx); err != nil {
			return err
		}
		var out []byte
		d, err := timed(func() error {
			var err error
			out, err = b.litterbox(dir, "create", "--json", name).run(ctx)
			return err
		})
		if err != nil {
			return err
		}
		if !strings.Contains(string(out), `"pooled": true`) {
			return fmt.Errorf("create %s did not take the pooled sandbox:\n%s", name, out)
		}
		if _, err := b.litterbox(dir, "delete", name).run(ctx); err != nil {
			return err
		}
		if err := waitGone(ctx, filepath.Join(dir, ".git", "litterbox", name)); err != nil {
			return err
		}
		var id []byte
		f, err := timed(func() error {
			var err error
			id, err = (proc{args: []string{"docker", "run", "-d", "--label", b.label, api.DefaultImage, "sleep", "infinity"}}).run(ctx)
			return err
		})
		if err != nil {
			return err
		}
		if err := runCmd(ctx, "docker", "rm", "-f", strings.TrimSpace(string(id))); err != nil {
			return err
		}
		if i > 0 {
			lbs, floor = append(lbs, d), append(floor, f)
		}
	}
	b.rows = append(b.rows, row("create from a warm pool "+spec.String(), lbs, floor, all(maxRatio(0.25), under(120)))) // the pool target
	return nil
}

// parallelCreates times 10 creates started at once on one repository against
// 10 times the median of one (issue 13), then deletes them; with a pool,
// again with each run's 10 creates taken from a pool of 10 (`litterbox
// pool 10` before each, untimed), every one pooled.
func (b *bench) parallelCreates(ctx context.Context, dir string, spec repoSpec, one time.Duration) error {
	samples, err := b.createsAtOnce(ctx, dir, nil)
	if err != nil {
		return err
	}
	floor := []time.Duration{parallel * one}
	b.rows = append(b.rows, row(fmt.Sprintf("%d parallel creates %s", parallel, spec), samples, floor, maxRatio(0.4)))
	if !b.has(ctx, "pool") {
		return nil
	}
	defer b.litterbox(dir, "delete", "--pool").run(context.WithoutCancel(ctx))
	if samples, err = b.createsAtOnce(ctx, dir, []string{"pool", fmt.Sprint(parallel)}); err != nil {
		return err
	}
	b.rows = append(b.rows, row(fmt.Sprintf("%d parallel creates from a pool of %d %s", parallel, parallel, spec), samples, floor, maxRatio(0.2)))
	return nil
}

// parallel is how many creates parallelCreates starts at once.
const parallel = 10

// createsAtOnce times max(1, n/3) runs of `parallel` creates started at
// once, each run after the untimed command before (none: nil), then deletes
// them. With a command before, every create must take a pooled sandbox.
func (b *bench) createsAtOnce(ctx context.Context, dir string, before []string) ([]time.Duration, error) {
	names := make([]string, parallel)
	for i := range names {
		names[i] = fmt.Sprintf("par%d", i)
	}
	var samples []time.Duration
	for run := 0; run < max(1, b.n/3); run++ {
		if before != nil {
			if _, err := b.litterbox(dir, before...).run(ctx); err != nil {
				return nil, err
			}
		}
		d, err := timed(func() error {
			return b.each(ctx, names, parallel, func(name string) error {
				out, err := b.litterbox(dir, "create", "--json", name).run(ctx)
				if err == nil && before != nil && !strings.Contains(string(out), `"pooled": true`) {
					err = fmt.Errorf("create %s did not take a pooled sandbox:\n%s", name, out)
				}
				return err
			})
		})
		derr := b.each(context.WithoutCancel(ctx), names, 4, func(name string) error {
			_, err := b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
			return err
		})
		if err != nil {
			return nil, err
		}
		if derr != nil {
			return nil, derr
		}
		for _, name := range names {
			if err := waitGone(ctx, filepath.Join(dir, ".git", "litterbox", name)); err != nil {
				return nil, err
			}
		}
		samples = append(samples, d)
	}
	return samples, nil
}

// floorCreate is what a naive script would run to make the same sandbox:
// branch, a network of its own, the hardened `docker run` Create uses (from
// sandbox's ContainerSpec, so it stays in step), `git archive | docker exec
// -i tar -x`, and the startup command.
func (b *bench) floorCreate(ctx context.Context, dir string, r *api.Repo, head, slug string) error {
	return b.naiveCreate(ctx, dir, r, head, slug, provider.NetworkOwn)
}

// naiveCreate is floorCreate on network: NetworkOwn makes the sandbox's
// network first; NetworkNone (the bound rows', bounds.go) makes none, and
// publishes no port.
func (b *bench) naiveCreate(ctx context.Context, dir string, r *api.Repo, head, slug, network string) error {
	spec := b.svc.ContainerSpec(r, slug, head)
	spec.Network = network
	if network == provider.NetworkNone {
		spec.Ports = nil
	}
	name := r.ContainerName(slug)
	if err := runCmd(ctx, "git", "-C", dir, "branch", api.BranchPrefix+slug, head); err != nil {
		return err
	}
	if network == provider.NetworkOwn {
		if err := runCmd(ctx, append([]string{"docker"}, docker.NetworkCreateArgs(name, spec.Labels)...)...); err != nil {
			return err
		}
	}
	run, err := docker.RunArgs(spec, docker.DockerDialect)
	if err != nil {
		return err
	}
	if err := runCmd(ctx, append([]string{"docker"}, run...)...); err != nil {
		return err
	}
	if err := pipe(ctx,
		proc{args: []string{"git", "-C", dir, "archive", "--format=tar", head}},
		proc{args: []string{"docker", "exec", "-i", name, "tar", "-x", "-f", "-", "-C", api.Workdir}},
	); err != nil {
		return err
	}
	return runCmd(ctx, append([]string{"docker", "exec", name}, config.DefaultSetup...)...)
}

// floorDelete is `docker rm -f` and `git branch -D` (the delete floor).
func (b *bench) floorDelete(ctx context.Context, dir string, r *api.Repo, slug string) error {
	if err := runCmd(ctx, "docker", "rm", "-f", r.ContainerName(slug)); err != nil {
		return err
	}
	return runCmd(ctx, "git", "-C", dir, "branch", "-D", api.BranchPrefix+slug)
}

// casePause times `litterbox pause` and `resume` of one sandbox against bare
// `docker pause` and `docker unpause` of the same container.
func (b *bench) casePause(ctx context.Context) error {
	dir, r, err := b.openRepo(ctx, b.small)
	if err != nil {
		return err
	}
	const name = "pr"
	if _, err := b.litterbox(dir, "create", name).run(ctx); err != nil {
		return err
	}
	defer b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
	c := r.ContainerName(name)
	var pause, resume, fPause, fResume []time.Duration
	for i := 0; i <= b.n; i++ {
		steps := []struct {
			into *[]time.Duration
			p    proc
		}{
			{&pause, b.litterbox(dir, "pause", name)},
			{&resume, b.litterbox(dir, "resume", name)},
			{&fPause, proc{args: []string{"docker", "pause", c}}},
			{&fResume, proc{args: []string{"docker", "unpause", c}}},
		}
		for _, s := range steps {
			d, err := timed(func() error { _, err := s.p.run(ctx); return err })
			if err != nil {
				return err
			}
			if i > 0 {
				*s.into = append(*s.into, d)
			}
		}
	}
	b.rows = append(b.rows,
		row("pause", pause, fPause, under(100)),
		row("resume", resume, fResume, under(100)),
	)
	return nil
}

// caseList times `litterbox list` with listCount sandboxes against one
// `docker ps -a` filtered by the repository's label.
func (b *bench) caseList(ctx context.Context) error {
	dir, r, err := b.openRepo(ctx, b.small)
	if err != nil {
		return err
	}
	progress("creating %d sandboxes", b.listCount)
	names := make([]string, b.listCount)
	for i := range names {
		names[i] = fmt.Sprintf("l%02d", i)
	}
	if err := b.each(ctx, names, 4, func(n string) error { _, err := b.litterbox(dir, "create", n).run(ctx); return err }); err != nil {
		return err
	}
	defer b.each(context.WithoutCancel(ctx), names, 4, func(n string) error {
		_, err := b.litterbox(dir, "delete", "--force", n).run(context.WithoutCancel(ctx))
		return err
	})
	var list, floor []time.Duration
	ps := proc{args: []string{"docker", "ps", "-a", "--no-trunc", "--filter", "label=" + api.LabelGitDir + "=" + r.Git.CommonDir, "--format", "{{json .}}"}}
	for i := 0; i <= b.n; i++ {
		var out []byte
		d, err := timed(func() error { var err error; out, err = b.litterbox(dir, "list").run(ctx); return err })
		if err != nil {
			return err
		}
		f, err := timed(func() error { _, err := ps.run(ctx); return err })
		if err != nil {
			return err
		}
		if i == 0 {
			if got := strings.Count(string(out), "l0") + strings.Count(string(out), "l1"); got < b.listCount {
				progress("list shows %d of %d sandboxes", got, b.listCount)
			}
			continue
		}
		list, floor = append(list, d), append(floor, f)
	}
	b.rows = append(b.rows, row(fmt.Sprintf("list (%d sandboxes)", b.listCount), list, floor, maxRatio(1.2)))
	return nil
}

// each runs fn on every name, at most par at once, and returns the first error.
func (b *bench) each(ctx context.Context, names []string, par int, fn func(string) error) error {
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(n); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
