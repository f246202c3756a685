package inventory

import (
	"context"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/secrets"
)

// CollectRefused collects the gateways' records of the sandboxes in list
// that have one and sets each one's Egress.Refused to the refusals
// collected (-1 when its gateway did not answer): list --json's. r is nil
// for list --all-repos.
func (inv *Inventory) CollectRefused(ctx context.Context, r *api.Repo, list []api.Sandbox) {
	done := make(chan struct{}, len(list))
	n := 0
	for i := range list {
		sb := &list[i]
		if sb.Egress == nil {
			continue
		}
		// Its repository's git dir: r's, or (list --all-repos) the one
		// list found it in.
		gitDir := sb.GitDir
		if r != nil && sb.Repo == r.Root() {
			gitDir = r.Git.CommonDir
		}
		rec, ok, _ := netgate.Read(gitDir, sb.Name)
		if gitDir == "" || !ok {
			sb.Egress.Refused = -1
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			k, err := inv.gate.CollectLocked(ctx, gitDir, sb.Name, rec)
			if err != nil {
				k = -1
			}
			sb.Egress.Refused = k
		}()
	}
	for range n {
		<-done
	}
}

// Secrets are the secrets declared for r (its local file's over the
// user's own file's) and, for each, the sandboxes of r bound to it (those
// whose container exists); then secrets sandboxes hold that are no longer
// declared (docs/secrets.md). Never a value or a placeholder. name, when
// not "", keeps that secret's row only.
func (inv *Inventory) Secrets(ctx context.Context, r *api.Repo, name string) ([]secrets.Row, error) {
	declared, err := inv.gate.Declared(ctx, r)
	if err != nil {
		return nil, err
	}
	list, err := inv.List(ctx, r)
	if err != nil {
		return nil, err
	}
	var bound []secrets.SandboxBindings
	for _, sb := range list {
		bs, ok, err := netgate.ReadSecrets(r.Git.CommonDir, sb.Name)
		if err != nil {
			return nil, err
		}
		if ok && sb.Container != "" {
			bound = append(bound, secrets.SandboxBindings{Sandbox: sb.Name, Bindings: netgate.Bindings(bs)})
		}
	}
	rows := secrets.List(declared, bound)
	if name == "" {
		return rows, nil
	}
	for _, row := range rows {
		if row.Name == name {
			return []secrets.Row{row}, nil
		}
	}
	return nil, core.NewError(api.ErrBadArgument, "no secret %s is declared (in %s or %s) or bound to a sandbox: `litterbox secrets` lists them (see docs/secrets.md)", name, config.LocalFile, secrets.UserFile())
}
