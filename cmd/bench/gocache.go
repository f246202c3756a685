package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/egresstest"
)

// goCacheCase is the go-cache group's row.
var goCacheCase = []string{"go mod download, 50 modules, shared cache"}

// goImage is the Debian image with Go of scripts/ensure-go-image.sh.
const goImage = "litterbox-test/go:bookworm"

// caseGoCache times a second sandbox's `go mod download` of a project of 50
// modules with the repository's shared Go cache ([cache] use = ["go"]),
// against the first sandbox's, which fetched them from a Go module proxy of
// the egress test internet through its gateway. Each run starts from an
// emptied cache.
func (b *bench) caseGoCache(ctx context.Context) error {
	if runCmd(ctx, "docker", "image", "inspect", goImage) != nil {
		b.skip(goCacheCase, "needs "+goImage+": run scripts/ensure-go-image.sh")
		return nil
	}
	return b.withInternet(goCacheCase, nil, func(in *egresstest.Internet) error { return b.goCache(ctx, in) })
}

// goCache is caseGoCache's body, on the test internet in.
func (b *bench) goCache(ctx context.Context, in *egresstest.Internet) error {
	proxy := egresstest.NewGoProxy(50)
	in.Mux.Handle("/goproxy/", proxy.Handler("/goproxy/", ""))

	dir := filepath.Join(b.tmp, "gocache")
	files := map[string]string{
		"go.mod":     proxy.GoMod(),
		"main.go":    "package main\n\nfunc main() {}\n",
		".gitignore": ".litterbox.local.toml\n",
		".litterbox.local.toml": fmt.Sprintf("image = %q\n\n[network]\nallow = [%q]\nregistries = false\n\n[cache]\nuse = [\"go\"]\n",
			goImage, in.Addr(10)),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=bench", "-c", "user.email=bench@example.test", "commit", "-qm", "init"}} {
		if out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	for _, name := range []string{"gc1", "gc2"} {
		if _, err := b.litterbox(dir, "create", name).run(ctx); err != nil {
			return err
		}
		defer b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
	}
	// The download is timed inside the sandbox, so that the row is what the
	// cache saves and not the `litterbox exec` around it (the note gives
	// that whole, too).
	var whole [2][]time.Duration
	download := func(k int, name string) (time.Duration, error) {
		var out []byte
		d, err := timed(func() (err error) {
			out, err = b.litterbox(dir, "exec", name, "--", "env", "GOPROXY=http://"+in.Addr(10)+"/goproxy", "GOSUMDB=off",
				"sh", "-c", `s=$(date +%s%N) && go mod download && echo $(( $(date +%s%N) - s ))`).run(ctx)
			return err
		})
		if err != nil {
			return 0, err
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("go mod download in %s: no time: %q", name, out)
		}
		whole[k] = append(whole[k], d)
		return time.Duration(ns), nil
	}
	var first, second []time.Duration
	for i := 0; i < b.n; i++ {
		if _, err := b.litterbox(dir, "cache", "clear", "go").run(ctx); err != nil {
			return err
		}
		asked := proxy.Requests()
		d1, err := download(0, "gc1")
		if err != nil {
			return err
		}
		fetched := proxy.Requests() - asked
		d2, err := download(1, "gc2")
		if err != nil {
			return err
		}
		if again := proxy.Requests() - asked - fetched; again != 0 || fetched == 0 {
			return fmt.Errorf("the first download asked the proxy %d times, the second %d: the cache is not shared", fetched, again)
		}
		first, second = append(first, d1), append(second, d2)
	}
	rw := row(goCacheCase[0], second, first, target{"< 0.2x the first sandbox's", func(r Row) bool { return r.Floor > 0 && r.Ratio < 0.2 }})
	rw.Note = fmt.Sprintf("timed in the sandbox; floor: the first sandbox's, from the proxy through its gateway; with litterbox exec around them: %.0f ms, floor %.0f ms",
		ms(median(whole[1])), ms(median(whole[0])))
	b.rows = append(b.rows, rw)
	return nil
}
