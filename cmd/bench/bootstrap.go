package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// bootstrapCases are the bootstrap group's rows, the big repository's and the small one's.
var bootstrapCases = []string{"create 2500 files with a 10 MB .worktreeinclude set", "create 60 files with a 10 MB .worktreeinclude set"}

// caseBootstrap times a create of the big and of the small repository whose
// .worktreeinclude names 10 MB of ignored files (20 of 512 KB under build/),
// against a create of the same repository without the .worktreeinclude,
// interleaved.
func (b *bench) caseBootstrap(ctx context.Context) error {
	for i, spec := range []repoSpec{b.big, b.small} {
		if err := b.bootstrap(ctx, spec, bootstrapCases[i]); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) bootstrap(ctx context.Context, spec repoSpec, name string) error {
	dir := filepath.Join(b.tmp, fmt.Sprintf("bootstrap%d", spec.Files))
	if err := makeRepo(ctx, dir, spec); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(3, 5))
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		return err
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, "build", fmt.Sprintf("part%02d.bin", i)), textOf(rng, 512<<10), 0o644); err != nil {
			return err
		}
	}
	include := filepath.Join(dir, ".worktreeinclude")
	var with, without []time.Duration
	// Run 0 warms the page cache and docker; it is not counted.
	for i := 0; i <= b.n; i++ {
		for k, on := range []bool{i%2 == 0, i%2 != 0} {
			if on {
				if err := os.WriteFile(include, []byte("build/\n"), 0o644); err != nil {
					return err
				}
			} else if err := os.Remove(include); err != nil && !os.IsNotExist(err) {
				return err
			}
			sb := fmt.Sprintf("bs%d-%d", i, k)
			var out []byte
			d, err := timed(func() (err error) { out, err = b.litterbox(dir, "create", sb).run(ctx); return err })
			if err != nil {
				return err
			}
			if copied := bytes.Contains(out, []byte("copied in: build/part19.bin")); copied != on {
				return fmt.Errorf("create %s (with .worktreeinclude: %v) copied build/ in: %v:\n%s", sb, on, copied, out)
			}
			if _, err := b.litterbox(dir, "delete", "--force", sb).run(ctx); err != nil {
				return err
			}
			if i == 0 {
				continue
			}
			if on {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	b.rows = append(b.rows, row(name, with, without, maxRatio(1.2)))
	return nil
}
