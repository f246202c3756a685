// Package scripts holds the tests of the project's shell scripts (the
// scripts themselves are bash, beside this file).
package scripts

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// aptCall matches a command line that runs apt-get, or dpkg in a way that
// writes its database, as a command (not in a message or a comment).
var aptCall = regexp.MustCompile(`(^|[;&|({]|\s)(apt-get|dpkg\s+(--add-architecture|-i|--install|--configure|--remove|--purge|-r|-P))\b`)

// TestEveryAptCallIsLocked refuses an apt-get (or a dpkg that writes its
// database) in scripts/ that does not go through apt.sh: two installers
// running at once (as .ci/run starts them) fail on dpkg's lock otherwise.
// An apt-get inside another root (chroot) or inside an image's build (a
// here-document) runs on another dpkg database and is left alone.
func TestEveryAptCallIsLocked(t *testing.T) {
	files, err := filepath.Glob("*.sh")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, f := range files {
		if f == "apt.sh" {
			continue
		}
		for _, bad := range bareAptCalls(t, f) {
			t.Errorf("%s: %s\n\trun it through scripts/apt.sh (apt_install, apt_get, dpkg_locked): a second installer running at the same time fails on dpkg's lock otherwise", f, bad)
		}
	}
}

// TestBareAptCallsFound shows the check above can fail: it finds the calls
// the scripts made before apt.sh.
func TestBareAptCallsFound(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "old.sh")
	os.WriteFile(script, []byte(`set -e
log "apt-get install tmux, brew install tmux" # a message
command -v apt-get >/dev/null
apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y podman; }
(cd x && { apt-get download busybox-static:arm64; })
dpkg --add-architecture arm64
dpkg -x a.deb root
chroot "$root" apt-get install -y python3
docker build - <<DOCKERFILE
RUN apt-get update -qq
DOCKERFILE
`), 0o644)
	got := bareAptCalls(t, script)
	if len(got) != 5 {
		t.Fatalf("found %d bare calls, want 5 (update, install, the install's fallback, download, add-architecture):\n%s", len(got), strings.Join(got, "\n"))
	}
}

var (
	heredocStart = regexp.MustCompile(`<<-?\s*'?"?(\w+)`)
	quoted       = regexp.MustCompile(`"[^"]*"`)
)

// bareAptCalls are the lines of the script at path that run apt-get (or a
// dpkg that writes) other than through apt.sh.
func bareAptCalls(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bad []string
	heredoc := ""
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if heredoc != "" {
			if strings.TrimSpace(line) == heredoc {
				heredoc = ""
			}
			continue
		}
		if m := heredocStart.FindStringSubmatch(line); m != nil {
			heredoc = m[1]
		}
		code := line
		if i := strings.Index(code, " #"); i >= 0 {
			code = code[:i]
		}
		if strings.HasPrefix(strings.TrimSpace(code), "#") || strings.Contains(code, "chroot ") {
			continue
		}
		code = quoted.ReplaceAllString(code, `""`) // messages
		code = strings.ReplaceAll(code, "command -v apt-get", "")
		if aptCall.MatchString(code) {
			bad = append(bad, "line "+strconv.Itoa(n)+": "+strings.TrimSpace(line))
		}
	}
	return bad
}

// stubApt is an apt-get that behaves as the real one does when another
// holds dpkg's lock: it fails at once. It installs by taking a lock
// directory for a while.
const stubApt = `#!/bin/sh
if ! mkdir "$STUB_DIR/dpkg.lock" 2>/dev/null; then
  echo "E: Could not get lock $STUB_DIR/dpkg.lock. It is held by another process" >&2
  exit 100
fi
sleep 0.3
echo "$*" >>"$STUB_DIR/calls"
rmdir "$STUB_DIR/dpkg.lock"
`

// installers runs n bash commands at once with the stub apt-get first on
// PATH, and returns each one's error and output.
func installers(t *testing.T, dir string, cmds []string) ([]error, []string) {
	t.Helper()
	apt := filepath.Join(dir, "bin", "apt-get")
	os.MkdirAll(filepath.Dir(apt), 0o755)
	if err := os.WriteFile(apt, []byte(stubApt), 0o755); err != nil {
		t.Fatal(err)
	}
	here, _ := os.Getwd()
	errs := make([]error, len(cmds))
	outs := make([]string, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("bash", "-c", "set -euo pipefail; . "+filepath.Join(here, "apt.sh")+"; "+c)
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(apt)+":"+os.Getenv("PATH"), "STUB_DIR="+dir,
				"LITTERBOX_APT_LOCK="+filepath.Join(dir, "apt.lock"), "LITTERBOX_APT_WAIT=20")
			out, err := cmd.CombinedOutput()
			errs[i], outs[i] = err, string(out)
		}()
	}
	wg.Wait()
	return errs, outs
}

// TestInstallersAtOnce runs three installers at once: through apt.sh each
// waits for the one before it and all succeed; bare, as the scripts did,
// all but one fail on the lock (so the stub does stand for dpkg).
func TestInstallersAtOnce(t *testing.T) {
	dir := t.TempDir()
	errs, outs := installers(t, dir, []string{"apt_install podman", "apt_install qemu-utils", "apt_get download busybox-static"})
	for i, err := range errs {
		if err != nil {
			t.Errorf("installer %d failed: %v\n%s", i, err, outs[i])
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if n := strings.Count(string(calls), "\n"); n != 3 {
		t.Errorf("apt-get ran %d times to the end, want 3:\n%s", n, calls)
	}
	if !strings.Contains(strings.Join(outs, ""), "waiting up to 20s for another installer") {
		t.Errorf("no installer said what it waited for:\n%s", strings.Join(outs, "\n"))
	}

	bare := t.TempDir()
	errs, _ = installers(t, bare, []string{"apt-get install podman", "apt-get install qemu-utils", "apt-get download busybox-static"})
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Errorf("bare apt-gets at once all succeeded: the stub does not hold a lock as dpkg does")
	}
}

// TestInstallerGivesUp: a lock held past LITTERBOX_APT_WAIT ends the
// installer with a message naming the lock, not a hang.
func TestInstallerGivesUp(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "apt.lock")
	holder := exec.Command("flock", lock, "sleep", "5")
	if err := holder.Start(); err != nil {
		t.Skipf("flock: %v", err)
	}
	defer holder.Process.Kill()
	for i := 0; i < 50; i++ { // until the holder has the lock
		if exec.Command("flock", "-n", lock, "true").Run() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd := exec.Command("bash", "-c", ". ./apt.sh; apt_get update")
	cmd.Env = append(os.Environ(), "LITTERBOX_APT_LOCK="+lock, "LITTERBOX_APT_WAIT=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "gave up after 1s") || !strings.Contains(string(out), lock) {
		t.Fatalf("apt_get with the lock held: err=%v, output:\n%s", err, out)
	}
}
