package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// repoSpec is the shape of a synthetic repository.
type repoSpec struct {
	Files int   // number of tracked files, all included
	Bytes int64 // total size of their content, roughly
}

func (s repoSpec) String() string {
	return fmt.Sprintf("%d files", s.Files)
}

// Fixed files every synthetic repository holds, so cases can name them.
const (
	readFile   = "bench/ten-k.txt" // exactly tenK bytes of text
	tenK       = 10 * 1024
	needle     = "LITTERBOX_NEEDLE" // in every needleEvery-th file, once
	needleEvry = 50
)

var words = strings.Fields(`func return struct interface package import type var const if else for range
switch case default go defer select chan map string int byte error nil true false len append make new copy
delete panic recover context value index count total buffer reader writer handle request response server
client config option result status branch commit sandbox docker container network volume image layer`)

// makeRepo writes a deterministic repository of spec's shape under dir and
// commits it. The same spec always gives the same tree (and commit id).
func makeRepo(ctx context.Context, dir string, spec repoSpec) error {
	rng := rand.New(rand.NewPCG(uint64(spec.Files), uint64(spec.Bytes)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fixed := map[string][]byte{
		"README.md":  []byte("# synthetic repository for litterbox bench\n"),
		".gitignore": []byte("build/\n*.o\n"),
		readFile:     textOf(rand.New(rand.NewPCG(1, 2)), tenK),
	}
	n := spec.Files - len(fixed)
	if n < 1 {
		n = 1
	}
	// A mix of sizes: many small files, some medium, a few large, scaled so
	// the total is spec.Bytes.
	weights := make([]float64, n)
	var sum float64
	for i := range weights {
		switch p := rng.Float64(); {
		case p < 0.6:
			weights[i] = 0.2 + 0.3*rng.Float64()
		case p < 0.95:
			weights[i] = 1 + 2*rng.Float64()
		default:
			weights[i] = 5 + 15*rng.Float64()
		}
		sum += weights[i]
	}
	budget := float64(spec.Bytes - int64(tenK))
	exts := []string{".go", ".txt", ".md", ".json", ".c"}
	for i := range n {
		// Nested layout: ~25 files per leaf, ~10 leaves per top folder.
		leaf := i / 25
		path := fmt.Sprintf("pkg%03d/sub%02d/file%05d%s", leaf/10, leaf%10, i, exts[i%len(exts)])
		size := int(budget * weights[i] / sum)
		data := textOf(rng, size)
		if i%needleEvry == 0 {
			data = append([]byte(needle+"\n"), data...)
		}
		mode := os.FileMode(0o644)
		if i%97 == 0 {
			mode = 0o755
		}
		if err := writeFile(filepath.Join(dir, path), data, mode); err != nil {
			return err
		}
	}
	for p, data := range fixed {
		if err := writeFile(filepath.Join(dir, p), data, 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", "synthetic " + spec.String()},
	} {
		if err := gitIn(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}

// textOf returns size bytes of source-like text lines.
func textOf(rng *rand.Rand, size int) []byte {
	b := make([]byte, 0, size+16)
	col := 0
	for len(b) < size {
		w := words[rng.IntN(len(words))]
		b = append(b, w...)
		col += len(w)
		if col > 60 || rng.IntN(12) == 0 {
			b = append(b, '\n')
			col = 0
		} else {
			b = append(b, ' ')
			col++
		}
	}
	b = b[:size]
	if size > 0 {
		b[size-1] = '\n'
	}
	return b
}

// gitIn runs git in dir with a fixed identity and dates, and without the
// user's global config, so the repository is the same on every machine.
func gitIn(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.invalid", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
