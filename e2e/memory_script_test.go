package e2e

import (
	"bytes"
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

func cmdPeakRSS(ts *testscript.TestScript, neg bool, args []string) {
	count := len(args) > 0 && args[0] == "-count"
	if count {
		args = args[1:]
	}
	if len(args) < 2 || count && neg {
		ts.Fatalf("usage: peakrss [-count] MAXMIB PROG [ARGS...]")
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("peakrss: bad limit %q", args[0])
	}
	prog := args[1]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, args[1])); dir != "" && err == nil && fi.Mode()&0o111 != 0 {
			prog = filepath.Join(dir, args[1])
			break
		}
	}
	// The script's whole environment, as its exec would pass it.
	ts.Check(ts.Exec("env", "-0"))
	env := strings.Split(strings.TrimSuffix(ts.ReadFile("stdout"), "\x00"), "\x00")
	cmd := exec.Command(prog, args[2:]...)
	cmd.Dir, cmd.Env = ts.MkAbs("."), env
	var stdout, stderr counter
	if count {
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
	} else {
		cmd.Stdout, cmd.Stderr = ts.Stdout(), ts.Stderr()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		ts.Fatalf("peakrss: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64 // KiB
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		peak = max(peak, vmHWM(cmd.Process.Pid))
		select {
		case err = <-done:
			break wait
		case <-tick.C:
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		ts.Fatalf("peakrss: %v", err)
	}
	fmt.Fprintf(ts.Stderr(), "peak RSS: %d MiB in %.1f s\n", peak>>10, time.Since(start).Seconds())
	if count {
		fmt.Fprintf(ts.Stdout(), "exit %d, stdout %d bytes, stderr %d bytes, peak %d MiB\n", cmd.ProcessState.ExitCode(), stdout.n, stderr.n, peak>>10)
		fmt.Fprint(ts.Stderr(), stderr.tail.String())
	}
	if peak>>10 > int64(limit) {
		ts.Fatalf("peakrss: %s peaked at %d MiB, over %d MiB", strings.Join(args[1:], " "), peak>>10, limit)
	}
	if !count && (err != nil) != neg {
		ts.Fatalf("%s: %v (negated: %v)", strings.Join(args[1:], " "), err, neg)
	}
}

// vmHWM is the VmHWM of process pid, in KiB; 0 when it cannot be read (the
// process has ended).
func vmHWM(pid int) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// counter counts what is written to it and keeps the last KiB.
type counter struct {
	n    int64
	tail bytes.Buffer
}

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	c.tail.Write(p[max(0, len(p)-1024):])
	if extra := c.tail.Len() - 1024; extra > 0 {
		c.tail.Next(extra)
	}
	return len(p), nil
}

// cmdMCPPeak is the script command mcppeak (scriptcmds_test.go).
func cmdMCPPeak(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mcppeak MIB")
	}
	limit, err := strconv.Atoi(args[0])
	ts.Check(err)
	pid := serverPID(ts, mcpClient(ts))
	kib := vmHWM(pid)
	if kib == 0 {
		ts.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	fmt.Fprintf(ts.Stdout(), "peak: %d MiB\n", kib>>10)
	if kib>>10 > int64(limit) {
		ts.Fatalf("litterbox mcp peaked at %d MiB, over %d MiB", kib>>10, limit)
	}
}
