package netgate

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/litterbox-dev/litterbox/gateway/control"
)

// TestRefusedInCut: a run that read a refusals file the gateway emptied
// during it (its first line says so) does not take what it read for all
// it was refused: the gateway's refusals table is to be asked.
func TestRefusedInCut(t *testing.T) {
	line := func(r control.Record) string {
		b, _ := json.Marshal(r)
		return string(b) + "\n"
	}
	attempt := line(control.Record{Kind: "connect", Host: "evil.example", Port: 443, Reason: "not in the allowlist"})
	if hosts, ok := RefusedIn(attempt); !ok || !slices.Equal(hosts, []string{"evil.example:443 (not in the allowlist)"}) {
		t.Errorf("RefusedIn = %q, %v", hosts, ok)
	}
	cut := line(control.Record{Kind: control.KindCut, Reason: "started again"})
	if hosts, ok := RefusedIn(cut + attempt); ok {
		t.Errorf("a cut file was taken whole: %q", hosts)
	}
}
