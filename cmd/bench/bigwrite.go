package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// bigShape is one big-file case: Files files of MiB mebibytes each, written
// in one command, then snapshotted.
type bigShape struct {
	Files, MiB int
}

func (s bigShape) String() string { return fmt.Sprintf("%d x %d MiB", s.Files, s.MiB) }

// parseBigShapes reads "19x48,4x48" into shapes.
func parseBigShapes(s string) ([]bigShape, error) {
	var out []bigShape
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, m, ok := strings.Cut(f, "x")
		files, err1 := strconv.Atoi(n)
		mib, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || files < 1 || mib < 1 {
			return nil, fmt.Errorf("bad -bigwrite entry %q: want FILESxMIB, e.g. 19x48", f)
		}
		out = append(out, bigShape{files, mib})
	}
	return out, nil
}

// objectCounts are the figures of `git count-objects -v` that say where a
// write went: loose objects or packs.
type objectCounts struct {
	Loose     int     // loose objects
	LooseMiB  float64 // their size on disk
	PackedMiB float64 // size of all packs
}

func countObjects(ctx context.Context, dir string) (objectCounts, error) {
	out, err := proc{args: []string{"git", "count-objects", "-v"}, dir: dir}.run(ctx)
	if err != nil {
		return objectCounts{}, err
	}
	var c objectCounts
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch k {
		case "count":
			c.Loose = int(n)
		case "size":
			c.LooseMiB = n / 1024
		case "size-pack":
			c.PackedMiB = n / 1024
		}
	}
	return c, nil
}

// caseBigWrite writes big files of random bytes in one command and measures
// the snapshot that records them: the peak resident size of the litterbox
// process (its rusage, children excluded: git and docker are separate
// processes), and where the objects went (loose or packed). Resident size
// should not grow with the number or the size of the files.
func (b *bench) caseBigWrite(ctx context.Context) error {
	dir, err := b.repo(ctx, b.small)
	if err != nil {
		return err
	}
	for i, shape := range b.bigShapes {
		name := fmt.Sprintf("bw%d", i)
		if _, err := b.litterbox(dir, "create", name).run(ctx); err != nil {
			return err
		}
		row, err := b.bigWrite(ctx, dir, name, shape)
		b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		b.rows = append(b.rows, row...)
	}
	return nil
}

func (b *bench) bigWrite(ctx context.Context, dir, name string, shape bigShape) ([]Row, error) {
	write := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do i=$((i+1)); head -c %d /dev/urandom > %s/big$i.bin || exit 1; done`, shape.Files, shape.MiB<<20, api.Workdir)
	if _, err := b.litterbox(dir, "exec", name, "--", "sh", "-c", write).run(ctx); err != nil {
		return nil, err
	}
	before, err := countObjects(ctx, dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.bin, "snapshot", name)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), b.env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("litterbox snapshot: %w: %s", err, out)
	}
	if !strings.Contains(string(out), "Committed") {
		return nil, fmt.Errorf("litterbox snapshot committed nothing: %s", out)
	}
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024 // KiB on Linux
	after, err := countObjects(ctx, dir)
	if err != nil {
		return nil, err
	}
	written := float64(shape.Files * shape.MiB)
	prefix := "big write " + shape.String() + ": "
	return []Row{
		judge(Row{Case: prefix + "peak RSS", Median: rss, Unit: "MiB", Runs: 1, Note: fmt.Sprintf("snapshot took %.1f s", took.Seconds())}, target{"< 100 MiB", func(r Row) bool { return r.Median < 100 }}),
		judge(Row{Case: prefix + "loose objects", Median: after.LooseMiB - before.LooseMiB, Unit: "MiB", Runs: 1, Note: fmt.Sprintf("%+d loose objects", after.Loose-before.Loose)}, target{fmt.Sprintf("< %.0f MiB (10%% of the write)", written/10), func(r Row) bool { return r.Median < written/10 }}),
		judge(Row{Case: prefix + "packed", Median: after.PackedMiB - before.PackedMiB, Unit: "MiB", Runs: 1}, info),
	}, nil
}
