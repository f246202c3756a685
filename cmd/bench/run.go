package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/harness"
)

// runCase is the row of caseRun.
const runCase = "run codex -- --version, 500 files (floor: create + a bare docker exec of it)"

// caseRun times `litterbox run codex NAME -- --version` (a new sandbox,
// the build mounted, the key bound, the harness run, the last snapshot)
// against its floor: `litterbox create NAME` plus a bare `docker exec` of
// the same binary in a sandbox that holds it (issue 30: within 1.3x).
// Interleaved, after one untimed round each; each sandbox deleted,
// untimed. It needs Codex's build in the cache (scripts/ensure-harnesses.sh).
func (b *bench) caseRun(ctx context.Context) error {
	h, _ := harness.Lookup("codex")
	build, err := h.Build(harness.DefaultCache(os.Getenv))
	if err != nil {
		b.rows = append(b.rows, na(runCase, "no Codex build: "+firstLine(err.Error())))
		return nil
	}
	if !b.has(ctx, "run") {
		b.rows = append(b.rows, na(runCase, "no run command"))
		return nil
	}
	dir, err := b.repo(ctx, repoSpec{Files: 500, Bytes: 500 << 10})
	if err != nil {
		return err
	}
	env := append(b.env, "OPENAI_API_KEY=sk-bench-0123456789", "LITTERBOX_HARNESS_CACHE="+filepath.Dir(build))
	lb := func(args ...string) proc { return proc{args: append([]string{b.bin}, args...), dir: dir, env: env} }
	var runs, creates, execs []time.Duration
	for i := 0; i <= b.n; i++ {
		rn, cn := fmt.Sprintf("run%d", i), fmt.Sprintf("cr%d", i)
		dr, err := timed(func() error { _, err := lb("run", "codex", rn, "--", "--version").run(ctx); return err })
		if err != nil {
			return err
		}
		dc, err := timed(func() error { _, err := lb("create", cn).run(ctx); return err })
		if err != nil {
			return err
		}
		container, err := b.containerOf(ctx, lb, rn)
		if err != nil {
			return err
		}
		de, err := timed(func() error {
			return exec.CommandContext(ctx, "docker", "exec", container, harness.Mount+"/"+h.Exe, "--version").Run()
		})
		if err != nil {
			return fmt.Errorf("docker exec %s codex --version: %w", container, err)
		}
		for _, n := range []string{rn, cn} {
			if _, err := lb("delete", "--force", n).run(ctx); err != nil {
				return err
			}
		}
		if i > 0 { // the first round warms the page cache and the engine
			runs, creates, execs = append(runs, dr), append(creates, dc), append(execs, de)
		}
	}
	floor := make([]time.Duration, len(creates))
	for i := range creates {
		floor[i] = creates[i] + execs[i]
	}
	rw := row(runCase, runs, floor, maxRatio(1.3))
	rw.Note = fmt.Sprintf("create %.0f ms, docker exec %.0f ms", ms(median(creates)), ms(median(execs)))
	b.rows = append(b.rows, rw)
	return nil
}

// containerOf is the container of sandbox name, from list --json.
func (b *bench) containerOf(ctx context.Context, lb func(...string) proc, name string) (string, error) {
	out, err := lb("list", "--json").run(ctx)
	if err != nil {
		return "", err
	}
	var l struct {
		Sandboxes []struct{ Name, Container string }
	}
	if err := json.Unmarshal(out, &l); err != nil {
		return "", err
	}
	for _, sb := range l.Sandboxes {
		if sb.Name == name && sb.Container != "" {
			return sb.Container, nil
		}
	}
	return "", fmt.Errorf("list --json has no container for %s: %s", name, strings.TrimSpace(string(out)))
}
