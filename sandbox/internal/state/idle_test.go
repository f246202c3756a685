package state

import (
	"os"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
)

// TestIdleRecord: the idle time reads back as written, DefaultIdle when
// none was; the last activity is the later of the active file and the
// activity record; Touch leaves a sandbox without a state directory alone.
func TestIdleRecord(t *testing.T) {
	r := stateRepo(t)
	gitDir := r.Git.CommonDir
	if got := ReadIdle(gitDir, "x"); got != DefaultIdle {
		t.Errorf("idle with no record = %s, want %s", got, DefaultIdle)
	}
	if err := Touch(gitDir, "x", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(File(gitDir, "x", ActiveFile)); !os.IsNotExist(err) {
		t.Errorf("Touch made a state file of a sandbox that has none: %v", err)
	}
	if !LastActive(gitDir, "x").IsZero() {
		t.Error("a sandbox without records has a last activity")
	}
	for _, d := range []time.Duration{0, 3 * time.Second, 2 * time.Hour} {
		if err := WriteIdle(r, "x", d); err != nil {
			t.Fatal(err)
		}
		if got := ReadIdle(gitDir, "x"); got != d {
			t.Errorf("idle = %s, want %s", got, d)
		}
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := Touch(gitDir, "x", old); err != nil {
		t.Fatal(err)
	}
	if got := LastActive(gitDir, "x"); !got.Equal(old) {
		t.Errorf("last activity = %s, want the touch at %s", got, old)
	}
	rec := activity.Record{Dir: activity.Dir(gitDir), Sandbox: "x"}
	if err := rec.Append(activity.Event{Kind: activity.KindExec}); err != nil {
		t.Fatal(err)
	}
	if got := LastActive(gitDir, "x"); time.Since(got) > time.Minute {
		t.Errorf("last activity = %s, want the record's event, just now", got)
	}

	if _, ok := IdlePaused(gitDir, "x"); ok {
		t.Error("paused for being idle before it was")
	}
	if err := MarkIdlePaused(gitDir, "x", 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if d, ok := IdlePaused(gitDir, "x"); !ok || d != 3*time.Second {
		t.Errorf("IdlePaused = %s, %v; want 3s, true", d, ok)
	}
	if err := ForgetContainer(r, "x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := IdlePaused(gitDir, "x"); ok {
		t.Error("the mark outlived its container")
	}
	if err := UnmarkIdlePaused(gitDir, "x"); err != nil {
		t.Errorf("removing a mark that is not there: %v", err)
	}
}
