package state

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRunRecord: a run's record names its harness while its litterbox
// runs; once that process is gone (a kill -9) the record says so; it is
// removed only by the process that wrote it.
func TestRunRecord(t *testing.T) {
	r := stateRepo(t)
	gitDir := r.Git.CommonDir
	if err := os.MkdirAll(r.StateDir("s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadRun(gitDir, "s"); ok {
		t.Fatal("a record before any run")
	}
	if err := WriteRun(r, "s", "claude"); err != nil {
		t.Fatal(err)
	}
	run, ok := ReadRun(gitDir, "s")
	if !ok || run.Harness != "claude" || run.PID != os.Getpid() || !run.Going() {
		t.Fatalf("record %+v, %v; want claude's, going", run, ok)
	}
	// a process that has ended, as a litterbox killed -9 has
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	run.PID = cmd.Process.Pid
	if run.Going() {
		t.Errorf("pid %d ended, yet its run is going", run.PID)
	}
	// a pid in use by another process than the one that wrote the record
	run.PID, run.Start = os.Getpid(), "1"
	if run.Going() {
		t.Error("a pid used again is taken for the run's litterbox")
	}
	// another process's record stays
	other := File(gitDir, "s", RunFile)
	if err := os.WriteFile(other, []byte(`{"harness":"codex","pid":1,"host":"h"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRun(r, "s"); err != nil {
		t.Fatal(err)
	}
	if run, ok := ReadRun(gitDir, "s"); !ok || run.Harness != "codex" {
		t.Errorf("another run's record was removed: %+v, %v", run, ok)
	}
	if err := WriteRun(r, "s", "claude"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRun(r, "s"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadRun(gitDir, "s"); ok {
		t.Error("the run's own record stays after RemoveRun")
	}
}

// A run's litterbox killed but not yet reaped by its parent (a zombie, as a
// script's background job is for a moment after kill -9) is gone: list said
// the run still went on (run_record failed so under load).
func TestRunOfAZombieIsNotGoing(t *testing.T) {
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	host, _ := os.Hostname()
	run := Run{PID: cmd.Process.Pid, Host: host, Start: procStart(cmd.Process.Pid)}
	for i := 0; i < 100 && procState(cmd.Process.Pid) != "Z"; i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if st := procState(cmd.Process.Pid); st != "Z" {
		t.Fatalf("the child's state is %q, want a zombie", st)
	}
	if run.Going() {
		t.Fatal("a zombie's run is going")
	}
}
