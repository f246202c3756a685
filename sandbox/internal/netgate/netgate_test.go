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

// TestReachEqual: a claim leaves a pooled gateway's policy as it is only
// when the engine says what it said at the fill; the order of a probe's
// answer is no change, an address more or less is.
func TestReachEqual(t *testing.T) {
	a := Reach{Host: []string{"10.0.0.1", "fd00::1"}, Engine: []string{"172.17.0.0/16", "172.18.0.0/16"}}
	if !a.Equal(Reach{Host: []string{"fd00::1", "10.0.0.1"}, Engine: []string{"172.18.0.0/16", "172.17.0.0/16"}}) {
		t.Error("the same addresses in another order differ")
	}
	for _, b := range []Reach{
		{Host: a.Host, Engine: []string{"172.17.0.0/16", "172.18.0.0/16", "172.19.0.0/16"}},
		{Host: []string{"10.0.0.1"}, Engine: a.Engine},
		{},
	} {
		if a.Equal(b) {
			t.Errorf("%v equals %v", b, a)
		}
	}
}
