package state

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// RunFile records a `litterbox run` going in the sandbox: which harness,
// and which litterbox process runs it. The run removes it when it ends; a
// run whose litterbox was killed leaves it, so list can say that the
// harness may still run in the sandbox (its exec is not litterbox's child).
const RunFile = "run"

// Run is a run's record.
type Run struct {
	Harness string `json:"harness"`
	// PID is its litterbox's process; Start that process's start time
	// (field 22 of /proc/PID/stat), so a pid used again is not taken for
	// it; Host the machine it runs on.
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
	Host  string `json:"host"`
}

// WriteRun records that this process runs harness in sandbox slug.
func WriteRun(r *api.Repo, slug, harness string) error {
	host, _ := os.Hostname()
	data, err := json.Marshal(Run{Harness: harness, PID: os.Getpid(), Start: procStart(os.Getpid()), Host: host})
	if err != nil {
		return err
	}
	return WriteAtomic(File(r.Git.CommonDir, slug, RunFile), data)
}

// RemoveRun removes the record of this process's run in slug (one another
// run wrote since stays).
func RemoveRun(r *api.Repo, slug string) error {
	if run, ok := ReadRun(r.Git.CommonDir, slug); !ok || run.PID != os.Getpid() {
		return nil
	}
	err := os.Remove(File(r.Git.CommonDir, slug, RunFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// ReadRun is the record of a run in slug, if there is one.
func ReadRun(gitDir, slug string) (Run, bool) {
	var run Run
	data, err := os.ReadFile(File(gitDir, slug, RunFile))
	if err != nil || json.Unmarshal(data, &run) != nil || run.PID <= 0 || run.Harness == "" {
		return Run{}, false
	}
	return run, true
}

// Going reports whether run's litterbox still runs: true when that cannot
// be told (another machine, no /proc).
func (run Run) Going() bool {
	if host, _ := os.Hostname(); host != run.Host {
		return true
	}
	if err := syscall.Kill(run.PID, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if st := procState(run.PID); st == "Z" || st == "X" {
		return false // killed, not yet reaped by its parent
	}
	return run.Start == "" || procStart(run.PID) == run.Start
}

// procStart is field 22 of /proc/pid/stat (the process's start time), ""
// where there is none.
func procStart(pid int) string { return procStat(pid, 19) }

// procState is field 3 of /proc/pid/stat (R, S, Z...), "" where there is
// none.
func procState(pid int) string { return procStat(pid, 0) }

// procStat is field 3+i of /proc/pid/stat, "" where there is none.
func procStat(pid, i int) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	j := strings.LastIndexByte(string(data), ')')
	if j < 0 {
		return ""
	}
	f := strings.Fields(string(data[j+1:]))
	if len(f) <= i {
		return ""
	}
	return f[i]
}
