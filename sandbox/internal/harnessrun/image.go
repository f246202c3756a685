package harnessrun

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/litterbox-dev/litterbox/harness"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
)

// imageCheck is the shell test of what a build needs.
var imageCheck = map[harness.Needs]string{
	harness.NeedsGlibc: `for f in /lib64/ld-linux-x86-64.so.2 /lib/ld-linux-aarch64.so.1 /lib/x86_64-linux-gnu/libc.so.6 /lib/aarch64-linux-gnu/libc.so.6 /usr/lib64/libc.so.6; do [ -e "$f" ] && exit 0; done; exit 1`,
	harness.NeedsNode:  `v=$(node --version 2>/dev/null) && v=${v#v} && [ "${v%%.*}" -ge 20 ] 2>/dev/null`,
}

// imageFor name an image that can run what a build needs.
var imageFor = map[harness.Needs]string{
	harness.NeedsGlibc: "debian:bookworm-slim (or litterbox-test/debian-python:bookworm, which scripts/ensure-debian-image.sh builds offline)",
	harness.NeedsNode:  "node:22-bookworm-slim (or litterbox-test/node:bookworm, which scripts/ensure-node-image.sh builds offline)",
}

// checkImage runs the check of what h needs in a throwaway hardened
// sandbox of image, before the sandbox is made.
func (hr *Runner) checkImage(ctx context.Context, slug string, h *harness.Harness, image string) error {
	script, ok := imageCheck[h.Needs]
	if !ok {
		return nil
	}
	// An image's content does not change under its id: a verdict that it
	// can is kept (the check costs a container, about 0.7 s here).
	var kept string
	if img, err := hr.Provider.Image(ctx, image); err == nil && img.ID != "" {
		if dir, err := hr.CacheSub("images"); err == nil {
			sum := sha256.Sum256([]byte(img.ID + "\x00" + string(h.Needs)))
			kept = filepath.Join(dir, hex.EncodeToString(sum[:16]))
			if _, err := os.Stat(kept); err == nil {
				return nil
			}
		}
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	sb, err := hr.Provider.Create(ctx, spec.Probe(hr.ExtraLabels, "run", "litterbox-run-check-"+hex.EncodeToString(b), image, provider.NetworkNone, 16<<20, 128<<20, 60*time.Second))
	if err != nil {
		return fmt.Errorf("check that %s can run %s: %w", image, h.Name, err)
	}
	defer func() {
		if err := hr.Provider.Remove(context.WithoutCancel(ctx), sb.Ref); err != nil {
			hr.Log.Warn("could not remove the image check's sandbox", "name", sb.Name, "err", err)
		}
	}()
	res, err := hr.Provider.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", script}})
	if err != nil {
		return fmt.Errorf("check that %s can run %s: %w", image, h.Name, err)
	}
	if res.ExitCode == 0 && kept != "" {
		_ = os.WriteFile(kept, []byte(image+" has "+string(h.Needs)+"\n"), 0o600)
	}
	if res.ExitCode != 0 {
		return core.NewError(api.ErrImage, "Sandbox '%s' was not created: %s needs %s, which the image %s lacks. Use an image that has it, such as %s: `litterbox run --image IMAGE %s`, or image = \"IMAGE\" in .litterbox.toml (docs/run.md). Nothing was made.", slug, h.Name, h.Needs, image, imageFor[h.Needs], h.Name)
	}
	return nil
}
