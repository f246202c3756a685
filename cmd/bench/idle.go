package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// caseIdle times the first MCP call on a sandbox the idle pause paused:
// it resumes the sandbox and its gateway, then runs. Its floor is
// the same call on the running sandbox, right after; the target is what the
// resume may add.
func (b *bench) caseIdle(ctx context.Context) error {
	dir, r, err := b.openRepo(ctx, b.small)
	if err != nil {
		return err
	}
	const name = "ir"
	if _, err := b.litterbox(dir, "create", "--idle", "1s", name).run(ctx); err != nil {
		return err
	}
	defer b.litterbox(dir, "delete", "--force", name).run(context.WithoutCancel(ctx))
	// The server pauses the sandbox once it has been idle for a second.
	s, err := b.startMCP(ctx, dir)
	if err != nil {
		return err
	}
	defer s.close()
	args := map[string]any{"sandbox": name, "path": "."}
	var resumed, running, resumes []time.Duration
	for i := 0; i <= b.n; i++ {
		if err := waitIdlePaused(r, name, 30*time.Second); err != nil {
			return err
		}
		d, out, err := s.timedCall(ctx, "ls", args)
		if err != nil {
			return err
		}
		t, _ := out["_text"].(string)
		m := resumedRE.FindStringSubmatch(t)
		if m == nil {
			return fmt.Errorf("ls on the paused sandbox did not say it resumed it: %q", t)
		}
		ms, _ := strconv.Atoi(m[1])
		d0, _, err := s.timedCall(ctx, "ls", args)
		if err != nil {
			return err
		}
		if i > 0 {
			resumed, running = append(resumed, d), append(running, d0)
			resumes = append(resumes, time.Duration(ms)*time.Millisecond)
		}
	}
	rw := row("mcp ls after an idle pause", resumed, running, maxOverhead(100))
	rw.Note = fmt.Sprintf("the resume itself: %.0f ms (median, as the result says)", float64(median(resumes).Milliseconds()))
	b.rows = append(b.rows, rw)
	return nil
}

// resumedRE finds how long the resume took in a result's note.
var resumedRE = regexp.MustCompile(`it was resumed for this call \((\d+) ms\)`)

// waitIdlePaused waits until sandbox name's activity record ends with the
// idle pause's event: it is written once the sandbox and its gateway are
// paused.
func waitIdlePaused(r *api.Repo, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		evs, err := activity.Last(activity.Dir(r.Git.CommonDir), name, 1)
		if err != nil {
			return err
		}
		if len(evs) == 1 && evs[0].Kind == activity.KindPause && evs[0].By == activity.ByLitterbox {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("sandbox %s was not paused after %s idle", name, limit)
}
