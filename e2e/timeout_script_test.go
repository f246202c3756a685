package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
)

// hangScript stands in for a program that never answers, like a docker CLI
// talking to a hung engine (or over a hung ssh): it starts a child that
// sleeps, records both pids in $LB_HANG_PIDS, and waits.
const hangScript = `#!/bin/sh
sleep 3600 &
echo "$$ $!" >>"$LB_HANG_PIDS"
wait
`

// cmdHang is the script command hang (scriptcmds_test.go).
func cmdHang(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: hang PROG|off|gone")
	}
	pids := ts.MkAbs(".hang-pids")
	dir := ts.MkAbs(".hang")
	if ts.Getenv("LB_HANG_SAVED_PATH") == "" {
		ts.Setenv("LB_HANG_SAVED_PATH", ts.Getenv("PATH"))
	}
	switch args[0] {
	case "off":
		ts.Setenv("PATH", ts.Getenv("LB_HANG_SAVED_PATH"))
	case "gone":
		data, err := os.ReadFile(pids)
		ts.Check(err)
		all := strings.Fields(string(data))
		if len(all) == 0 {
			ts.Fatalf("the hanging stand-in never ran")
		}
		// SIGKILL is delivered at once, but a process takes a moment to
		// die; a survivor is still there after this bound.
		deadline := time.Now().Add(5 * time.Second)
		for _, field := range all {
			pid, err := strconv.Atoi(field)
			ts.Check(err)
			for enginetest.ProcessAlive(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if enginetest.ProcessAlive(pid) {
				ts.Fatalf("process %d that the hanging stand-in started is still running", pid)
			}
		}
		ts.Check(os.Remove(pids))
	default:
		ts.Check(os.MkdirAll(dir, 0o755))
		ts.Check(os.WriteFile(filepath.Join(dir, args[0]), []byte(hangScript), 0o755))
		ts.Setenv("PATH", dir+string(os.PathListSeparator)+ts.Getenv("LB_HANG_SAVED_PATH"))
		ts.Setenv("LB_HANG_PIDS", pids)
	}
}
