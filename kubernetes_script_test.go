package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/litterbox-dev/litterbox/internal/testutil"
)

func init() {
	scriptCmds["kubectl"] = cmdKubectl
	scriptCmds["peakrss"] = cmdPeakRSS
}

// kubernetesScript reports whether a script is one of the Kubernetes
// journeys, which only TestScriptsKubernetes runs.
func kubernetesScript(name string) bool { return strings.HasPrefix(name, "kubernetes_") }

// TestScriptsKubernetes runs the kubernetes_*.txtar journeys (create, an
// MCP session, diff, merge, pause, delete, hardening, isolation) with
// --engine kubernetes (through LITTERBOX_ENGINE) against the cluster of
// scripts/ensure-kubernetes.sh, in a namespace of its own. With CI=true a
// cluster that does not answer fails the test.
func TestScriptsKubernetes(t *testing.T) {
	k := testutil.KubernetesOrSkip(t)
	ns := k.Namespace(t)
	testscript.Run(t, scriptParams(t, kubernetesScript,
		"LITTERBOX_ENGINE=kubernetes", "LITTERBOX_KUBECONFIG="+k.Kubeconfig, "LITTERBOX_KUBECTL="+k.Kubectl, "LITTERBOX_NAMESPACE="+ns))
}

// kubectl ARGS...
//
// Runs the cluster's kubectl with ARGS against the script's cluster and
// namespace (LITTERBOX_KUBECONFIG, LITTERBOX_NAMESPACE); its output is kept
// for stdout and stderr. `! kubectl` expects it to fail.
func cmdKubectl(ts *testscript.TestScript, neg bool, args []string) {
	kubectl := ts.Getenv("LITTERBOX_KUBECTL")
	if kubectl == "" {
		ts.Fatalf("kubectl: LITTERBOX_KUBECTL is not set: run the script from TestScriptsKubernetes")
	}
	err := ts.Exec(kubectl, append([]string{"--kubeconfig", ts.Getenv("LITTERBOX_KUBECONFIG"), "--namespace", ts.Getenv("LITTERBOX_NAMESPACE")}, args...)...)
	var ee *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		ts.Fatalf("kubectl: %v", err)
	case neg && err == nil:
		ts.Fatalf("kubectl %s succeeded unexpectedly", strings.Join(args, " "))
	case !neg && err != nil:
		ts.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
}

// peakrss MAXMIB PROG ARGS...
//
// Runs PROG ARGS... (litterbox, or another program on the script's PATH) in
// the script's directory and environment with its output counted, not kept
// (it may write gigabytes), and fails unless its peak resident size stays at
// or under MAXMIB MiB: its VmHWM, read from /proc every 10 ms while it runs,
// which counts the process itself and not its children (kubectl's 50 MB;
// getrusage's ru_maxrss counts the largest of them). Prints "exit N, stdout
// N bytes, stderr N bytes, peak N MiB" to stdout, and the last KiB of its
// stderr to stderr, for the stdout and stderr commands.
func cmdPeakRSS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: peakrss MAXMIB PROG [ARGS...]")
	}
	limit, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("peakrss: bad limit %q", args[0])
	}
	// The script's whole environment, as its exec would pass it.
	ts.Check(ts.Exec("env", "-0"))
	env := strings.Split(strings.TrimSuffix(ts.ReadFile("stdout"), "\x00"), "\x00")
	prog := args[1]
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if fi, err := os.Stat(filepath.Join(dir, args[1])); dir != "" && err == nil && fi.Mode()&0o111 != 0 {
			prog = filepath.Join(dir, args[1])
			break
		}
	}
	cmd := exec.Command(prog, args[2:]...)
	cmd.Dir, cmd.Env = ts.MkAbs("."), env
	var stdout, stderr counter
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		ts.Fatalf("peakrss: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64 // MiB
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		peak = max(peak, vmHWM(status)/1024)
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
	fmt.Fprintf(ts.Stdout(), "exit %d, stdout %d bytes, stderr %d bytes, peak %d MiB\n", cmd.ProcessState.ExitCode(), stdout.n, stderr.n, peak)
	fmt.Fprint(ts.Stderr(), stderr.tail.String())
	if peak > int64(limit) {
		ts.Fatalf("peakrss: %s peaked at %d MiB, over %d MiB", strings.Join(args[1:], " "), peak, limit)
	}
}

// vmHWM is the VmHWM line of a /proc/PID/status file, in KiB; 0 when it
// cannot be read (the process has ended).
func vmHWM(status string) int64 {
	data, _ := os.ReadFile(status)
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
