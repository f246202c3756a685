package netgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/secrets"
)

// SecretsFile is the state directory's record of the secrets a sandbox is
// bound to (docs/secrets.md): names, variables, placeholders and hosts,
// never a value.
const SecretsFile = "secrets.json"

// Bound is one secret as a sandbox holds it, kept on the host.
type Bound struct {
	secrets.Binding
	// Hosts are where the gateway sends its value, as declared at create.
	Hosts []string `json:"hosts"`
}

// Bindings are bs as package secrets takes them.
func Bindings(bs []Bound) []secrets.Binding {
	out := make([]secrets.Binding, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.Binding)
	}
	return out
}

// ReadSecrets reads sandbox slug's bindings; ok is false when it has none.
func ReadSecrets(gitDir, slug string) (bs []Bound, ok bool, err error) {
	data, err := os.ReadFile(state.File(gitDir, slug, SecretsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var rec struct {
		Secrets []Bound `json:"secrets"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, false, fmt.Errorf("read the secrets of sandbox '%s', %s: %w", slug, state.File(gitDir, slug, SecretsFile), err)
	}
	return rec.Secrets, true, nil
}

// WriteSecrets records bs as sandbox slug's bindings.
func WriteSecrets(r *api.Repo, slug string, bs []Bound) error {
	data, err := json.MarshalIndent(struct {
		Secrets []Bound `json:"secrets"`
	}{bs}, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteAtomic(state.File(r.Git.CommonDir, slug, SecretsFile), append(data, '\n'))
}

// SetSecrets gives the gateway of rec its secrets (egress.SetSecrets,
// which waits for a gateway that is starting).
func (g *Gate) SetSecrets(ctx context.Context, rec *NetFile, s control.Secrets) (control.SecretsInfo, error) {
	return egress.SetSecrets(ctx, g.Provider, rec.Ref(), s)
}

// Retrust writes the CA of the running gateway of sandbox slug into its
// container ref, when it holds secrets: what a new container of the
// sandbox needs (a resume where a pause ended it: Kubernetes), while its
// gateway kept the values and the CA. A gateway that holds none (it
// restarted, and waits for them) has no CA to trust.
func (g *Gate) Retrust(ctx context.Context, gitDir, slug string, ref provider.Ref) error {
	rec, ok, err := Read(gitDir, slug)
	if err != nil || !ok {
		return err
	}
	if bs, _, err := ReadSecrets(gitDir, slug); err != nil || len(bs) == 0 {
		return err
	}
	info, err := egress.GetSecrets(ctx, g.Provider, rec.Ref())
	if err != nil {
		return fmt.Errorf("sandbox '%s': read its gateway's CA: %w", slug, err)
	}
	if info.CA == "" {
		return nil
	}
	if err := egress.WriteTrust(ctx, g.Provider, ref, []byte(info.CA)); err != nil {
		return fmt.Errorf("sandbox '%s': %w", slug, err)
	}
	return nil
}

// Declared are the secrets the user declared for r: its local file's over
// the user's own file's.
func (g *Gate) Declared(ctx context.Context, r *api.Repo) ([]secrets.Declaration, error) {
	local, err := config.Local(ctx, r.Git, g.Warn)
	if err != nil {
		return nil, err
	}
	user, err := secrets.LoadUser()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", config.ErrInvalid, err)
	}
	return secrets.Merge(user, local.Secrets), nil
}
