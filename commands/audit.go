package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Audit checks the activity records (docs/security.md).
type Audit struct {
	Verify AuditVerify `cmd:"" help:"Walk the chains of the activity records (each line carries the hash of the one before) and name the first line of each that does not follow: a line changed or taken out, a cut at the end, a rotated file gone missing. Exit 1 when one does not."`
}

// AuditVerify walks the chains of the records of the repository's
// sandboxes, or of the one named.
type AuditVerify struct {
	Name string `arg:"" optional:"" predictor:"sandbox" help:"The sandbox whose record to verify (default: every record of the repository, those of deleted sandboxes too)."`
	JSON bool   `name:"json" help:"Print each record's report as JSON."`
}

// Validate refuses a bad name before anything runs.
func (a *AuditVerify) Validate() error {
	if a.Name == "" {
		return nil
	}
	_, err := api.Slugify(a.Name)
	return err
}

// Run verifies the records and says what it found: one line a record on
// stdout, and, when one does not verify, exit 1.
func (a *AuditVerify) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	dir := activity.Dir(r.Git.CommonDir)
	names, err := activity.Audited(dir)
	if err != nil {
		return err
	}
	if a.Name != "" {
		slug, _ := api.Slugify(a.Name)
		if !slices.Contains(names, slug) {
			return &api.Error{Kind: api.ErrBadArgument, Msg: fmt.Sprintf("no sandbox named %s has recorded anything in %s: `litterbox audit verify` with no name verifies every record there is", a.Name, r.Root())}
		}
		names = []string{slug}
	}
	var reports []activity.Report
	bad := 0
	for _, name := range names {
		rep, err := activity.Verify(dir, name)
		if err != nil {
			return err
		}
		if !rep.OK() {
			bad++
		}
		reports = append(reports, rep)
	}
	if a.JSON {
		if err := writeJSON(env, map[string]any{"repo": r.Root(), "records": reports, "ok": bad == 0}); err != nil {
			return err
		}
	} else {
		for _, rep := range reports {
			env.outf("%s\n", auditLine(rep))
		}
	}
	if bad > 0 {
		env.errf("litterbox audit verify: %d of %d record(s) in %s do not verify: a line was changed, taken out or cut, or a file removed, by something other than litterbox (docs/security.md says what the chain can tell)\n", bad, len(reports), dir)
		return &ExitCodeError{Code: 1}
	}
	if len(reports) == 0 {
		env.errf("litterbox audit verify: no activity record in %s\n", r.Root())
	}
	return nil
}

// auditLine says in one line what Verify found of a record: each chain's
// lines, or where it breaks, and its notes.
func auditLine(rep activity.Report) string {
	status := "ok"
	if !rep.OK() {
		status = "BROKEN"
	}
	var parts []string
	for _, c := range rep.Chains {
		var what string
		switch {
		case c.Broken != "":
			what = "broken: " + c.Broken
		case c.First > 0:
			what = fmt.Sprintf("%s, events %d to %d", plural(c.Lines, "line", "lines"), c.First, c.Last)
		default:
			what = plural(c.Lines, "line", "lines")
		}
		if c.Unlinked > 0 && c.Broken == "" {
			what += fmt.Sprintf(" (%d before the chain, not checked)", c.Unlinked)
		}
		for _, n := range c.Notes {
			what += "; " + n
		}
		parts = append(parts, c.Name+": "+what)
	}
	return termtext.EscapeText(fmt.Sprintf("%-6s %s  %s", status, rep.Sandbox, strings.Join(parts, "; ")))
}
