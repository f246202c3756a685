package spec

import (
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// TestCacheMounts: each cache a volume of the repository (by its id), at
// its path, labelled, with the variables that point the tools at it;
// read-only in mode "ro"; another repository's volumes are its own.
func TestCacheMounts(t *testing.T) {
	cfg, err := config.Parse([]byte("[cache]\nuse = [\"go\", \"npm\", \"/opt/m2\"]\nmode = \"ro\"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &api.Repo{Slug: "repo", ID: "0123456789abcdef0123456789abcdef", Git: &git.Repo{Root: "/r", CommonDir: "/r/.git"}}
	sp := For(api.Options{Image: api.DefaultImage, ExtraLabels: map[string]string{"dev.litterbox.test": "t"}}, r, "x", "base", cfg)
	if len(sp.Volumes) != 3 {
		t.Fatalf("volumes = %+v", sp.Volumes)
	}
	goVol := sp.Volumes[0]
	if goVol.Name != "litterbox-cache-repo-0123456789ab-go" || goVol.Path != "/cache/go" || !goVol.ReadOnly ||
		goVol.Labels[LabelCache] != "go" || goVol.Labels[api.LabelRepoID] != r.ID || goVol.Labels["dev.litterbox.test"] != "t" {
		t.Errorf("go's volume = %+v", goVol)
	}
	if m2 := sp.Volumes[2]; m2.Path != "/opt/m2" || !strings.HasPrefix(m2.Name, "litterbox-cache-repo-0123456789ab-path-") {
		t.Errorf("the path's volume = %+v", m2)
	}
	env := strings.Join(sp.Env, " ")
	for _, want := range []string{"GOMODCACHE=/cache/go/mod", "GOCACHE=/cache/go/build", "npm_config_cache=/cache/npm"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
	other := *r
	other.ID = "fedcba9876543210fedcba9876543210"
	if sp2 := For(api.Options{}, &other, "x", "base", cfg); sp2.Volumes[0].Name == goVol.Name {
		t.Error("two repositories share a volume")
	}
	if sp := For(api.Options{}, r, "x", "base", config.Default()); len(sp.Volumes) != 0 {
		t.Errorf("no [cache], volumes %+v", sp.Volumes)
	}
}
