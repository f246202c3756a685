package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// events is what sandbox slug's record holds, as "kind/by" (plus the
// action, when there is one).
func (f *fixture) events(slug string) string {
	f.t.Helper()
	evs, err := activity.Read(activity.Dir(f.r.Git.CommonDir), slug, time.Time{})
	if err != nil {
		f.t.Fatal(err)
	}
	var parts []string
	for _, e := range evs {
		s := string(e.Kind) + "/" + e.By
		if e.Action != "" {
			s += "/" + e.Action
		}
		if e.Error != "" {
			s += "/failed"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Each operation of the façade lands in the sandbox's record once, with
// the actor its caller's context names; one that changed nothing (a pause
// of a paused sandbox) or found no sandbox records nothing.
func TestOperationsRecorded(t *testing.T) {
	f := newFixture(t, map[string]string{})
	mcp := activity.WithActor(f.ctx, activity.ByMCP)
	cli := activity.WithActor(f.ctx, activity.ByCLI)
	ui := activity.WithActor(f.ctx, activity.ByUI)
	if _, err := f.s.Create(mcp, f.r, "x", api.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Pause(cli, f.r, "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Pause(cli, f.r, "x", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.ResumeAll(ui, nil); err != nil { // every repository's: the labels name the record
		t.Fatal(err)
	}
	if code, err := f.s.Exec(cli, f.r, "x", api.ExecOptions{Cmd: []string{"true"}}); err != nil || code != 0 {
		t.Fatalf("exec = %d, %v", code, err)
	}
	if _, err := f.s.Delete(cli, f.r, "nosuch", true); err == nil {
		t.Fatal("deleted a sandbox that does not exist")
	}
	if _, err := f.s.Delete(f.ctx, f.r, "x", true); err != nil {
		t.Fatal(err)
	}
	if got, want := f.events("x"), "create/mcp pause/cli resume/ui exec/cli/start exec/cli/end delete/litterbox"; got != want {
		t.Errorf("the record holds %q, want %q", got, want)
	}
	if _, err := os.Stat(activity.Record{Dir: activity.Dir(f.r.Git.CommonDir), Sandbox: "nosuch"}.Path()); !os.IsNotExist(err) {
		t.Errorf("a delete of no sandbox made a record (%v)", err)
	}
}

// A record that cannot be written costs the operation nothing: it still
// succeeds.
func TestRecordFailureNeverFailsTheOperation(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("y")
	dir := activity.Dir(f.r.Git.CommonDir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Pause(f.ctx, f.r, "y", false); err != nil {
		t.Errorf("pause failed with the record unwritable: %v", err)
	}
	if _, err := f.s.Delete(f.ctx, f.r, "y", true); err != nil {
		t.Errorf("delete failed with the record unwritable: %v", err)
	}
}

// A service's exit is recorded once per run, whichever state the reports
// of it name: a status read while its supervisor ends can say "dead",
// the next one "exited", and both are the same exit. A new run's exit
// is another event.
func TestServiceExitRecordedOnce(t *testing.T) {
	f := newFixture(t, map[string]string{})
	f.mustCreate("x")
	h, err := f.s.Handle(f.ctx, f.r, "x")
	if err != nil {
		t.Fatal(err)
	}
	code := 4
	run := time.Date(2026, 11, 26, 13, 38, 22, 0, time.UTC)
	for _, state := range []string{"dead", "exited", "exited"} {
		f.s.ops.NoteExit(f.ctx, h, api.ServiceStatus{Name: "oneshot", State: state, LastExitCode: &code, StartedAt: run})
	}
	f.s.ops.NoteExit(f.ctx, h, api.ServiceStatus{Name: "oneshot", State: "exited", LastExitCode: &code, StartedAt: run.Add(time.Minute)})
	if got, want := f.events("x"), "create/litterbox service/litterbox/exit service/litterbox/exit"; got != want {
		t.Errorf("the record holds %q, want %q", got, want)
	}
}
