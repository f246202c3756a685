package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/harness"
)

// runCase is the row of caseRun.
const runCase = "run codex -- --version, 500 files (floor: create + a bare docker exec of it)"

// caseRun times `litterbox run codex NAME -- --version` (a new sandbox,
// the build mounted, the key bound, the harness run, the last snapshot)
// against its floor: `litterbox create NAME` plus a bare `docker exec` of
// the same binary in a sandbox that holds it (target: within 1.3x).
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
	return b.runWrites(ctx, dir)
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

// runWriteCase is the row of runWrites.
const runWriteCase = "run: a file written is on the branch (median from the write)"

// runWrites times how long a file a harness writes takes to be on the
// sandbox's branch (target: within 2 s, median): a `litterbox run --cmd
// sh` writes b.n files 1.5 s apart, once the change journal listens, each
// holding the uptime at its write (/proc/uptime: the container's is the
// host's kernel's clock); the host polls the branch every 20 ms and reads
// its own uptime when a file appears.
func (b *bench) runWrites(ctx context.Context, dir string) error {
	n := max(b.n, 3)
	script := fmt.Sprintf(`until [ -S /tmp/.litterbox-journal/sock ]; do sleep 0.1; done; sleep 1; for i in $(seq %d); do cut -d' ' -f1 /proc/uptime > w$i; sleep 1.5; done`, n)
	run := exec.CommandContext(ctx, b.bin, "run", "--cmd", "sh", "writes", "--", "-c", script)
	run.Dir, run.Env = dir, append(os.Environ(), b.env...)
	if err := run.Start(); err != nil {
		return err
	}
	ran := make(chan error, 1)
	go func() { ran <- run.Wait() }()
	defer b.litterbox(dir, "delete", "--force", "writes").run(context.WithoutCancel(ctx))
	var lat []time.Duration
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case err := <-ran:
			return fmt.Errorf("litterbox run of the writes ended with %d of %d seen on the branch: %v", len(seen), n, err)
		case <-time.After(20 * time.Millisecond):
		}
		out, err := exec.CommandContext(ctx, "git", "-C", dir, "ls-tree", "--name-only", "litterbox/writes").Output()
		if err != nil {
			continue // no branch yet
		}
		now, err := uptime()
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(out)) {
			if !strings.HasPrefix(f, "w") || seen[f] {
				continue
			}
			seen[f] = true
			content, err := exec.CommandContext(ctx, "git", "-C", dir, "show", "litterbox/writes:"+f).Output()
			if err != nil {
				return err
			}
			at, err := parseUptime(string(content))
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			lat = append(lat, now-at)
		}
	}
	if err := <-ran; err != nil {
		return fmt.Errorf("litterbox run of the writes: %w", err)
	}
	slices.Sort(lat)
	b.rows = append(b.rows, withNote(row(runWriteCase, lat, nil, under(2000)),
		fmt.Sprintf("one file every 1.5 s, the branch polled every 20 ms; quiet period 500 ms; slowest %.0f ms", ms(lat[len(lat)-1]))))
	return nil
}

// uptime is the host's /proc/uptime.
func uptime() (time.Duration, error) {
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	return parseUptime(string(data))
}

// parseUptime reads the first field of /proc/uptime (seconds, to the
// hundredth).
func parseUptime(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("no uptime in %q", s)
	}
	return time.ParseDuration(f[0] + "s")
}
