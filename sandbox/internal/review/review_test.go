package review

import (
	"os"
	"path/filepath"
	"testing"
)

// TestObstacle: what stands where apply or merge would create a path is
// found, whatever it is (a file, a directory, a symlink, one on the way),
// and nothing is reported where git would only create directories.
func TestObstacle(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".venv/bin", "cache", "src", "elsewhere", "pkg/sub", "mixed/empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".env", ".venv/bin/activate", "cache/data", "notes", "old", "pkg/a.go", "pkg/sub/b.go", "mixed/a.go", "mixed/local.env"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("elsewhere", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{"old": true, "pkg/a.go": true, "pkg/sub/b.go": true, "mixed/a.go": true}
	for p, want := range map[string]string{
		".env":               ".env",               // a file
		".venv/bin/activate": ".venv/bin/activate", // a file in an ignored directory
		".venv/bin/python":   "",                   // a new file in it overwrites nothing
		"cache":              "cache",              // a directory where a file comes
		"notes/todo":         "notes",              // a file where a directory comes
		"link/x":             "link",               // a symlink where a directory comes
		"link":               "link",
		"old/new":            "", // a tracked file the change removes
		"src/new.go":         "",
		"fresh/dir/file":     "",
		"pkg":                "",      // a directory of removed tracked files becomes a file
		"mixed":              "mixed", // one that also holds an ignored file
	} {
		got, err := obstacle(root, p, removed)
		if err != nil || got != want {
			t.Errorf("obstacle(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
}
