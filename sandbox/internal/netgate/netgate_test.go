package netgate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/litterbox-dev/litterbox/egress"
	"github.com/litterbox-dev/litterbox/gateway/control"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
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

// TestNameFirst: a sandbox whose pooled gateway was told no name gets its
// commands run behind the write of its name (and in the sandbox, as it
// was: the same argv after the shell's exec); every other sandbox's run as
// they are.
func TestNameFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "litterbox", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &api.Repo{Slug: "repo", Git: &git.Repo{Root: dir, CommonDir: dir}}
	cmd := []string{"wget", "-q", "http://example.com/"}
	if got, named := NameFirst(r, "a", cmd); !slices.Equal(got, cmd) || named == nil {
		t.Errorf("a sandbox without a gateway record: %q", got)
	}
	if err := Write(r, "a", &NetFile{Mode: "allowlist", Gateway: "litterbox-pool-x-gw", Volume: "litterbox-pool-x-gw"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := NameFirst(r, "a", cmd); !slices.Equal(got, cmd) {
		t.Errorf("a gateway that knows the name: %q", got)
	}
	if err := Write(r, "a", &NetFile{Mode: "allowlist", Gateway: "litterbox-pool-x-gw", Volume: "litterbox-pool-x-gw", Unnamed: true}); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"sh", "-c", egress.WriteName + `; exec "$@"`, "sh"}, cmd...)
	got, named := NameFirst(r, "a", cmd)
	if !slices.Equal(got, want) {
		t.Errorf("an unnamed pooled gateway: %q, want %q", got, want)
	}
	if again, _ := NameFirst(r, "a", cmd); !slices.Equal(again, want) {
		t.Errorf("before the first command ran: %q, want %q", again, want)
	}
	// Once a command wrapped so ran, the name is where the gateway reads
	// it, for good: the sandbox's next commands run as they are, and the
	// rest of the record stays.
	named()
	if got, _ := NameFirst(r, "a", cmd); !slices.Equal(got, cmd) {
		t.Errorf("after a command wrote the name: %q", got)
	}
	if rec, ok, err := Read(dir, "a"); !ok || err != nil || rec.Gateway != "litterbox-pool-x-gw" || rec.Mode != "allowlist" {
		t.Errorf("the record after: %+v %v %v", rec, ok, err)
	}
	if got, named := NameFirst(nil, "a", cmd); !slices.Equal(got, cmd) || named == nil {
		t.Errorf("no repository: %q", got)
	}
}
