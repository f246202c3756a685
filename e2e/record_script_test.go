package e2e

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// gitAddTree computes the tree `git add -A` gives of container's /src on
// top of base in the repository at repo (scratch is a work tree made and
// removed here), and returns it with branch's tree and, when they differ,
// git's name-status diff from the branch to it.
func gitAddTree(repo, scratch string, env []string, container, branch, base string) (want, got, diff string, err error) {
	o := &addOracle{repo: repo, scratch: scratch, env: env}
	defer o.close()
	return o.compare(container, branch, base)
}

// addOracle is a scratch work tree and index that `git add -A` runs in,
// against the script's repository (its objects, info/exclude and
// core.excludesFile). Kept across rounds, it is synced with /src rather
// than rebuilt: a file whose bytes and mode did not change is not
// rewritten, so git's stat cache spares hashing it again (a changed file
// is rewritten, whatever its times, so a change with old times is seen).
type addOracle struct {
	repo, scratch string
	env           []string
}

func (o *addOracle) close() {
	os.RemoveAll(o.scratch)
	os.Remove(o.scratch + ".index")
}

func (o *addOracle) git(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + filepath.Join(o.repo, ".git"), "--work-tree=" + o.scratch}, args...)...)
	cmd.Dir = o.scratch
	cmd.Env = append(o.env, "GIT_INDEX_FILE="+o.scratch+".index")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// compare syncs the scratch tree with container's /src and compares git
// add -A of it, on base, with branch.
func (o *addOracle) compare(container, branch, base string) (want, got, diff string, err error) {
	if err := os.MkdirAll(o.scratch, 0o755); err != nil {
		return "", "", "", err
	}
	tarCmd := exec.Command("docker", "exec", container, "tar", "-c", "-C", "/src", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return "", "", "", err
	}
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return "", "", "", err
	}
	xerr := syncTar(out, o.scratch)
	if err := tarCmd.Wait(); err != nil {
		return "", "", "", fmt.Errorf("docker exec tar: %v: %s", err, tarErr.String())
	}
	if xerr != nil {
		return "", "", "", xerr
	}
	// -m keeps the stat cache of entries whose content matches base.
	if _, err := o.git("read-tree", "-m", base); err != nil {
		return "", "", "", err
	}
	if _, err := o.git("add", "-A"); err != nil {
		return "", "", "", err
	}
	if want, err = o.git("write-tree"); err != nil {
		return "", "", "", err
	}
	if got, err = o.git("rev-parse", branch+"^{tree}"); err != nil {
		return "", "", "", err
	}
	if want != got {
		diff, _ = o.git("diff-tree", "-r", "--name-status", got, want)
	}
	return want, got, diff, nil
}

// syncTar makes dir hold exactly what the tar stream holds, names byte for
// byte: regular files with their executable bit, symlinks as links,
// directories. What is already there and equal is left untouched.
func syncTar(r io.Reader, dir string) error {
	seen := map[string]bool{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		name = strings.TrimSuffix(name, "/")
		if name == "" || name == "." {
			continue
		}
		seen[name] = true
		p := filepath.Join(dir, name)
		fi, statErr := os.Lstat(p)
		switch h.Typeflag {
		case tar.TypeDir:
			if statErr == nil && fi.IsDir() {
				continue
			}
			os.RemoveAll(p)
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if statErr == nil && fi.Mode()&os.ModeSymlink != 0 {
				if t, _ := os.Readlink(p); t == h.Linkname {
					continue
				}
			}
			os.RemoveAll(p)
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		case tar.TypeReg, tar.TypeLink:
			exe := h.Mode&0o111 != 0
			data, err := io.ReadAll(tr)
			if h.Typeflag == tar.TypeLink {
				// A later name of a file tar has sent: its content is
				// that name's, written above.
				target := filepath.Join(dir, strings.TrimPrefix(h.Linkname, "./"))
				data, err = os.ReadFile(target)
				if fi, serr := os.Lstat(target); serr == nil {
					exe = fi.Mode()&0o111 != 0
				}
			}
			if err != nil {
				return err
			}
			if statErr == nil && fi.Mode().IsRegular() && (fi.Mode()&0o111 != 0) == exe && fi.Size() == int64(len(data)) {
				if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
					continue
				}
			}
			os.RemoveAll(p)
			mode := os.FileMode(0o644)
			if exe {
				mode = 0o755
			}
			if err := os.WriteFile(p, data, mode); err != nil {
				return err
			}
			if err := os.Chmod(p, mode); err != nil {
				return err
			}
		}
	}
	// Remove what /src no longer holds, deepest first.
	var gone []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if !seen[rel] {
			gone = append(gone, p)
			if fi.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// cmdGitAddMatch is the script command gitaddmatch (scriptcmds_test.go).
func cmdGitAddMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: gitaddmatch CONTAINER BRANCH BASE")
	}
	want, got, diff, err := gitAddTree(ts.MkAbs("."), ts.MkAbs(".")+".scratch", scriptEnv(ts), args[0], args[1], args[2])
	if err != nil {
		ts.Fatalf("%v", err)
	}
	if neg && want == got {
		ts.Fatalf("branch %s equals git add -A of /src, want a difference", args[1])
	}
	if !neg && want != got {
		ts.Fatalf("branch %s (tree %s) differs from git add -A of /src of %s on %s (tree %s):\n%s", args[1], got, args[0], args[2], want, diff)
	}
}
