package commands

import (
	"bytes"
	"context"

	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/secrets"
)

// Secrets lists the secrets the user declared and the sandboxes bound to
// each (docs/secrets.md): names, source kinds, hosts, never a value or a
// placeholder. No MCP tool shows or changes secrets.
type Secrets struct {
	Name string `arg:"" optional:"" help:"Show this secret only."`
	JSON bool   `name:"json" help:"Print JSON."`
}

// Run prints the table, or the rows as JSON.
func (s *Secrets) Run(ctx context.Context, env *Env) error {
	r, err := env.Repo(ctx)
	if err != nil {
		return err
	}
	rows, err := env.Sandboxes.Secrets(ctx, r, s.Name)
	if err != nil {
		return err
	}
	if s.JSON {
		return writeJSON(env, rows)
	}
	var b bytes.Buffer
	secrets.WriteTable(&b, rows)
	_, err = env.Stdout.Write([]byte(termtext.EscapeText(b.String())))
	return err
}
