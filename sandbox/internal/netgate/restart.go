package netgate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/spec"
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
//
// A gateway that is gone (removed behind litterbox's back, its pod
// deleted or evicted) leaves its sandbox with no way out: the sandbox has
// no network of its own (Docker, Podman), or its policy lets it reach its
// gateway's pod alone (Kubernetes). Start makes it again (remake), as
// create made it, with the policy and secrets the records hold.

// GatewayState is the state of rec's gateway container, provider.StateNone
// when it is gone, or on an engine that links gateways by network (whose
// gateway, a pod, never starts again: Start makes it anew).
func (g *Gate) GatewayState(ctx context.Context, rec *NetFile) (provider.State, error) {
	e, ok := Engine(g.Provider)
	if !ok {
		return provider.StateNone, nil
	}
	return e.State(ctx, rec.Ref())
}

// Start starts rec's gateway (stopped or paused), or makes it again for
// sandbox sb when it is gone (remade), and gives it its policy and, when
// the sandbox holds secrets, their values, fetched again from the sources
// cfg (the user's configuration now) declares. ca is the gateway's new CA,
// which the sandbox must trust (egress.WriteTrust); "" without secrets.
// The gateway is running once it returns, even when a secret could not be
// had (the error names it); it serves the sandbox only when Start returns
// no error.
func (g *Gate) Start(ctx context.Context, r *api.Repo, sb provider.Sandbox, rec *NetFile, cfg *config.Config) (ca string, remade bool, err error) {
	slug := sb.Labels[api.LabelSlug]
	st, err := g.GatewayState(ctx, rec)
	if err != nil {
		return "", false, err
	}
	switch st {
	case provider.StateNone:
		remade, err = true, g.remake(ctx, r, slug, sb, rec, cfg)
	case provider.StatePaused:
		_, err = g.Provider.Resume(ctx, rec.Ref())
	case provider.StateStopped:
		e, _ := Engine(g.Provider)
		err = e.Start(ctx, rec.Ref())
	}
	if err != nil {
		return "", remade, fmt.Errorf("start the egress gateway %s of sandbox '%s': %w", rec.Gateway, slug, err)
	}
	ca, err = g.arm(ctx, r, slug, rec, cfg.Secrets)
	return ca, remade, err
}

// arm gives rec's running gateway its policy and its secrets, and tells
// it it is ready (Start).
func (g *Gate) arm(ctx context.Context, r *api.Repo, slug string, rec *NetFile, decls []secrets.Declaration) (ca string, err error) {
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

// remake makes rec's gone gateway again for sandbox sb (its container, or
// its pod), as create made it, from what the engine offers (provider.
// Gateways or provider.GatewayLinks): beside the volume the sandbox still
// mounts, publishing the ports its relay serves (rec.Ports, named as cfg
// names them); or linked by network to the sandbox's pod. It opens nothing
// to the sandbox until Start gave it what it should (egress.Ready).
func (g *Gate) remake(ctx context.Context, r *api.Repo, slug string, sb provider.Sandbox, rec *NetFile, cfg *config.Config) error {
	reach, err := g.Reach(ctx)
	if err != nil {
		return err
	}
	sp := provider.Spec{Name: sb.Name, User: api.User, Labels: spec.Labels(g.Options, r, slug, sb.Labels[api.LabelBase], sb.Labels[api.LabelImage]),
		HostPorts: provider.PortRange{First: cfg.HostPorts.First, Last: cfg.HostPorts.Last}}
	for _, n := range rec.Ports {
		name := strconv.Itoa(n)
		if i := slices.IndexFunc(cfg.Ports, func(p config.Port) bool { return p.ContainerPort == n }); i >= 0 {
			name = cfg.Ports[i].Name
		}
		sp.Ports = append(sp.Ports, provider.PortSpec{Name: name, Port: n})
	}
	pol := rec.Policy(slug, reach)
	if l, ok := Linked(g.Provider); ok {
		program, err := g.Program(ctx)
		if err != nil {
			return err
		}
		plan, err := egress.ConfineLinked(sp, api.DefaultImage, pol, sp.Labels, l.GatewayHost(), l.GatewayNameFile())
		if err != nil {
			return err
		}
		plan.NameGateway(rec.Gateway)
		if err := g.Create(ctx, plan.Gateway); err != nil {
			return err
		}
		return egress.InstallLinked(ctx, g.Provider, rec.Ref(), bytes.NewReader(program))
	}
	e, ok := Engine(g.Provider)
	if !ok {
		return fmt.Errorf("this engine runs no egress gateway")
	}
	image, err := g.Image(ctx)
	if err != nil {
		return err
	}
	plan, err := egress.Confine(sp, api.DefaultImage, pol, sp.Labels)
	if err != nil {
		return err
	}
	plan.NameGateway(rec.Gateway)
	plan.Volume.Name = rec.Volume
	plan.MountOn(e)
	plan.FromImage(image)
	return g.Create(ctx, plan.Gateway)
}

// Create makes gateway gw, and waits until it runs. One of its name
// that is there already (what an earlier create or resume left, named
// for this sandbox alone) is removed first, with its network (RefOf).
// The gateway image (Tag), when the engine lacks it, is made first, and
// the gateway again.
func (g *Gate) Create(ctx context.Context, gw provider.Spec) error {
	_, err := g.Provider.Create(core.Made(ctx), gw)
	if e, ok := Engine(g.Provider); ok && errors.Is(err, provider.ErrNoImage) && gw.Image == imageTag() {
		if err = g.buildImage(ctx, e, gw.Image); err == nil {
			_, err = g.Provider.Create(core.Made(ctx), gw)
		}
	}
	if errors.Is(err, provider.ErrConflict) {
		if err = g.Provider.Remove(ctx, g.RefOf(gw.Name)); err == nil {
			_, err = g.Provider.Create(core.Made(ctx), gw)
		}
	}
	if err != nil {
		return fmt.Errorf("start the egress gateway %s: %w", gw.Name, err)
	}
	return nil
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
