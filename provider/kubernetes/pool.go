package kubernetes

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
)

// annotationClaimed, on a warm pool's pod that a create took, names the
// sandbox it became (`kubectl describe pod` shows it): a pod keeps its
// pool name, and its labels were set before anyone knew. A confined
// member's gateway pod gets it in the same call, and reads it from a
// downwardAPI volume of its own (GatewayNameFile): the name its refusals
// give.
const annotationClaimed = "dev.litterbox.claimed-by"

var _ provider.Claimer = (*Provider)(nil)

// Claim annotates a pooled pod, and its gateway's pod when it has one,
// with the sandbox that took them, and reads them back, in one kubectl
// call (in a long-lived process, through its proxy: claimproxy.go): a pod
// that is gone is ErrNotFound, one that is not running or is being deleted
// ErrStopped. No exec.
func (p *Provider) Claim(ctx context.Context, ref, gateway provider.Ref, sandbox string) error {
	pods := []string{ref.ID}
	if gateway.ID != "" {
		pods = append(pods, gateway.ID)
	}
	what := "pod " + strings.Join(pods, " and its gateway's pod ")
	got, err := p.annotate(ctx, pods, sandbox)
	if err != nil {
		return fmt.Errorf("claim %s: %w", what, err)
	}
	for _, name := range pods {
		o, ok := got[name]
		switch {
		case !ok:
			return provider.Errorf(provider.ErrNotFound, "claim %s: kubectl annotate did not print pod %s", what, name)
		case o.state() != provider.StateRunning:
			return provider.Errorf(provider.ErrStopped, "claim %s: pod %s does not run (phase %s)", what, name, o.Status.Phase)
		}
	}
	return nil
}

// annotate sets annotationClaimed of pods to sandbox and returns them as
// they are then, by name: through the proxy when there is one and it
// answers, else with kubectl annotate.
func (p *Provider) annotate(ctx context.Context, pods []string, sandbox string) (map[string]*podObject, error) {
	// A one-shot command's proxy is the shared one (sharedproxy.go).
	c, shared := p.claimProxy(), false
	if c == nil && !p.o.LongLived {
		c, shared = p.sharedClaimProxy(), true
	}
	if c != nil {
		got, err := c.annotateAll(ctx, pods, sandbox)
		if !errors.Is(err, errProxy) {
			return got, err
		}
		p.o.Log.Debug("the claim goes through kubectl annotate: the proxy did not carry it", "err", err)
	}
	args := append(append([]string{"annotate", "--overwrite", "pod"}, pods...), annotationClaimed+"="+sandbox, "-o", "json")
	res, err := p.run(ctx, p.Cmd(args...))
	if err != nil {
		return nil, err
	}
	got, err := readObjects(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("parse kubectl annotate: %w", err)
	}
	if shared {
		// The next claims go through a proxy again: one that ended when
		// idle, or was killed, is started anew, in the namespace of the
		// pod just claimed.
		if o := got[pods[0]]; o != nil {
			p.startShared(cmp.Or(p.o.Namespace, o.Metadata.Namespace))
		}
	}
	return got, nil
}

// readObjects reads what kubectl annotate prints of several objects with
// -o json, one object after another, by name.
func readObjects(out []byte) (map[string]*podObject, error) {
	objs := map[string]*podObject{}
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		o := new(podObject)
		err := d.Decode(o)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		objs[o.Metadata.Name] = o
	}
}
