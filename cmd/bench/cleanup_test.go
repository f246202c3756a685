package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDocker is a docker CLI that lists container c1 until it is gone and
// answers each `rm` with the next of rms (stderr, then whether c1 is gone
// after it), as another remover racing the bench's cleanup makes docker
// answer.
func fakeDocker(t *testing.T, rms ...string) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nd=" + dir + "\n" + `case "$1" in
ps) [ -e $d/gone ] || echo c1; exit 0;;
rm) n=$(cat $d/n 2>/dev/null || echo 0); echo $((n+1)) > $d/n
    line=$(sed -n "$((n+1))p" $d/rms)
    case "$line" in *"|gone") touch $d/gone;; esac
    echo "${line%|*}" >&2; exit 1;;
esac
exit 2
`
	if err := os.WriteFile(filepath.Join(dir, "rms"), []byte(strings.Join(rms, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "docker")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCleanupQuietAboutRaces: the bench's cleanup says nothing of a
// removal another remover raced (a detached delete finishing, the pool's
// reaper): docker says it is already in progress, or the container is gone
// by the next try. A removal that fails for another reason is reported.
func TestCleanupQuietAboutRaces(t *testing.T) {
	removeRetryWait = 0
	ctx := context.Background()
	inProgress := "Error response from daemon: removal of container c1 is already in progress"
	if err := removeLabeled(ctx, []string{fakeDocker(t, inProgress+"|gone")}, containers, "label=x"); err != nil {
		t.Errorf("a removal already in progress is reported: %v", err)
	}
	if err := removeLabeled(ctx, []string{fakeDocker(t, inProgress+"|", "Error response from daemon: No such container: c1|gone")}, containers, "label=x"); err != nil {
		t.Errorf("a removal still in progress at the next try is reported: %v", err)
	}
	denied := "Error response from daemon: cannot remove container c1: could not kill: permission denied"
	if err := removeLabeled(ctx, []string{fakeDocker(t, denied+"|")}, containers, "label=x"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("a failed removal is not reported: %v", err)
	}
	if err := removeLabeled(ctx, []string{fakeDocker(t, inProgress+"|", inProgress+"|", inProgress+"|", inProgress+"|", inProgress+"|", inProgress+"|")}, containers, "label=x"); err == nil {
		t.Error("a container that never goes is not reported")
	}
}
