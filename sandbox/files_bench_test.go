package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// BenchmarkFiles measures the agent file operations on a sandbox of a
// 2,500-file repository, each beside its floor: a bare `docker exec C true`
// for bash, busybox grep run with docker exec for grep. Run with
// go test -run XXX -bench Files ./sandbox/ (needs Docker).
func BenchmarkFiles(b *testing.B) {
	enginetest.DockerOrSkip(b)
	ctx := context.Background()
	dir := b.TempDir()
	repo := filepath.Join(dir, fmt.Sprintf("bench-%d", os.Getpid()))
	for i := range 2500 {
		p := filepath.Join(repo, fmt.Sprintf("pkg%02d/sub%d/file%04d.txt", i%50, i%5, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		body := strings.Repeat(fmt.Sprintf("line of file %d with some words in it\n", i), 40)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	enginetest.CommitRepo(b, repo)
	logger := log.New(os.Stderr)
	logger.SetLevel(log.ErrorLevel)
	p, err := docker.New(docker.Options{Runner: runner.Exec{Log: logger}})
	if err != nil {
		b.Fatal(err)
	}
	s := New(p, runner.Exec{Log: logger}, logger, api.Options{})
	s.c.ExtraLabels["dev.litterbox.test"] = fmt.Sprintf("bench-%d", os.Getpid())
	r, err := s.OpenRepo(ctx, repo)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Create(ctx, r, "bench", api.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer s.Delete(context.Background(), r, "bench", true)
	h, err := s.Handle(ctx, r, "bench")
	if err != nil {
		b.Fatal(err)
	}
	ten := bytes.Repeat([]byte("0123456789abcdef\n"), 600)

	b.Run("floor-docker-exec-true", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.c.Provider.Exec(ctx, provider.ExecRequest{Ref: h.Ref, Cmd: []string{"true"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bash-true", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Bash(ctx, h, "true", api.BashOptions{Message: "bash: true"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("write-10KB", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.Write(ctx, h, "bench/ten.txt", ten); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-10KB", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Read(ctx, h, "bench/ten.txt", api.ReadOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("floor-busybox-grep", func(b *testing.B) {
		for b.Loop() {
			_, err := s.c.Provider.Exec(ctx, provider.ExecRequest{Ref: h.Ref, Cmd: []string{"grep", "-rnE", "file 12[0-9]{2} ", "/src"}})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grep", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Grep(ctx, h, "file 12[0-9]{2} ", ".", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("glob", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Glob(ctx, h, "**/sub1/*.txt", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
