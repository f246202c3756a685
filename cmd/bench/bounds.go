package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// The engine's own bounds (issue 34): rows of status info that time the
// least the engine lets a create do, beside the floors of the rows they
// bound, in the same rounds. A target below its bound is one no create can
// meet on this machine, however little Litterbox adds.

// boundSamples are the create group's bound timings of one repository,
// gathered in the rounds of its create rows.
type boundSamples struct {
	bareRun []time.Duration // one bare `docker run -d --network none`
	bareRm  []time.Duration // its `docker rm -f`
	none    []time.Duration // the naive script with --network none
	noneGW  []time.Duration // the same beside a bare container on the bridge
	pair    []time.Duration // two bare containers at once, one rm of both
}

// bareContainer runs one bare container with no network and removes it,
// and returns how long each took.
func (b *bench) bareContainer(ctx context.Context) (run, rm time.Duration, err error) {
	var id string
	run, err = timed(func() error {
		var err error
		id, err = b.bareRun(ctx)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	rm, err = timed(func() error { return runCmd(ctx, "docker", "rm", "-f", id) })
	return run, rm, err
}

// bareRun is `docker run -d --network none IMAGE sleep infinity` (the
// create rows' image), labelled for the run's cleanup; it returns the id.
func (b *bench) bareRun(ctx context.Context) (string, error) {
	return b.bareRunOn(ctx, "none")
}

// bareRunOn is bareRun on network.
func (b *bench) bareRunOn(ctx context.Context, network string) (string, error) {
	out, err := proc{args: []string{"docker", "run", "-d", "--network", network, "--label", b.label, api.DefaultImage, "sleep", "infinity"}}.run(ctx)
	return strings.TrimSpace(string(out)), err
}

// barePair is the least a confined sandbox is made of, bare: two
// containers run at once, one with no network (the sandbox's) and one on
// the default bridge (the gateway's), then both removed in one `docker rm
// -f`; it returns how long that took.
func (b *bench) barePair(ctx context.Context) (time.Duration, error) {
	var ids [2]string
	var errs [2]error
	d, err := timed(func() error {
		var wg sync.WaitGroup
		for k, network := range []string{"none", "bridge"} {
			wg.Add(1)
			go func() { defer wg.Done(); ids[k], errs[k] = b.bareRunOn(ctx, network) }()
		}
		wg.Wait()
		if err := cmpErr(errs[:]...); err != nil {
			return err
		}
		return runCmd(ctx, "docker", "rm", "-f", ids[0], ids[1])
	})
	if err != nil {
		for _, id := range ids {
			if id != "" {
				_ = runCmd(context.WithoutCancel(ctx), "docker", "rm", "-f", id)
			}
		}
	}
	return d, err
}

// floorCreateNone is the naive script (floorCreate) with --network none
// instead of a network of its own: one `docker run` and the copy and the
// startup command's execs, the least a create that starts a container and
// copies the repository into it does. With gateway, a bare container on
// the default bridge (a gateway's least) is started with it, and it
// returns once both are made, with that container's id.
func (b *bench) floorCreateNone(ctx context.Context, dir string, r *api.Repo, head, slug string, gateway bool) (string, error) {
	if !gateway {
		return "", b.naiveCreate(ctx, dir, r, head, slug, provider.NetworkNone)
	}
	var id string
	var gwErr error
	done := make(chan struct{})
	go func() { defer close(done); id, gwErr = b.bareRunOn(ctx, "bridge") }()
	err := b.naiveCreate(ctx, dir, r, head, slug, provider.NetworkNone)
	<-done
	return id, cmpErr(err, gwErr)
}

// boundRows are the create group's bound rows of one repository: the bare
// container beside the naive script and its delete, and the naive script
// with no network beside the naive script.
func boundRows(spec repoSpec, s boundSamples, fCreate, fDel []time.Duration) []Row {
	bare := row("bound: one bare container run + rm / the naive script and its delete, "+spec.String(), sums(s.bareRun, s.bareRm), sums(fCreate, fDel), info)
	bare.Note = "bounds create + delete " + spec.String() + " <= 0.5x: `docker run -d --network none busybox sleep infinity` + `docker rm -f`"
	none := row("bound: the naive script with --network none / the naive script, "+spec.String(), s.none, fCreate, info)
	none.Note = "bounds create " + spec.String() + " <= 0.8x: one `docker run --network none`, the archive's and the startup command's execs"
	noneGW := row("bound: the naive script with --network none beside a bare container on the bridge / the naive script, "+spec.String(), s.noneGW, fCreate, info)
	noneGW.Note = "bounds create " + spec.String() + " <= 0.8x, confined: the same, and a gateway's bare `docker run -d` on the default bridge started with it"
	pair := row("bound: two bare containers at once + one rm / the naive script and its delete, "+spec.String(), s.pair, sums(fCreate, fDel), info)
	pair.Note = "bounds create + delete " + spec.String() + " <= 0.5x, confined: a sandbox's and a gateway's bare containers (--network none, the default bridge) run at once, one `docker rm -f` of both"
	return []Row{bare, pair, none, noneGW}
}

// bareAtOnce times `parallel` bare containers started at once (removed
// after, untimed), max(3, b.n/3) times, against `parallel` times the
// median of one (one, from the create rounds): the 10 parallel creates
// row's floor is built the same way, from one create's median.
func (b *bench) bareAtOnce(ctx context.Context, spec repoSpec, one time.Duration) (Row, error) {
	names := make([]string, parallel)
	for i := range names {
		names[i] = fmt.Sprint(i)
	}
	var samples []time.Duration
	// Three runs at least: the row it bounds has max(1, n/3), each of
	// which costs ten creates.
	for run := 0; run < max(3, b.n/3); run++ {
		var mu sync.Mutex
		var ids []string
		d, err := timed(func() error {
			return b.each(ctx, names, parallel, func(string) error {
				id, err := b.bareRun(ctx)
				if id != "" {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
				return err
			})
		})
		if len(ids) > 0 {
			if rerr := runCmd(context.WithoutCancel(ctx), append([]string{"docker", "rm", "-f"}, ids...)...); err == nil {
				err = rerr
			}
		}
		if err != nil {
			return Row{}, err
		}
		samples = append(samples, d)
	}
	r := row(fmt.Sprintf("bound: %d bare containers at once / %d x one, %s", parallel, parallel, spec), samples, []time.Duration{parallel * one}, info)
	r.Note = fmt.Sprintf("bounds %d parallel creates %s <= 0.4x: `docker run -d --network none busybox sleep infinity`, removed after (untimed)", parallel, spec)
	return r, nil
}
