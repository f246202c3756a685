package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdLBExit is the script command lbexit (scriptcmds_test.go).
func cmdLBExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("lbexit does not support !: give the expected exit code")
	}
	if len(args) < 1 {
		ts.Fatalf("usage: lbexit CODE [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("lbexit: bad exit code %q", args[0])
	}
	err = ts.Exec("litterbox", args[1:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("lbexit: cannot run litterbox: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("litterbox %s: exit code %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// shimScript is a docker stand-in that breaks one step of create on purpose
// and passes everything else to the real docker. LB_SHIM picks the step:
//
//	image  docker run gets an image that does not exist
//	copy   the tar that copies HEAD into /src fails (its target is missing)
//	setup  the startup command fails with exit code 3
//	pause  the copy and setup run, then the container is paused and docker
//	       itself fails the exec (as when someone pauses it mid-create)
//	killcopy  the copy gets only the first 256 KiB of the archive, then
//	       litterbox is killed with SIGKILL (an interrupted create)
//	killrun   litterbox is killed with SIGKILL as it starts docker run, which
//	       never runs, once the branch (made beside the run) is there: the
//	       branch and network are left
//	sigintnet litterbox gets SIGINT (Ctrl-C) while docker network create
//	       runs; the network is made all the same, as the engine does when
//	       the CLI is killed after sending its request
//	netrmfail docker network rm fails without removing anything
//	netrmlost docker network rm removes the network but reports a failure
//	       (a CLI that timed out while the engine went on)
//	cpout  the exec of tar -c that copies a path out of a sandbox runs
//	       `cat /tmp/stream.tar` in its place, in the same container: the
//	       stream a process of the sandbox writes instead of tar's
//	killfinish  the process that finishes a delete (its gateway, volume
//	       and state, after its container and branch) is killed with
//	       SIGKILL at its first docker call, which leaves a program
//	       running 20 s (as an engine's helper outlives the CLI)
//	slowfinish  each docker call of that process waits 3 s first
//	failfinish  each docker call of that process fails
const shimScript = `#!/bin/sh
real=%q
mode="${LB_SHIM:-}"
first="${1:-}"
if [ "$mode" = image ] && [ "$first" = run ]; then
  for a; do shift; [ "$a" = busybox:latest ] && a=litterbox-test/no-such-image:never; set -- "$@" "$a"; done
fi
# Break the real step rather than fake its failure: create's copy-and-setup
# exec then fails through docker, and create must notice on its own.
if [ "$first" = exec ] && [ "$mode" = copy ]; then
  case " $* " in
    *" tar -x -f - "*) for a; do shift; [ "$a" = /src ] && a=/nonexistent-src; set -- "$@" "$a"; done ;;
  esac
fi
if [ "$first" = exec ] && [ "$mode" = setup ]; then
  case " $* " in
    *" echo hello world ")
      n=$#; i=0
      for a; do shift; i=$((i+1)); [ "$i" -gt $((n-3)) ] || set -- "$@" "$a"; done
      set -- "$@" sh -c 'echo "setup broken on purpose" >&2; exit 3' ;;
  esac
fi
if [ "$first" = exec ] && [ "$mode" = pause ]; then
  case " $* " in
    *" tar -x -f - "*) "$real" "$@"; "$real" pause "$3" >/dev/null; exec "$real" exec "$3" true ;;
  esac
fi
if [ "$first" = exec ] && [ "$mode" = killcopy ]; then
  case " $* " in
    *" tar -x -f - "*) head -c 262144 | "$real" "$@" >/dev/null 2>&1; kill -9 $PPID; exit 137 ;;
  esac
fi
if [ "$first" = exec ] && [ "$mode" = cpout ]; then
  case "$*" in
    *"exec tar -c -f - "*)
      c=; for a; do [ "$a" = sh ] && break; c=$a; done
      exec "$real" exec "$c" cat /tmp/stream.tar ;;
  esac
fi
if [ -n "${LITTERBOX_FINISH_DELETE:-}" ] && [ "$mode" = killfinish ]; then
  sleep 20 </dev/null >/dev/null 2>&1 &
  kill -9 $PPID; exit 137
fi
if [ -n "${LITTERBOX_FINISH_DELETE:-}" ] && [ "$mode" = slowfinish ]; then
  sleep 3
fi
if [ -n "${LITTERBOX_FINISH_DELETE:-}" ] && [ "$mode" = failfinish ]; then
  echo "Error response from daemon: the engine failed on purpose" >&2; exit 1
fi
if [ "$first" = run ] && [ "$mode" = killrun ]; then
  # The branch is made beside the run: the kill comes once it is there
  # (5 s at most), as a kill a moment later would. The sandbox's name is the
  # container name's last part (the scripts' killrun names hold no -).
  for a; do [ "$prev" = --name ] && n=$a; prev=$a; done
  i=0
  while [ $i -lt 50 ] && ! git rev-parse -q --verify "refs/heads/litterbox/${n##*-}" >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done
  kill -9 $PPID; exit 137
fi
if [ "$first" = network ] && [ "$2" = create ] && [ "$mode" = sigintnet ]; then
  "$real" "$@"; rc=$?; kill -INT $PPID; sleep 1; exit $rc
fi
if [ "$first" = network ] && [ "$2" = rm ] && [ "$mode" = netrmfail ]; then
  echo "Error response from daemon: error while removing network: network $3 has active endpoints" >&2; exit 1
fi
if [ "$first" = network ] && [ "$2" = rm ] && [ "$mode" = netrmlost ]; then
  "$real" "$@" >/dev/null 2>&1; echo "Error response from daemon: i/o timeout" >&2; exit 1
fi
exec "$real" "$@"
`

// cmdDockerShim is the script command dockershim (scriptcmds_test.go).
func cmdDockerShim(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dockershim image|copy|setup|pause|killcopy|killrun|sigintnet|netrmfail|netrmlost|cpout|killfinish|slowfinish|failfinish|absent|off")
	}
	dir := ts.MkAbs(".shim")
	if ts.Getenv("LB_SAVED_PATH") == "" {
		ts.Setenv("LB_SAVED_PATH", ts.Getenv("PATH"))
	}
	path := ts.Getenv("LB_SAVED_PATH")
	switch args[0] {
	case "off":
		ts.Setenv("PATH", path)
		ts.Setenv("LB_SHIM", "")
		return
	case "absent":
		// /usr/bin often holds docker beside git, so link just the two.
		bin := ts.MkAbs(".nobin")
		ts.Check(os.MkdirAll(bin, 0o755))
		var keep []string
		for _, prog := range []string{"litterbox", "git"} {
			p, err := lookPath(path, prog)
			ts.Check(err)
			_ = os.Remove(filepath.Join(bin, prog))
			ts.Check(os.Symlink(p, filepath.Join(bin, prog)))
		}
		keep = append(keep, bin)
		ts.Setenv("PATH", strings.Join(keep, string(os.PathListSeparator)))
		return
	}
	real, err := exec.LookPath("docker")
	ts.Check(err)
	ts.Check(os.MkdirAll(dir, 0o755))
	ts.Check(os.WriteFile(filepath.Join(dir, "docker"), fmt.Appendf(nil, shimScript, real), 0o755))
	ts.Setenv("PATH", dir+string(os.PathListSeparator)+path)
	ts.Setenv("LB_SHIM", args[0])
}

// backgroundWait bounds the scripts' waits for what a process in the
// background does after the command that started it returned (the end of a
// delete: its gateway, volume and state), however loaded the machine.
const backgroundWait = 30 * time.Second

// eventually calls done every 200 ms until it is true, for at most
// backgroundWait, and says whether it became true.
func eventually(done func() bool) bool {
	for deadline := time.Now().Add(backgroundWait); !done(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// cmdLeftovers is the script command leftovers (scriptcmds_test.go).
func cmdLeftovers(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 0 {
		ts.Fatalf("usage: leftovers")
	}
	label := "label=" + ts.Getenv("LITTERBOX_LABELS")
	left := func() (found []string) {
		for _, kind := range [][]string{{"ps", "--all"}, {"network", "ls"}, {"volume", "ls"}} {
			argv := append(append([]string{}, kind...), "--quiet", "--filter", label)
			cmd := exec.Command("docker", argv...)
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+ts.Getenv("DOCKER_HOST"))
			out, err := cmd.Output()
			ts.Check(err)
			for _, id := range strings.Fields(string(out)) {
				found = append(found, kind[0]+" "+id)
			}
		}
		return found
	}
	// A delete's gateway and volume go after it returned (the process
	// that finishes it): nothing left is once that process is done.
	var found []string
	if neg {
		found = left()
	} else {
		eventually(func() bool { found = left(); return len(found) == 0 })
	}
	switch {
	case neg && len(found) == 0:
		ts.Fatalf("no labelled docker resources left, expected some")
	case !neg && len(found) > 0:
		ts.Fatalf("labelled docker resources left behind: %s", strings.Join(found, ", "))
	}
}

// cmdWaitGone is the script command waitgone (scriptcmds_test.go).
func cmdWaitGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: waitgone PATTERN...")
	}
	var there []string
	if !eventually(func() bool {
		there = nil
		for _, p := range args {
			m, err := filepath.Glob(ts.MkAbs(p))
			ts.Check(err)
			there = append(there, m...)
		}
		return len(there) == 0
	}) {
		ts.Fatalf("still there after %s: %s", backgroundWait, strings.Join(there, ", "))
	}
}

// cmdWaitFor is the script command waitfor (scriptcmds_test.go).
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	not := len(args) > 0 && args[0] == "-not"
	if not {
		args = args[1:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitfor [-not] REGEXP PROG [ARGS...]")
	}
	re := scriptRegexp(ts, "(?m)"+args[0])
	if !eventually(func() bool {
		return ts.Exec(args[1], args[2:]...) == nil && re.MatchString(ts.ReadFile("stdout")) != not
	}) {
		what := "matches"
		if !not {
			what = "does not match"
		}
		ts.Fatalf("after %s, %s still fails or its stdout %s %q", backgroundWait, strings.Join(args[1:], " "), what, args[0])
	}
}

// lookPath finds prog in the directories of path (a PATH value).
func lookPath(path, prog string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH", prog)
}
