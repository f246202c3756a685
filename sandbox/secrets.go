package sandbox

import (
	"context"
	"fmt"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/secrets"
)

// SecretRow is one secret as `litterbox secrets` shows it.
type SecretRow = secrets.Row

// Secrets are the secrets declared for r (its local file's over the
// user's own file's) and, for each, the sandboxes of r bound to it (those
// whose container exists); then secrets sandboxes hold that are no longer
// declared (docs/secrets.md). Never a value or a placeholder. name, when
// not "", keeps that secret's row only.
func (s *Sandboxes) Secrets(ctx context.Context, r *api.Repo, name string) ([]SecretRow, error) {
	declared, err := s.declaredSecrets(ctx, r)
	if err != nil {
		return nil, err
	}
	list, err := s.inv.List(ctx, r)
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
			return []SecretRow{row}, nil
		}
	}
	return nil, core.NewError(api.ErrBadArgument, "no secret %s is declared (in %s or %s) or bound to a sandbox: `litterbox secrets` lists them (see docs/secrets.md)", name, config.LocalFile, secrets.UserFile())
}

// declaredSecrets are the secrets the user declared for r (the local
// file's over their own file's).
func (s *Sandboxes) declaredSecrets(ctx context.Context, r *api.Repo) ([]secrets.Declaration, error) {
	local, err := config.Local(ctx, r.Git, s.c.Warn)
	if err != nil {
		return nil, err
	}
	user, err := secrets.LoadUser()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	return secrets.Merge(user, local.Secrets), nil
}
