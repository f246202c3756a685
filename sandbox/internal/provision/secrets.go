package provision

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/secrets"
)

// A confined sandbox's secrets (docs/secrets.md): the user's declarations
// (config.Secrets: the local file's over their own file's), each bound
// with a placeholder of its own, which the sandbox holds in its
// environment. Create fetches the values on the host beside its other
// work, gives them to the gateway once its program is installed, and
// writes the gateway's CA into the sandbox before the setup runs; the
// bindings (no value) are kept as secrets.json beside net.json.

// secretPlan is what create does with the sandbox's secrets.
type secretPlan struct {
	bound []netgate.Bound
	// fetched is closed once the values are had (prepared) or not (err).
	fetched  chan struct{}
	prepared control.Secrets
	err      error
	// ca is the gateway's CA once it holds the secrets; trust ends with
	// the CA written into the sandbox.
	ca    chan caResult
	trust chan error
}

type caResult struct {
	ca  string
	err error
}

// planSecrets binds the declared secrets to the sandbox and starts
// fetching their values. A fork (settings inherited from a sandbox) gets
// its source's secrets, by name, with placeholders of its own; a recreate
// keeps its own placeholders. A sandbox without a gateway gets none: the
// value would have to be in it.
func (c *creation) planSecrets(ctx context.Context, inherited bool) error {
	decls := slices.Concat(c.cfg.Secrets, c.dotenv)
	var kept []netgate.Bound
	src := ""
	if inherited {
		src = c.settingsSource()
	}
	if src != "" {
		old, _, err := netgate.ReadSecrets(c.r.Git.CommonDir, src)
		if err != nil {
			return err
		}
		kept = old
		var from []secrets.Declaration
		for _, b := range old {
			if b.File != "" {
				continue // the fork's own dotenv files' values, below
			}
			i := slices.IndexFunc(decls, func(d secrets.Declaration) bool { return d.Name == b.Name })
			if i < 0 {
				return core.NewError(api.ErrConfig, "Sandbox '%s' was not created: sandbox '%s' holds secret %q, which is no longer declared: declare it again in %s or %s (see docs/secrets.md). Nothing was made.", c.slug, src, b.Name, config.LocalFile, secrets.UserFile())
			}
			from = append(from, decls[i])
		}
		decls = append(from, c.dotenv...)
	}
	if len(decls) == 0 {
		return nil
	}
	if needed := slices.Concat(c.opts.Secrets, c.dotenv); c.net == nil && len(needed) > 0 {
		return core.NewError(api.ErrConfig, "Sandbox '%s' was not created: it needs secret %q held outside it, by an egress gateway, and it would have none (egress = \"open\", network = \"none\", or an engine that runs none): use [network] egress = \"allowlist\" (the default) in %s (see docs/egress.md). Nothing was made.", c.slug, needed[0].Name, config.LocalFile)
	}
	if c.net == nil {
		names := make([]string, 0, len(decls))
		for _, d := range decls {
			names = append(names, d.Name)
		}
		c.pv.Log.Warn("the sandbox has no egress gateway (egress = \"open\", network = \"none\", or an engine that runs none), so it gets none of the declared secrets: a secret's value never goes into a sandbox (docs/secrets.md)", "sandbox", c.slug, "secrets", strings.Join(names, ","))
		return nil
	}
	bindings := secrets.Bind(decls)
	if c.opts.FromBranch {
		// The same sandbox again: its files may hold its placeholders.
		for i, b := range bindings {
			if j := slices.IndexFunc(kept, func(k netgate.Bound) bool { return k.Name == b.Name }); j >= 0 {
				bindings[i].Placeholder = kept[j].Placeholder
			}
		}
	}
	sp := &secretPlan{fetched: make(chan struct{}), ca: make(chan caResult, 1)}
	for i, b := range bindings {
		sp.bound = append(sp.bound, netgate.Bound{Binding: b, Hosts: decls[i].Hosts})
	}
	c.secrets = sp
	go func() {
		defer close(sp.fetched)
		roots, err := secrets.Roots(decls)
		if err == nil {
			sp.prepared, err = secrets.Prepare(ctx, c.pv.Runner, decls, bindings, roots)
		}
		sp.err = err
	}()
	return nil
}

// secretsFetched waits for the values: a secret that cannot be had fails
// the create, naming it, and what was made is removed.
func (c *creation) secretsFetched() error {
	if c.secrets == nil {
		return nil
	}
	<-c.secrets.fetched
	if c.secrets.err != nil {
		return core.NewError(api.ErrConfig, "Sandbox '%s' was not created: %v. Nothing was made.", c.slug, c.secrets.err)
	}
	return nil
}

// armGateway gives the gateway the values, once installed; what it answers
// holds its CA, which the sandbox trusts.
func (c *creation) armGateway(ctx context.Context) (string, error) {
	<-c.secrets.fetched
	if c.secrets.err != nil {
		return "", c.secrets.err
	}
	info, err := c.pv.gate.SetSecrets(ctx, c.net, c.secrets.prepared)
	// The values are the gateway's now: this process keeps none.
	c.secrets.prepared = control.Secrets{}
	if err != nil {
		return "", fmt.Errorf("give the egress gateway its secrets: %w", err)
	}
	return info.CA, nil
}

// startTrust writes the gateway's CA into the sandbox, once the gateway
// holds the secrets, beside the copy.
func (c *creation) startTrust(ctx context.Context) {
	if c.secrets == nil {
		return
	}
	c.secrets.trust = make(chan error, 1)
	go func() {
		r := <-c.secrets.ca
		if r.err != nil {
			c.secrets.trust <- r.err
			return
		}
		c.secrets.trust <- egress.WriteTrust(ctx, c.pv.Provider, c.sandbox.Ref, []byte(r.ca))
	}()
}

// trusted waits for the CA to be in the sandbox.
func (c *creation) trusted() error {
	if c.secrets == nil || c.secrets.trust == nil {
		return nil
	}
	return <-c.secrets.trust
}

// waitTrust is a shell command that waits, up to 30 s, for the sandbox's
// CA bundle: what a setup runs before it may use a secret.
const waitTrust = `i=0; until [ -e ` + egress.CABundle + ` ] || [ $i -ge 600 ]; do sleep 0.05; i=$((i+1)); done`
