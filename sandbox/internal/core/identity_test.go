package core

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Processes that make a repository's first id at once all end up with the
// same one, and it is kept.
func TestEnsureRepoIDOnce(t *testing.T) {
	dir := t.TempDir()
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &api.Repo{Git: &git.Repo{CommonDir: dir}}
			if err := EnsureRepoID(r); err != nil {
				t.Error(err)
			}
			ids[i] = r.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !validRepoID(id) {
			t.Fatalf("ids = %q", ids)
		}
	}
	if got := ReadRepoID(dir); got != ids[0] {
		t.Errorf("stored id %q, want %q", got, ids[0])
	}
	left, _ := filepath.Glob(filepath.Join(dir, "litterbox", "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
	// A file that holds no id is not taken for one.
	if err := os.WriteFile(repoIDPath(dir), []byte("not an id\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ReadRepoID(dir); got != "" {
		t.Errorf("readRepoID of garbage = %q", got)
	}
}

// An object belongs to the repository of its id; one made before ids existed
// to the repository at its git dir.
func TestOwns(t *testing.T) {
	r := &api.Repo{Git: &git.Repo{CommonDir: "/r/.git"}, ID: "aaaa"}
	for _, tt := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{api.LabelRepoID: "aaaa", api.LabelGitDir: "/elsewhere/.git"}, true}, // moved
		{map[string]string{api.LabelRepoID: "bbbb", api.LabelGitDir: "/r/.git"}, false},        // another repository, same path
		{map[string]string{api.LabelGitDir: "/r/.git"}, true},                                  // before ids
		{map[string]string{api.LabelGitDir: "/other/.git"}, false},                             // before ids, elsewhere
		{map[string]string{api.LabelRepoID: "", api.LabelGitDir: "/r/.git"}, true},             // an empty id is none
	} {
		if got := r.Owns(tt.labels); got != tt.want {
			t.Errorf("owns(%v) = %v, want %v", tt.labels, got, tt.want)
		}
	}
}
