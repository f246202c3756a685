package guest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// bootstrapRepo is a git repository whose .gitignore ignores ".env*" and
// "*.bin", with .worktreeinclude listing them; files are written under it.
func bootstrapRepo(t *testing.T, files map[string]string) *api.Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	files[".gitignore"] = ".env*\n*.bin\n"
	files[WorktreeInclude] = ".env*\n*.bin\n"
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &api.Repo{Git: &git.Repo{R: runner.Exec{}, Root: dir, CommonDir: filepath.Join(dir, ".git")}}
}

// TestBootstrap: the listed ignored files are read whole, a link inside
// the repository is followed; a link out of it, a FIFO, a name with a
// control character and a set past the size bound are refused with
// ErrConfig, naming what to do, before anything is read.
func TestBootstrap(t *testing.T) {
	ctx := context.Background()
	r := bootstrapRepo(t, map[string]string{".env": "A=1\n", "sub/.env.local": "B=2\n", "shared": "C=3\n"})
	if err := os.Symlink("shared", filepath.Join(r.Root(), ".env.link")); err != nil {
		t.Fatal(err)
	}
	files, err := Bootstrap(ctx, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		got[f.Path] = string(f.Data)
	}
	want := map[string]string{".env": "A=1\n", ".env.link": "C=3\n", "sub/.env.local": "B=2\n"}
	if len(got) != len(want) || got[".env"] != want[".env"] || got[".env.link"] != want[".env.link"] || got["sub/.env.local"] != want["sub/.env.local"] {
		t.Errorf("Bootstrap = %q, want %q", got, want)
	}

	refused := func(name, want string, setup func(root string) error) {
		t.Run(name, func(t *testing.T) {
			r := bootstrapRepo(t, map[string]string{".env": "A=1\n"})
			if err := setup(r.Root()); err != nil {
				t.Fatal(err)
			}
			_, err := Bootstrap(ctx, r, nil)
			if !errors.Is(err, api.ErrConfig) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Nothing was made") {
				t.Errorf("err = %v, want ErrConfig saying %q", err, want)
			}
		})
	}
	refused("link out", "leads out of the repository", func(root string) error {
		outside := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
			return err
		}
		return os.Symlink(outside, filepath.Join(root, ".env.out"))
	})
	refused("fifo", "not a regular file", func(root string) error {
		// git lists no FIFO, but a link to one: reading it would hang.
		if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
			return err
		}
		return os.Symlink("pipe", filepath.Join(root, ".env.pipe"))
	})
	refused("control character", "a file name litterbox refuses", func(root string) error {
		return os.WriteFile(filepath.Join(root, ".env\tx"), []byte("x"), 0o644)
	})
	refused("size", "more than 64 MiB", func(root string) error {
		// Sparse: the bound is checked on the sizes, before a byte is read.
		return os.Truncate(filepath.Join(root, ".env"), BootstrapMaxBytes+1)
	})
	if files, err := Bootstrap(ctx, bootstrapRepo(t, map[string]string{}), []string{"other"}); err != nil || len(files) != 0 {
		t.Errorf("nothing ignored listed: %v, %v", Paths(files), err)
	}
	if !slices.Equal(Paths(files), []string{".env", ".env.link", "sub/.env.local"}) {
		t.Errorf("Paths = %q", Paths(files))
	}
}
