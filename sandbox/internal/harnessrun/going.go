package harnessrun

import (
	"context"
	"strings"

	"github.com/litterbox-dev/litterbox/harness"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// runGoing is a process of a run, found by harness.RunMark.
type runGoing struct{ pid, name string }

// runsGoing are the processes of sandbox hd that a run started (they
// carry harness.RunMark), read as the sandbox's user: what they say is the
// agent's, so only a pid of digits and a mark of Mark's letters are kept.
// A failure to look finds none.
func (hr *Runner) runsGoing(ctx context.Context, hd *api.Handle) []runGoing {
	script := `for d in /proc/[0-9]*; do n=$(grep -ao '` + harness.RunMark + `=[A-Za-z0-9._-]*' "$d/environ" 2>/dev/null | head -n 1) && [ -n "$n" ] && echo "${d#/proc/} ${n#*=}"; done; true`
	res, err := hr.ExecCapped(ctx, provider.ExecRequest{Ref: hd.Ref, Cmd: []string{"sh", "-c", script}}, 64<<10)
	if err != nil {
		return nil
	}
	var runs []runGoing
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		pid, name, ok := strings.Cut(line, " ")
		if ok && len(runs) < 20 && validRunField(pid, "0123456789") && validRunField(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") {
			runs = append(runs, runGoing{pid, name})
		}
	}
	return runs
}

// validRunField: 1 to 64 bytes, each of allowed.
func validRunField(s, allowed string) bool {
	return len(s) > 0 && len(s) <= 64 && strings.Trim(s, allowed) == ""
}
