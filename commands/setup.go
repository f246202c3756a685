package commands

import (
	"context"
	"errors"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/harnessconf"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Setup writes a harness's project configuration: litterbox as its MCP
// server, and its own shell and file-writing tools turned off on the host.
type Setup struct {
	Harness string `arg:"" enum:"claude,codex,gemini,opencode" help:"The harness to set up (${enum})."`
	Print   bool   `name:"print" help:"Write nothing: print each file as setup would leave it."`
}

// setupNotes is what each harness still asks of the user, and what it
// leaves open (docs/harnesses.md says more).
var setupNotes = map[string]string{
	"claude":   "Claude Code asks once to trust the folder and to start the project's MCP server. Its Read, Grep and Glob still read the host's files.",
	"codex":    "Codex reads .codex/config.toml in a trusted project only (codex exec --trust, or its prompt). --sandbox or --dangerously-bypass-approvals-and-sandbox on its command line undoes the read-only sandbox, and apply_patch writes again.",
	"gemini":   "Gemini CLI reads .gemini/settings.json in a trusted folder only (its prompt, or GEMINI_CLI_TRUST_WORKSPACE=true). Its read_file, grep_search and glob still read the host's files.",
	"opencode": "opencode's read, grep and glob still read the host's files.",
}

// Run merges the harness's files in the repository's root and says on
// stderr what changed; with --print it writes nothing and prints them.
func (s *Setup) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	plan, err := harnessconf.Plan(r.Root(), s.Harness)
	if errors.Is(err, harnessconf.ErrInvalidFile) {
		return &api.Error{Kind: api.ErrBadArgument, Msg: err.Error()}
	}
	if err != nil {
		return err
	}
	var names []string
	changed := false
	for _, f := range plan {
		names = append(names, f.Path)
		changed = changed || len(f.Changes) > 0
	}
	if s.Print {
		for i, f := range plan {
			if i > 0 {
				env.outf("\n")
			}
			env.outf("==> %s <==\n%s", f.Path, f.New)
		}
	}
	if !changed {
		env.errf("%s is set up already in %s: nothing to change.\n", s.Harness, strings.Join(names, " and "))
		return nil
	}
	if !s.Print {
		if err := harnessconf.Write(r.Root(), plan); err != nil {
			return err
		}
	}
	for _, f := range plan {
		verb := "unchanged"
		switch {
		case len(f.Changes) == 0:
		case !f.Existed:
			verb = "created"
		default:
			verb = "updated"
		}
		if s.Print && verb != "unchanged" {
			verb = "would be " + verb
		}
		env.errf("%s: %s\n", f.Path, verb)
		for _, c := range f.Changes {
			env.errf("  %s\n", c)
		}
	}
	if s.Print {
		env.errf("Nothing was written (--print).\n")
		return nil
	}
	env.errf("%s\n", setupNotes[s.Harness])
	return nil
}
