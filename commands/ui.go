package commands

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/ui"
)

// UI is the terminal UI.
type UI struct {
	AllRepos bool          `name:"all-repos" help:"Show the sandboxes of every repository, not just this one."`
	Refresh  time.Duration `name:"refresh" default:"15s" help:"How often to ask the engine when nothing says that a sandbox changed (what litterbox itself does shows at once); at least 1s."`
}

// Validate refuses a refresh faster than the UI asks the engine at most.
func (u *UI) Validate() error {
	if u.Refresh < time.Second {
		return errors.New("--refresh must be at least 1s")
	}
	return nil
}

// Run shows the UI until q. The service's log lines are held meanwhile
// (they would tear the screen) and printed once it is gone.
func (u *UI) Run(ctx context.Context, env *Env) error {
	o := ui.Options{AllRepos: u.AllRepos, Refresh: u.Refresh, Input: os.Stdin, Output: env.Stdout}
	// The sandboxes left idle are paused while it shows.
	watch, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	r, err := env.RepoWatched(watch)
	switch {
	case err == nil:
		o.Repo = r
	case errors.Is(err, git.ErrNotRepository) && !u.AllRepos:
		return fmt.Errorf("%w; `litterbox ui --all-repos` shows the sandboxes of every repository", err)
	case !errors.Is(err, git.ErrNotRepository):
		return err
	}
	if !isTerminal(os.Stdin) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return errors.New("litterbox ui needs a terminal to read keys from; in a script, use `litterbox watch` or `litterbox list`")
		}
		defer tty.Close()
		o.Input = tty
	}
	held := &heldLog{}
	env.Sandboxes.Log().SetOutput(held)
	defer func() {
		env.Sandboxes.Log().SetOutput(env.Stderr)
		held.flush(env.Stderr)
	}()
	return ui.Run(ctx, env.Sandboxes, o)
}

// heldLog keeps the last log lines written while the UI has the screen.
type heldLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const heldLogMax = 64 << 10

func (h *heldLog) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Write(p)
	if over := h.buf.Len() - heldLogMax; over > 0 {
		h.buf.Next(over)
	}
	return len(p), nil
}

func (h *heldLog) flush(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.buf.WriteTo(w)
}
