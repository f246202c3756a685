package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/litterbox-dev/litterbox/provider"
)

// annotationClaimed, on a warm pool's pod that a create took, names the
// sandbox it became (`kubectl describe pod` shows it): a pod keeps its
// pool name, and its labels were set before anyone knew.
const annotationClaimed = "dev.litterbox.claimed-by"

var _ provider.Claimer = (*Provider)(nil)

// Claim annotates a pooled pod with the sandbox that took it and reads the
// pod back in the same call: a pod that is gone is ErrNotFound, one that is
// not running or is being deleted ErrStopped. One kubectl call, no exec.
func (p *Provider) Claim(ctx context.Context, ref provider.Ref, sandbox string) error {
	res, err := p.run(ctx, p.Cmd("annotate", "--overwrite", "pod", ref.ID, annotationClaimed+"="+sandbox, "-o", "json"))
	if err != nil {
		return fmt.Errorf("claim pod %s: %w", ref.ID, err)
	}
	var o podObject
	if err := json.Unmarshal(res.Stdout, &o); err != nil {
		return fmt.Errorf("claim pod %s: parse kubectl annotate: %w", ref.ID, err)
	}
	if o.state() != provider.StateRunning {
		return provider.Errorf(provider.ErrStopped, "claim pod %s: it does not run (phase %s)", ref.ID, o.Status.Phase)
	}
	return nil
}
