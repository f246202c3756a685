package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Ports shows a sandbox's named ports.
type Ports struct {
	sandboxName
	JSON bool `name:"json" help:"Print JSON: {\"sandbox\": ..., \"ports\": [...]}."`
}

// Run prints one line per named port: name, container port, host URL.
func (p *Ports) Run(ctx context.Context, env *Env) error {
	h, err := env.Handle(ctx, p.Name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.Ports(ctx, h)
	if err != nil {
		return err
	}
	if p.JSON {
		return writeJSON(env, res)
	}
	if len(res.Ports) == 0 {
		env.errf("Sandbox %s has no named ports. Define them under [ports] in %s.\n", res.Sandbox, api.ConfigFile)
		return nil
	}
	tw := newTable(env.Stdout)
	fmt.Fprintln(tw, "NAME\tCONTAINER\tENV\tHOST")
	var notes []string
	for _, pi := range res.Ports {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", pi.Name, pi.ContainerPort, pi.Env, orDash(pi.URL))
		if pi.Note != "" && !slices.Contains(notes, pi.Note) {
			notes = append(notes, pi.Note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Where the URLs work, when not here: not data, so on stderr.
	for _, n := range notes {
		env.errf("Note: %s\n", n)
	}
	return nil
}

// ServiceCmd controls a service of a sandbox.
type ServiceCmd struct {
	sandboxName
	Service string `arg:"" help:"Service name, from [services.NAME] in .litterbox.toml."`
	Action  string `arg:"" enum:"start,stop,restart,status,logs" help:"One of ${enum}."`
	Lines   int    `name:"lines" short:"n" default:"100" help:"Log lines to show (logs)."`
	JSON    bool   `name:"json" help:"Print the result as JSON."`
}

// Run performs the action and prints the service's status (and log).
func (c *ServiceCmd) Run(ctx context.Context, env *Env) error {
	h, err := env.Handle(ctx, c.Name)
	if err != nil {
		return err
	}
	res, err := env.Sandboxes.ServiceAction(ctx, h, c.Service, c.Action, c.Lines)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(env, res)
	}
	if c.Action == api.ActionLogs {
		env.outf("%s", termtext.EscapeText(res.Log))
		if res.Log != "" && !strings.HasSuffix(res.Log, "\n") {
			env.outf("\n")
		}
		return nil
	}
	st := res.Status
	if res.Message != "" {
		env.errf("%s: %s\n", st.Name, termtext.Escape(res.Message))
	}
	env.outf("%s\n", st.String())
	return nil
}

// printCreatedExtras adds a new sandbox's ports and autostarted services to
// create's summary.
func printCreatedExtras(env *Env, c *api.Created) {
	for _, p := range c.Ports {
		env.outf("  port:      %s %d -> %s\n", p.Name, p.ContainerPort, orDash(p.URL))
		if p.Note != "" {
			env.outf("             (%s)\n", p.Note)
		}
	}
	for _, st := range c.Services {
		env.outf("  service:   %s\n", st.String())
	}
	for _, p := range c.Bootstrapped {
		env.outf("  copied in: %s (ignored by git, from your working tree; never recorded)\n", termtext.Quote(p))
	}
}
