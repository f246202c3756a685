package state

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// SinceFile is the file of the stamp of the last scan a snapshot committed
// (with the change journal's token taken with it): the next scan looks at
// what changed since.
func SinceFile(r *api.Repo, slug string) string { return filepath.Join(r.StateDir(slug), "since") }

// ReadSince reads the stamp of the last scan committed and the change
// journal's token taken with it, from the file p ("" when there is none:
// the next scan walks the whole tree).
func ReadSince(p string) (int64, string) {
	data, err := os.ReadFile(p)
	if err != nil {
		return 0, ""
	}
	stamp, token, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	n, _ := strconv.ParseInt(stamp, 10, 64)
	return n, token
}

// WriteSince records a scan stamp without a journal token: the next scan
// walks the whole tree.
func WriteSince(r *api.Repo, slug string, n int64) error { return WriteSinceToken(r, slug, n, "") }

// WriteSinceToken records the scan stamp and the journal token the scan
// got, only after the branch holds the scan's changes: a crash before it
// makes the next scan look further back, which costs time but loses
// nothing.
func WriteSinceToken(r *api.Repo, slug string, n int64, token string) error {
	line := strconv.FormatInt(n, 10)
	if token != "" {
		line += " " + token
	}
	return WriteAtomic(SinceFile(r, slug), []byte(line+"\n"))
}

// Lock takes the writer lock of the state directory dir, an flock on a
// file in it, so snapshots from concurrent calls and from several processes
// run one at a time. It waits until ctx is done.
func Lock(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return flock.Wait(ctx, filepath.Join(dir, "lock"), 5*time.Millisecond)
}

// ForgetContainer removes the marks of a sandbox's container (ready,
// failed setup) and its snapshot stamp: they describe a container that is
// gone, and a new one is made from the branch. Without the stamp the first
// snapshot compares all of /src with the branch.
func ForgetContainer(r *api.Repo, slug string) error {
	for _, p := range []string{File(r.Git.CommonDir, slug, SetupFailedFile), SinceFile(r, slug), File(r.Git.CommonDir, slug, ReadyFile), File(r.Git.CommonDir, slug, IdlePausedFile)} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// Unready removes the ready mark of sandbox slug, once the container it
// names is removed.
func Unready(gitDir, slug string) error {
	err := os.Remove(File(gitDir, slug, ReadyFile))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
