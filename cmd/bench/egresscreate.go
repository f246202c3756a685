package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// egressCreateCases are the rows of egressCreates: what a user waits for.
var egressCreateCases = []string{
	"egress litterbox create 500 files: confined / open",
	"egress litterbox create from a warm pool 500 files: confined / open",
	"egress floor: two docker runs at once / one",
}

// egressCreates times `litterbox create` (then, untimed, delete) through the
// binary, confined (the default, egress = "allowlist") against egress =
// "open" in the same repository, interleaved, each way first in turn; then
// the same taking a member of the warm pool (`litterbox pool 1` before each,
// untimed). The floor of a confined create is two docker runs where an open
// one needs one: the last row times that, bare. No root needed.
func (b *bench) egressCreates(ctx context.Context) error {
	spec := repoSpec{Files: 500, Bytes: 500 << 10}
	dir, err := b.repo(ctx, spec)
	if err != nil {
		return err
	}
	local := filepath.Join(dir, ".litterbox.local.toml")
	defer os.Remove(local)
	setOpen := func(open bool) error {
		if open {
			return os.WriteFile(local, []byte("[network]\negress = \"open\"\n"), 0o644)
		}
		if err := os.Remove(local); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	// one times a create of name, confined or open; pooled fills the pool
	// with one member first and counts the creates that did not take it.
	missed := 0
	one := func(name string, open, pooled bool) (time.Duration, error) {
		if err := setOpen(open); err != nil {
			return 0, err
		}
		if pooled {
			if _, err := b.litterbox(dir, "pool", "1").run(ctx); err != nil {
				return 0, err
			}
		}
		var out []byte
		d, err := timed(func() error {
			var err error
			out, err = b.litterbox(dir, "create", "--json", name).run(ctx)
			return err
		})
		if err != nil {
			return 0, err
		}
		del, err := b.litterbox(dir, "delete", name).run(ctx)
		if err != nil {
			return 0, err
		}
		// Delete names what it removed: a confined sandbox's gateway too.
		if gw := strings.Contains(string(del), "-gw"); gw == open {
			return 0, fmt.Errorf("create %s (open %v) made the wrong way out: delete said %s", name, open, del)
		}
		if pooled && !strings.Contains(string(out), `"pooled": true`) {
			missed++
		}
		return d, nil
	}
	defer b.litterbox(dir, "delete", "--pool").run(context.WithoutCancel(ctx))
	for _, pooled := range []bool{false, true} {
		if pooled && !b.has(ctx, "pool") {
			b.rows = append(b.rows, na(egressCreateCases[1], "no pool command"))
			continue
		}
		var confined, open []time.Duration
		for i := 0; i <= b.n; i++ {
			ways := []bool{false, true}
			if i%2 == 1 {
				ways = []bool{true, false}
			}
			for _, o := range ways {
				d, err := one(fmt.Sprintf("eg%v%v%d", pooled, o, i), o, pooled)
				if err != nil {
					return err
				}
				if i == 0 {
					continue // warms the page cache and the engine
				}
				if o {
					open = append(open, d)
				} else {
					confined = append(confined, d)
				}
			}
		}
		name := egressCreateCases[0]
		if pooled {
			name = egressCreateCases[1]
			_ = setOpen(false)
			_, _ = b.litterbox(dir, "delete", "--pool").run(ctx)
		}
		rw := row(name, confined, open, target{"<= 1.05x open", func(r Row) bool { return r.Ratio <= 1.05 && missed == 0 }})
		rw.Note = fmt.Sprintf("%.0f ms confined, %.0f ms open", ms(median(confined)), ms(median(open)))
		if missed > 0 {
			rw.Note += fmt.Sprintf("; %d of %d creates made a sandbox instead of taking the pool's", missed, 2*(b.n+1))
		}
		missed = 0
		b.rows = append(b.rows, rw)
	}
	// The floor: a confined create makes two containers (the sandbox and
	// its gateway, at once) where an open one makes one.
	var two, single []time.Duration
	run := func() ([]byte, error) {
		return proc{args: []string{"docker", "run", "-d", "--label", b.label, api.DefaultImage, "sleep", "infinity"}}.run(ctx)
	}
	for i := 0; i <= b.n; i++ {
		var ids []string
		var idsMu sync.Mutex
		d1, err := timed(func() error {
			id, err := run()
			ids = append(ids, strings.TrimSpace(string(id)))
			return err
		})
		if err != nil {
			return err
		}
		d2, err := timed(func() error {
			errs := make(chan error, 2)
			for range 2 {
				go func() {
					id, err := run()
					if err == nil {
						errs <- nil
						idsMu.Lock()
						ids = append(ids, strings.TrimSpace(string(id)))
						idsMu.Unlock()
						return
					}
					errs <- err
				}()
			}
			return cmpErr(<-errs, <-errs)
		})
		if rerr := runCmd(context.WithoutCancel(ctx), append([]string{"docker", "rm", "-f"}, ids...)...); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
		if i > 0 {
			two, single = append(two, d2), append(single, d1)
		}
	}
	rw := row(egressCreateCases[2], two, single, info)
	rw.Note = fmt.Sprintf("bare `docker run -d busybox`: two at once %.0f ms, one %.0f ms", ms(median(two)), ms(median(single)))
	b.rows = append(b.rows, rw)
	return nil
}
