package kubernetes

import (
	"context"
	"errors"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// A claim is one kubectl call, which also says whether the pod runs: one
// being deleted (a grace period still running its container) or not
// running is ErrStopped, so the create takes another member.
func TestClaimReadsThePodBack(t *testing.T) {
	argv := []string{"kubectl", "annotate", "--overwrite", "pod", "pool-1", "dev.litterbox.claimed-by=a", "-o", "json"}
	running := `{"kind":"Pod","metadata":{"name":"pool-1"},"status":{"phase":"Running","containerStatuses":[{"name":"sandbox","state":{"running":{}}}]}}`
	deleting := `{"kind":"Pod","metadata":{"name":"pool-1","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Running","containerStatuses":[{"name":"sandbox","state":{"running":{}}}]}}`
	ended := `{"kind":"Pod","metadata":{"name":"pool-1"},"status":{"phase":"Failed"}}`
	for _, c := range []struct {
		pod  string
		want error
	}{{running, nil}, {deleting, provider.ErrStopped}, {ended, provider.ErrStopped}} {
		f := runnertest.New(t)
		p, err := New(Options{Kubectl: "kubectl", Runner: f, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		f.Expect(argv, c.pod, nil)
		if err := p.Claim(context.Background(), provider.Ref{ID: "pool-1"}, "a"); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("Claim of %s = %v, want %v", c.pod, err, c.want)
		}
	}
}
