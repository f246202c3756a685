package commands

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Doctor checks what litterbox needs on this machine.
type Doctor struct {
	JSON bool `name:"json" help:"Print JSON: {\"checks\": [{name, status, detail, fix}], \"ok\": bool}."`
}

// Run prints one line per check, with what to do under each that failed
// or warns, and exits 1 when any check failed.
func (d *Doctor) Run(ctx context.Context, env *Env) error {
	checks := env.Sandboxes.Doctor(ctx, env.RepoDir)
	ok := true
	for _, c := range checks {
		if c.Status == api.CheckFail {
			ok = false
		}
	}
	if d.JSON {
		if err := writeJSON(env, map[string]any{"checks": checks, "ok": ok}); err != nil {
			return err
		}
	} else {
		tw := newTable(env.Stdout)
		for _, c := range checks {
			line := fmt.Sprintf("%s\t%s\t%s", c.Status, c.Name, termtext.EscapeText(c.Detail))
			if c.Fix != "" && c.Status != api.CheckOK {
				line += "; to fix: " + termtext.EscapeText(c.Fix)
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	if !ok {
		return &ExitCodeError{Code: 1}
	}
	return nil
}
