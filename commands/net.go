package commands

import (
	"context"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
)

// Net shows or changes a sandbox's way out (docs/egress.md): only the
// user does; no MCP tool can.
type Net struct {
	Args []string `arg:"" help:"NAME (the policy and recent connections), NAME allow HOST[:PORT], NAME deny HOST[:PORT], or log NAME (every connection kept)."`
	JSON bool     `name:"json" help:"Print JSON."`
	N    int      `name:"n" default:"20" help:"How many recent connections NAME shows."`
}

// Validate checks the shape of the arguments.
func (n *Net) Validate() error {
	a := n.Args
	switch {
	case len(a) == 2 && a[0] == "log", len(a) == 1:
	case len(a) == 3 && (a[1] == "allow" || a[1] == "deny"):
	default:
		return fmt.Errorf("usage: litterbox net NAME | net NAME allow HOST[:PORT] | net NAME deny HOST[:PORT] | net log NAME")
	}
	_, err := sandbox.Slugify(n.name())
	return err
}

func (n *Net) name() string {
	if n.Args[0] == "log" && len(n.Args) == 2 {
		return n.Args[1]
	}
	return n.Args[0]
}

// Run shows the policy, changes it, or prints the log.
func (n *Net) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	name := n.name()
	if len(n.Args) == 3 {
		st, live, err := env.Sandboxes.NetChange(ctx, r, name, n.Args[2], n.Args[1] == "allow")
		if err != nil {
			return err
		}
		if n.JSON {
			return writeJSON(env, map[string]any{"sandbox": st.Sandbox, "policy": st.Record, "live": live})
		}
		verb := "allowed"
		if n.Args[1] == "deny" {
			verb = "denied"
		}
		if live {
			fmt.Fprintf(env.Stdout, "Sandbox %s: %s %s, from its next connection on.\n", st.Sandbox, verb, n.Args[2])
		} else {
			fmt.Fprintf(env.Stdout, "Sandbox %s: %s %s.\n", st.Sandbox, verb, n.Args[2])
			env.errf("Note: %s\n", st.Note)
		}
		fmt.Fprintf(env.Stdout, "policy: %s\n", st.Summary())
		return nil
	}
	limit := n.N
	if n.Args[0] == "log" && len(n.Args) == 2 {
		limit = 0
	}
	st, err := env.Sandboxes.Net(ctx, r, name, limit)
	if err != nil {
		return err
	}
	if n.Args[0] == "log" && len(n.Args) == 2 {
		if n.JSON {
			return writeJSON(env, st.Records)
		}
	} else if n.JSON {
		return writeJSON(env, st)
	} else {
		fmt.Fprintf(env.Stdout, "sandbox:  %s\nmode:     %s\nallow:    %s\ndeny:     %s\nregistries: %v\ngateway:  %s\n",
			st.Sandbox, st.Mode, orDash(strings.Join(st.Allow, ", ")), orDash(strings.Join(st.Deny, ", ")), st.Registries, st.Gateway)
		if len(st.Records) > 0 {
			fmt.Fprintln(env.Stdout, "recent:")
		}
	}
	for _, rec := range st.Records {
		fmt.Fprintln(env.Stdout, termtext.Escape(egress.Summary(rec)))
	}
	// Every target refused, kept apart from the records above, which the
	// sandbox can make many of: an exfiltration attempt stays here.
	if b := st.Refused; b.Total > 0 {
		fmt.Fprintf(env.Stdout, "refused (%d in all; each target kept with its count, whatever came after):\n", b.Total)
		for _, e := range b.Entries {
			fmt.Fprintln(env.Stdout, termtext.Escape(egress.BookSummary(e)))
		}
		if b.Other > 0 {
			fmt.Fprintf(env.Stdout, "%d more refusals of targets past the first %d (and %d exfiltration attempts), counted only\n", b.Other, gateway.MaxRefusals, gateway.MaxAttempts)
		}
	}
	if st.Note != "" {
		env.errf("Note: %s\n", st.Note)
	}
	return nil
}
