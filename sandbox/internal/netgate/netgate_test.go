package netgate

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway"
)

// TestRefusedInCut: a run that read a refusals file the gateway emptied
// during it (its first line says so) does not take what it read for all
// it was refused: the gateway's refusals table is to be asked.
func TestRefusedInCut(t *testing.T) {
	line := func(r gateway.Record) string {
		b, _ := json.Marshal(r)
		return string(b) + "\n"
	}
	attempt := line(gateway.Record{Kind: "connect", Host: "evil.example", Port: 443, Reason: "not in the allowlist"})
	if hosts, ok := RefusedIn(attempt); !ok || !slices.Equal(hosts, []string{"evil.example:443 (not in the allowlist)"}) {
		t.Errorf("RefusedIn = %q, %v", hosts, ok)
	}
	cut := line(gateway.Record{Kind: gateway.KindCut, Reason: "started again"})
	if hosts, ok := RefusedIn(cut + attempt); ok {
		t.Errorf("a cut file was taken whole: %q", hosts)
	}
}
