package config

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSaveLocalAllow: an approved host is added to the local file's
// [network] allow, whatever form the file has, keeping the rest (comments
// too); a local file without allow starts from the committed entries, so
// saving never narrows the policy; saving twice changes nothing; a form it
// cannot edit is left as it was, with what to add.
func TestSaveLocalAllow(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, committed, local, want string
		fails                        bool
	}{
		{name: "no file", want: "[network]\nallow = [\"pypi.org\"]\n"},
		{name: "no table", local: "# mine\nimage = \"busybox\"", want: "# mine\nimage = \"busybox\"\n\n[network]\nallow = [\"pypi.org\"]\n"},
		{name: "one line", local: "[network]\nallow = [\"a.example\"] # kept\n", want: "[network]\nallow = [\"a.example\", \"pypi.org\"] # kept\n"},
		{name: "empty", local: "[network]\nallow = []\n", want: "[network]\nallow = [\"pypi.org\"]\n"},
		{name: "lines", local: "[network]\nallow = [\n  \"a.example\",\n  \"b.example\"\n]\n", want: "[network]\nallow = [\n  \"pypi.org\",\n  \"a.example\",\n  \"b.example\"\n]\n"},
		{name: "table without allow, committed's kept", committed: "[network]\nallow = [\"c.example\"]\n", local: "[network]\ndeny = [\"x.example\"]\n[ports]\n",
			want: "[network]\nallow = [\"c.example\", \"pypi.org\"]\ndeny = [\"x.example\"]\n[ports]\n"},
		{name: "no local file, committed's kept", committed: "[network]\nallow = [\"c.example\"]\n", want: "[network]\nallow = [\"c.example\", \"pypi.org\"]\n"},
		{name: "there already", local: "[network]\nallow = [\"pypi.org\"]\n", want: "[network]\nallow = [\"pypi.org\"]\n"},
		{name: "dotted keys", local: "network.allow = [\"a.example\"]\n", fails: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := initRepo(t)
			if c.committed != "" {
				if err := os.WriteFile(filepath.Join(g.Root, File), []byte(c.committed), 0o644); err != nil {
					t.Fatal(err)
				}
				for _, args := range [][]string{{"add", File}, {"-c", "user.name=T", "-c", "user.email=t@t", "commit", "-qm", "c"}} {
					if out, err := exec.Command("git", append([]string{"-C", g.Root}, args...)...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v %s", args, err, out)
					}
				}
			}
			path := filepath.Join(g.Root, LocalFile)
			if c.local != "" {
				if err := os.WriteFile(path, []byte(c.local), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			note, err := SaveLocalAllow(ctx, g, "pypi.org")
			got, _ := os.ReadFile(path)
			if c.fails {
				if err == nil || !strings.Contains(err.Error(), `add "pypi.org" to allow in its [network] table yourself`) || string(got) != c.local {
					t.Fatalf("err %v, file %q", err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("file:\n%s\nwant:\n%s", got, c.want)
			}
			cfg, err := Parse([]byte(c.committed), got)
			if err != nil || !slices.Contains(cfg.Egress.Allow, "pypi.org") {
				t.Errorf("parsed: %v %v", cfg, err)
			}
			if note == "" {
				t.Error("no note")
			}
		})
	}
}
