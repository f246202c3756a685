package sandbox

import (
	"context"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/secrets"
)

// SecretRow is one secret as `litterbox secrets` shows it.
type SecretRow = secrets.Row

// Secrets are the secrets declared for r and the sandboxes bound to each
// (inventory's Secrets); name, when not "", keeps that secret's row only.
func (s *Sandboxes) Secrets(ctx context.Context, r *api.Repo, name string) ([]SecretRow, error) {
	return s.inv.Secrets(ctx, r, name)
}
