package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// kubernetesPoolCases are the rows of the kubernetes-pool group:
// creates taking a warm pool's pod on the cluster of
// scripts/ensure-kubernetes.sh.
var kubernetesPoolCases = []string{
	"create from a warm pool, kubernetes (30 at 1/s, mcp --pool 16)",
	"10 creates at once from a pool of 10, kubernetes",
}

// poolCases are the pool group's rows, open or confined (group
// kubernetes-pool-confined: each member with its gateway pod).
func poolCases(confined bool) []string {
	if !confined {
		return kubernetesPoolCases
	}
	out := make([]string, len(kubernetesPoolCases))
	for i, c := range kubernetesPoolCases {
		out[i] = strings.Replace(c, "kubernetes", "kubernetes, confined", 1)
	}
	return out
}

// caseKubernetesPool times, in a namespace of its own, on a small
// repository: cold MCP sandbox-creates (no pool) as the floor; 10
// `litterbox create` at once from a pool of 10 filled by `litterbox pool
// 10` (all taken from the pool, p50 under 400 ms); then 30 sandbox-creates
// at one a second through `litterbox mcp --pool 16`, which refills in the
// background (p50 under 0.1x the cold one and under 250 ms, p99 under 600
// ms). A create that did not take a pooled pod counts, and is said in the
// note; so is what one bare `kubectl annotate` costs in the same run (a
// claim's one call, the least a pooled create takes) and one bare `kubectl
// exec` (what a claim that runs a setup of the user's adds). Confined,
// every sandbox is (the cluster's default; the floor's too), else open.
// The cold and the burst's sandboxes are deleted once timed.
func (b *bench) caseKubernetesPool(ctx context.Context, confined bool) error {
	// pre keeps the two groups' sandbox names apart: one run shares the
	// repository, where the 30 pooled creates' branches stay (the
	// namespace goes, not them).
	cases, suffix, pre := poolCases(confined), "-pool", ""
	if confined {
		suffix, pre = "-poolc", "c"
	}
	kr, err := b.kubeSetup(ctx, cases, suffix)
	if kr == nil || err != nil {
		return err
	}
	defer kr.done()
	if confined {
		if err := kr.setEgress(false); err != nil {
			return err
		}
	}
	ns, env, dir := kr.ns, kr.env, kr.dir
	lb := func(args ...string) ([]byte, error) { return kr.lb(ctx, args...) }

	// The floor: cold creates through an MCP server without a pool. The
	// first warms up (the isolation probe) and is not counted.
	cold, err := b.mcpCreates(ctx, dir, env, pre+"cold", b.n+1, 0, false)
	if err != nil {
		return err
	}
	cold.times = cold.times[1:]
	// Each sandbox made is deleted once timed (untimed): a confined one is
	// two pods, and the test cluster's node holds 110.
	deleteAll(lb, pre+"cold", b.n+1)

	// 10 at once from a pool of 10.
	if _, err := lb("pool", "10"); err != nil {
		return err
	}
	burst, err := b.cliCreatesAtOnce(ctx, kr, pre+"b", 10)
	if err != nil {
		return err
	}
	br := row(cases[1], burst.times, nil, target{
		text: "all Ready and pooled, p50 < 400 ms",
		ok:   func(r Row) bool { return burst.unpooled == 0 && r.Median < 400 },
	})
	br.Note = fmt.Sprintf("slowest %.0f ms; %d of 10 not from the pool; client CPU per create (litterbox, its kubectl and git) %.0f ms",
		ms(quantile(burst.times, 1)), burst.unpooled, ms(median(burst.cpu)))
	deleteAll(lb, pre+"b", 10)
	if _, err := lb("delete", "--pool"); err != nil {
		return err
	}

	// 30 at one a second through a server that keeps 16 warm.
	const size, creates = 16, 30
	s, err := b.startMCPEnv(ctx, dir, append(slices.Clone(env), fmt.Sprintf("LITTERBOX_POOL=%d", size)))
	if err != nil {
		return err
	}
	if err := waitPool(ctx, lb, size); err != nil {
		s.close()
		return err
	}
	warm, err := b.mcpSessionCreates(ctx, s, pre+"p", creates, time.Second, true)
	s.close()
	if err != nil {
		return err
	}
	// What one kubectl call costs here: the claim's annotate, and an exec.
	var annotates, execs []time.Duration
	if pod, ok := warm.last["container"].(string); ok {
		for i := 0; i < 5; i++ {
			if d, err := timed(func() error {
				return runCmd(ctx, kr.k("annotate", "--overwrite", "pod", pod, fmt.Sprintf("dev.litterbox.bench=%d", i), "-o", "json")...)
			}); err == nil {
				annotates = append(annotates, d)
			}
			if d, err := timed(func() error { return runCmd(ctx, kr.k("exec", pod, "-c", "sandbox", "--", "true")...) }); err == nil {
				execs = append(execs, d)
			}
		}
	}
	p99 := quantile(warm.times, 0.99)
	r := row(cases[0], warm.times, cold.times, target{
		text: "p50 <= 0.1x cold and < 250 ms, p99 < 600 ms",
		ok:   func(r Row) bool { return r.Ratio <= 0.1 && r.Median < 250 && ms(p99) < 600 && warm.unpooled == 0 },
	})
	r.Note = fmt.Sprintf("p99 %.0f ms; floor: cold MCP sandbox-create (median of %d); %d of %d not from the pool; a bare `kubectl annotate` (the claim's one call) %.0f ms, `kubectl exec POD -- true` %.0f ms; %s",
		ms(p99), len(cold.times), warm.unpooled, creates, ms(median(annotates)), ms(median(execs)), ns)
	b.rows = append(b.rows, r, br)
	_, _ = lb("delete", "--pool")
	return nil
}

// creates are timed creates, and how many did not take a pooled sandbox.
type creates struct {
	times    []time.Duration
	cpu      []time.Duration // each CLI create's CPU, its children's included
	unpooled int
	last     map[string]any // the last MCP create's result
}

// mcpCreates starts an MCP server with env and makes n sandboxes through
// it (see mcpSessionCreates), then stops it.
func (b *bench) mcpCreates(ctx context.Context, dir string, env []string, prefix string, n int, every time.Duration, pooled bool) (creates, error) {
	s, err := b.startMCPEnv(ctx, dir, env)
	if err != nil {
		return creates{}, err
	}
	defer s.close()
	return b.mcpSessionCreates(ctx, s, prefix, n, every, pooled)
}

// mcpSessionCreates times n sandbox-creates through s, one started every
// `every` (or right after the last when it took longer); pooled counts
// those whose pod is not a pool's (on Kubernetes a taken pod keeps its
// pool name).
func (b *bench) mcpSessionCreates(ctx context.Context, s *mcpSession, prefix string, n int, every time.Duration, pooled bool) (creates, error) {
	var out creates
	next := time.Now()
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(next))
		next = time.Now().Add(every)
		var res map[string]any
		d, err := timed(func() error {
			var err error
			res, err = s.call(ctx, "sandbox-create", map[string]any{"name": fmt.Sprintf("%s%d", prefix, i)})
			return err
		})
		if err != nil {
			return out, err
		}
		out.times, out.last = append(out.times, d), res
		if c, _ := res["container"].(string); pooled && !strings.HasPrefix(c, "litterbox-pool-") {
			out.unpooled++
		}
	}
	return out, nil
}

// cliCreatesAtOnce starts n `litterbox create --json` at once and times
// each, and takes the CPU each used (its kubectl and git calls included):
// on a loaded machine the times are the load's, the CPU is the claim's.
func (b *bench) cliCreatesAtOnce(ctx context.Context, kr *kubeRun, prefix string, n int) (creates, error) {
	var (
		out  creates
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o []byte
			var cpu time.Duration
			d, err := timed(func() error {
				var err error
				o, cpu, err = kr.lbCPU(ctx, "create", "--json", fmt.Sprintf("%s%d", prefix, i))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out.times = append(out.times, d)
			out.cpu = append(out.cpu, cpu)
			var c struct{ Pooled bool }
			if json.Unmarshal(o, &c) != nil || !c.Pooled {
				out.unpooled++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return out, fmt.Errorf("%d of %d creates at once failed: %v", len(errs), n, errs[0])
	}
	return out, nil
}

// deleteAll deletes the sandboxes prefix0 to prefix(n-1), two at a time;
// one already gone is no error.
func deleteAll(lb func(...string) ([]byte, error), prefix string, n int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			_, _ = lb("delete", "--force", fmt.Sprintf("%s%d", prefix, i))
		}()
	}
	wg.Wait()
}

// waitPool waits until the repository's pool holds size ready members.
func waitPool(ctx context.Context, lb func(...string) ([]byte, error), size int) error {
	want := fmt.Sprintf("%d ready, %d in all", size, size)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := lb("pool")
		if err == nil && strings.Contains(string(out), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the warm pool did not reach %d ready within 5 minutes: %s", size, firstLine(string(out)))
		}
		time.Sleep(time.Second)
	}
}

// quantile is the nearest-rank q-quantile of d (q 1 is the slowest).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
