package netgate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/secrets"
)

// A gateway that stopped (the engine restarted, or it died) comes back
// with its image's program and its -policy argument, the policy at
// create, and without the secrets' values, which it held in memory only:
// it opens no socket to its sandbox, which reaches nothing, until the host
// says it holds what it should (egress.Ready). Start brings it back as the
// host's records say it should be: the policy as `litterbox net` left it
// (net.json), the secrets of secrets.json with their values fetched again,
// and only then ready.

// GatewayState is the state of rec's gateway container, provider.StateNone
// when it is gone.
func (g *Gate) GatewayState(ctx context.Context, rec *NetFile) (provider.State, error) {
	e, ok := Engine(g.Provider)
	if !ok {
		return provider.StateNone, nil
	}
	return e.State(ctx, rec.Ref())
}

// goneError is the error of a sandbox whose gateway container is gone: it
// has no way out, and only a recreate makes one.
func (g *Gate) goneError(slug, container string, rec *NetFile) error {
	return core.NewError(api.ErrStopped, "Sandbox '%s' cannot be resumed: its egress gateway %s is gone (removed), and with it the sandbox's way out. To bring both back, %s, with the policy `litterbox net %s` shows.", slug, rec.Gateway, g.Recreate(slug, container), slug)
}

// Recreate says how to bring back a sandbox whose gateway is gone: its
// work recorded, its container removed (by the engine's own command:
// provider.Reach), both made again from its branch.
func (g *Gate) Recreate(slug, container string) string {
	remove := "remove its container"
	if e, ok := reacher(g.Provider); ok {
		remove += " (`" + e.RemoveCommand(container) + "`)"
	}
	return "record its work with `litterbox snapshot " + slug + "`, " + remove + ", then `litterbox create --from-branch " + slug + "` makes both again"
}

// Start starts rec's gateway (stopped or paused) and gives it its policy
// and, when slug holds secrets, their values, fetched again from the
// sources decls (the user's declarations now) name. ca is the gateway's
// new CA, which the sandbox must trust (egress.WriteTrust); "" without
// secrets. The gateway is running once it returns, even when a secret
// could not be had (the error names it); it serves the sandbox only when
// Start returns no error.
func (g *Gate) Start(ctx context.Context, r *api.Repo, slug string, rec *NetFile, decls []secrets.Declaration) (ca string, err error) {
	e, ok := Engine(g.Provider)
	if !ok {
		return "", fmt.Errorf("this engine runs no egress gateway")
	}
	st, err := g.GatewayState(ctx, rec)
	if err != nil {
		return "", err
	}
	switch st {
	case provider.StateNone:
		return "", g.goneError(slug, r.ContainerName(slug), rec)
	case provider.StatePaused:
		_, err = g.Provider.Resume(ctx, rec.Ref())
	case provider.StateStopped:
		err = e.Start(ctx, rec.Ref())
	}
	if err != nil {
		return "", fmt.Errorf("start the egress gateway %s of sandbox '%s': %w", rec.Gateway, slug, err)
	}
	if err := g.SetPolicy(ctx, slug, rec); err != nil {
		return "", fmt.Errorf("give the egress gateway %s of sandbox '%s' its policy: %w", rec.Gateway, slug, err)
	}
	bs, _, err := ReadSecrets(r.Git.CommonDir, slug)
	if err != nil {
		return "", err
	}
	if len(bs) == 0 {
		return "", g.Ready(ctx, slug, rec)
	}
	ds := make([]secrets.Declaration, 0, len(bs))
	for _, b := range bs {
		if b.File != "" {
			// A dotenv file's value: its source is the file, its hosts
			// those it was bound to at create.
			ds = append(ds, b.Dotenv(b.Hosts))
			continue
		}
		i := slices.IndexFunc(decls, func(d secrets.Declaration) bool { return d.Name == b.Name })
		if i < 0 {
			return "", core.NewError(api.ErrConfig, "Sandbox '%s' holds secret %q, which is no longer declared: declare it again in %s or %s and run `litterbox resume %s` again (see docs/secrets.md). Until then its gateway serves it nothing: the sandbox reaches no host.", slug, b.Name, config.LocalFile, secrets.UserFile(), slug)
		}
		ds = append(ds, decls[i])
	}
	roots, err := secrets.Roots(ds)
	var prepared control.Secrets
	if err == nil {
		prepared, err = secrets.Prepare(ctx, g.Runner, ds, Bindings(bs), roots)
	}
	if err != nil {
		return "", core.NewError(api.ErrConfig, "Sandbox '%s': %v. Fix the source and run `litterbox resume %s` again; until then its gateway serves it nothing: the sandbox reaches no host.", slug, err, slug)
	}
	info, err := g.SetSecrets(ctx, rec, prepared)
	if err != nil {
		return "", fmt.Errorf("give the egress gateway %s of sandbox '%s' its secrets: %w", rec.Gateway, slug, err)
	}
	return info.CA, g.Ready(ctx, slug, rec)
}

// Ready tells rec's gateway it holds its policy and secrets: it serves
// the sandbox from then on (egress.Ready).
func (g *Gate) Ready(ctx context.Context, slug string, rec *NetFile) error {
	if err := egress.Ready(ctx, g.Provider, rec.Ref()); err != nil {
		return fmt.Errorf("open the egress gateway %s of sandbox '%s' to it: %w", rec.Gateway, slug, err)
	}
	return nil
}

// Serving says whether rec's running gateway serves its sandbox: false
// for one the engine started again by itself, which waits for Start.
func (g *Gate) Serving(ctx context.Context, rec *NetFile) (bool, error) {
	return egress.IsReady(ctx, g.Provider, rec.Ref())
}

// WaitRelay waits, in the running sandbox ref, until its relay and its
// gateway listen (egress.WaitReady).
func (g *Gate) WaitRelay(ctx context.Context, slug string, ref provider.Ref, rec *NetFile) error {
	res, err := g.Provider.Exec(ctx, provider.ExecRequest{Ref: ref, Cmd: []string{"sh", "-c", egress.WaitReady}})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	if err != nil {
		return NotListening(slug, rec, err)
	}
	return nil
}

// NotListening is the error of a sandbox whose relay and gateway did not
// come up (egress.WaitReady failed with cause).
func NotListening(slug string, rec *NetFile, cause error) error {
	return fmt.Errorf("sandbox '%s': its egress relay and gateway %s did not listen within 30 s (`docker logs %s` shows the gateway's side; `litterbox resume %s` tries again): %w", slug, rec.Gateway, rec.Gateway, slug, cause)
}
