package commands

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Net shows or changes a sandbox's way out (docs/egress.md): only the
// user does; no MCP tool can.
type Net struct {
	Args []string `arg:"" help:"NAME (the policy and recent connections), NAME allow HOST[:PORT], NAME deny HOST[:PORT], NAME requests (the agent's requests for hosts), NAME approve HOST (allow it, answering the request), NAME refuse HOST, or log NAME (every connection kept)."`
	JSON bool     `name:"json" help:"Print JSON."`
	N    int      `name:"n" default:"20" help:"How many recent connections NAME shows."`
}

// Validate checks the shape of the arguments.
func (n *Net) Validate() error {
	a := n.Args
	switch {
	case len(a) == 2 && (a[0] == "log" || a[1] == "requests"), len(a) == 1:
	case len(a) == 3 && (a[1] == "allow" || a[1] == "deny" || a[1] == "approve" || a[1] == "refuse"):
	default:
		return fmt.Errorf("usage: litterbox net NAME | net NAME allow|deny HOST[:PORT] | net NAME requests | net NAME approve|refuse HOST | net log NAME")
	}
	_, err := api.Slugify(n.name())
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
	switch {
	case len(n.Args) == 2 && n.Args[1] == "requests":
		return n.requests(ctx, env, r, name)
	case len(n.Args) == 3 && (n.Args[1] == "approve" || n.Args[1] == "refuse"):
		return n.answer(ctx, env, r, name)
	}
	if len(n.Args) == 3 {
		st, live, err := env.Sandboxes.NetChange(ctx, r, name, n.Args[2], n.Args[1] == "allow")
		if err != nil {
			return err
		}
		if n.JSON {
			return writeJSON(env, map[string]any{"sandbox": st.Sandbox, "policy": st.NetFile, "live": live})
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
			fmt.Fprintf(env.Stdout, "%d more refusals of targets past the first %d (and %d exfiltration attempts), counted only\n", b.Other, control.MaxRefusals, control.MaxAttempts)
		}
	}
	if st.Note != "" {
		env.errf("Note: %s\n", st.Note)
	}
	return nil
}

// requests lists the agent's requests for hosts, the pending first.
func (n *Net) requests(ctx context.Context, env *Env, r *api.Repo, name string) error {
	qs, dropped, err := env.Sandboxes.NetRequests(ctx, r, name)
	if err != nil {
		return err
	}
	if n.JSON {
		return writeJSON(env, map[string]any{"sandbox": name, "requests": qs, "dropped": dropped})
	}
	pending := func(q sandbox.NetRequest) int {
		if q.State == sandbox.RequestPending {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(qs, func(a, b sandbox.NetRequest) int { return cmp.Compare(pending(a), pending(b)) })
	tw := newTable(env.Stdout)
	for _, q := range qs {
		answer := q.State
		if q.By != "" {
			answer += " by " + q.By
		}
		if q.Why != "" {
			answer += ": " + q.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", q.Time.Local().Format("2006-01-02 15:04"), termtext.Escape(q.Host), termtext.Escape(answer), termtext.Escape(orDash(q.Reason)))
	}
	tw.Flush()
	if len(qs) == 0 {
		env.errf("Sandbox %s has asked for no host.\n", name)
	}
	if dropped > 0 {
		env.errf("%d more requests came while %d waited, and were refused\n", dropped, len(qs))
	}
	return nil
}

// answer approves (allows) or refuses a request.
func (n *Net) answer(ctx context.Context, env *Env, r *api.Repo, name string) error {
	approve := n.Args[1] == "approve"
	st, live, q, err := env.Sandboxes.AnswerNet(ctx, r, name, n.Args[2], approve)
	if err != nil {
		return err
	}
	if n.JSON {
		return writeJSON(env, map[string]any{"sandbox": name, "request": q, "live": live})
	}
	if !approve {
		env.outf("Sandbox %s: refused its request for %s; the agent learns it when it asks again.\n", name, q.Host)
		return nil
	}
	if live {
		env.outf("Sandbox %s: approved %s, from its next connection on.\n", name, q.Host)
	} else {
		env.outf("Sandbox %s: approved %s.\n", name, q.Host)
		env.errf("Note: %s\n", st.Note)
	}
	env.outf("policy: %s\n", st.Summary())
	return nil
}
