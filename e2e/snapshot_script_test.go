package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func scriptEnv(ts *testscript.TestScript) []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "LITTERBOX_LABELS", "LITTERBOX_SCANNER", "GIT_CONFIG_NOSYSTEM", "DOCKER_HOST", "TMPDIR"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	return env
}

func gitCmd(ts *testscript.TestScript, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	return cmd
}

// tarListing runs cmd, reads the tar it prints and describes each file and
// link as "path kind exec hash-or-target".
func tarListing(ts *testscript.TestScript, cmd *exec.Cmd, exclude []string) map[string]string {
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	list := map[string]string{}
	// all describes every entry, excluded or not: a hard link (tar sends
	// a later name of a file as a link to its first) is described as the
	// name it links to, which may lie in an excluded directory.
	all := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(out))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			ts.Fatalf("read tar: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch h.Typeflag {
		case tar.TypeSymlink:
			all[name] = "link " + h.Linkname
		case tar.TypeReg:
			data, _ := io.ReadAll(tr)
			all[name] = fmt.Sprintf("file exec=%v %x", h.Mode&0o111 != 0, sha1.Sum(data))
		case tar.TypeLink:
			all[name] = all[strings.TrimPrefix(h.Linkname, "./")]
		default:
			continue
		}
		if !excluded(name, exclude) {
			list[name] = all[name]
		}
	}
	return list
}

func excluded(name string, exclude []string) bool {
	for _, e := range exclude {
		if name == e || strings.HasPrefix(name, strings.TrimSuffix(e, "/")+"/") {
			return true
		}
	}
	return false
}

func diffListings(a, b map[string]string) string {
	var lines []string
	for p, v := range a {
		if b[p] != v {
			lines = append(lines, fmt.Sprintf("  %s: /src has %q, branch has %q", p, v, b[p]))
		}
	}
	for p, v := range b {
		if _, ok := a[p]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: only on the branch (%q)", p, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// cmdSnapMatch is the script command snapmatch (scriptcmds_test.go).
func cmdSnapMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: snapmatch CONTAINER BRANCH [EXCLUDE...]")
	}
	tarCmd := exec.Command("docker", "exec", args[0], "tar", "-c", "-C", "/src", ".")
	tarCmd.Env = scriptEnv(ts) // DOCKER_HOST: the engine the script drives
	inside := tarListing(ts, tarCmd, args[2:])
	branch := tarListing(ts, gitCmd(ts, "archive", "--format=tar", args[1]), nil)
	diff := diffListings(inside, branch)
	if neg && diff == "" {
		ts.Fatalf("branch %s matches /src, want a difference", args[1])
	}
	if !neg && diff != "" {
		ts.Fatalf("branch %s differs from /src of %s:\n%s", args[1], args[0], diff)
	}
}

// cmdCrashloop is the script command crashloop (scriptcmds_test.go).
func cmdCrashloop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: crashloop N CMD ARGS...")
	}
	var n int
	fmt.Sscan(args[0], &n)
	for i := 0; i < n; i++ {
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = scriptEnv(ts)
		if err := cmd.Start(); err != nil {
			ts.Fatalf("start: %v", err)
		}
		time.Sleep(time.Duration(10+i*15) * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
