package isolation

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestKeepVerdictDropsReplacedEngines: a verdict is kept per engine
// instance, and Docker's changes at each start of the engine: the verdicts
// of an instance no longer at its endpoint go when the new one's is
// written, or the cache directory would grow by one at every restart.
// Another endpoint's stay.
func TestKeepVerdictDropsReplacedEngines(t *testing.T) {
	dir := t.TempDir()
	keep := func(name, endpoint, instance string) {
		t.Helper()
		v := &Verdict{Endpoint: endpoint, Instance: instance, Isolated: true, Checked: time.Now(), cache: filepath.Join(dir, name+".json")}
		if err := keepVerdict(v); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(v.cache+".lock", nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keep("old", "unix:///var/run/docker.sock", "bridge1")
	keep("other", "ssh://far", "bridge9")
	keep("new", "unix:///var/run/docker.sock", "bridge2")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"new.json", "new.json.lock", "other.json", "other.json.lock"}; !slices.Equal(names, want) {
		t.Errorf("the cache holds %q, want %q", names, want)
	}
}
