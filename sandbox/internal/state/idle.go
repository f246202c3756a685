package state

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
)

// The idle pause (pause/idle.go) keeps three files in a sandbox's state
// directory, beside its activity record, whose times it reads:
//
//	idle         how long the sandbox may go without activity before it
//	             is paused, as create was told (a Go duration; "0s": never).
//	             No file: DefaultIdle.
//	active       its modification time is the last activity litterbox saw
//	             that the activity record does not show: the start of an
//	             operation, a running command, a service's output.
//	idle-paused  the sandbox was paused for being idle: the next operation
//	             on it resumes it first. It holds the idle time it waited.
//
// The times are files' modification times, not contents: marking activity
// is one utimes(2) (or one create), and reading it one stat(2), so a
// sandbox at work costs nothing to watch.
const (
	IdleFile       = "idle"
	ActiveFile     = "active"
	IdlePausedFile = "idle-paused"
	IdleLockFile   = "idle.lock"
)

// DefaultIdle is how long a sandbox may go without activity before it is
// paused, when neither create nor the configuration said.
const DefaultIdle = config.DefaultIdle

// WriteIdle records how long sandbox slug may be idle before it is paused
// (0: never).
func WriteIdle(r *api.Repo, slug string, d time.Duration) error {
	return WriteAtomic(File(r.Git.CommonDir, slug, IdleFile), []byte(d.String()+"\n"))
}

// ReadIdle is how long sandbox slug may be idle before it is paused (0:
// never); DefaultIdle when create recorded none (a sandbox made before
// the record was kept) or the record does not read as a duration.
func ReadIdle(gitDir, slug string) time.Duration {
	data, err := os.ReadFile(File(gitDir, slug, IdleFile))
	if err != nil {
		return DefaultIdle
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(data)))
	if err != nil || d < 0 {
		return DefaultIdle
	}
	return d
}

// Touch marks activity on sandbox slug at t: the active file's time, made
// when missing. A sandbox whose state directory is gone is left alone.
func Touch(gitDir, slug string, t time.Time) error {
	p := File(gitDir, slug, ActiveFile)
	err := os.Chtimes(p, t, t)
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if _, serr := os.Stat(File(gitDir, slug, "")); serr != nil {
		return nil
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return err
	}
	return os.Chtimes(p, t, t)
}

// LastActive is the time of the last activity on sandbox slug: the later
// of its activity record's last write and its active file's time; zero
// when neither is there.
func LastActive(gitDir, slug string) time.Time {
	var last time.Time
	for _, p := range []string{File(gitDir, slug, ActiveFile), activity.Record{Dir: activity.Dir(gitDir), Sandbox: slug}.Path()} {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last
}

// MarkIdlePaused records that sandbox slug was paused after idle went by
// without activity.
func MarkIdlePaused(gitDir, slug string, idle time.Duration) error {
	if _, err := os.Stat(File(gitDir, slug, "")); err != nil {
		return err // deleted meanwhile: nothing to mark, no folder to make
	}
	return WriteAtomic(File(gitDir, slug, IdlePausedFile), []byte(idle.String()+"\n"))
}

// IdlePaused is the idle time after which sandbox slug was paused for
// being idle; ok is false when it was not.
func IdlePaused(gitDir, slug string) (idle time.Duration, ok bool) {
	data, err := os.ReadFile(File(gitDir, slug, IdlePausedFile))
	if err != nil {
		return 0, false
	}
	d, _ := time.ParseDuration(strings.TrimSpace(string(data)))
	return d, true
}

// UnmarkIdlePaused removes the idle pause's mark of sandbox slug.
func UnmarkIdlePaused(gitDir, slug string) error {
	err := os.Remove(File(gitDir, slug, IdlePausedFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
