package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// serverPID finds the `litterbox mcp` process of c: a child of the sh that
// runs it between two tees.
func serverPID(ts *testscript.TestScript, c *scriptClient) int {
	if c.cmd == nil || c.cmd.Process == nil {
		ts.Fatalf("the MCP server has not started")
	}
	shell := c.cmd.Process.Pid
	dirs, err := filepath.Glob("/proc/[0-9]*")
	ts.Check(err)
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// its closing parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(shell) {
			continue
		}
		argv, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		if a := strings.Split(string(argv), "\x00"); len(a) > 1 && a[1] == "mcp" {
			pid, err := strconv.Atoi(filepath.Base(d))
			ts.Check(err)
			return pid
		}
	}
	ts.Fatalf("no `litterbox mcp` child of process %d", shell)
	return 0
}

// procStatusKB reads a field in kB (VmHWM, VmRSS) of /proc/PID/status.
func procStatusKB(pid int, field string) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cmdMCPRSS is the script command mcprss (scriptcmds_test.go).
func cmdMCPRSS(ts *testscript.TestScript, neg bool, args []string) {
	limit := -1
	if len(args) == 2 && args[0] == "-max" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit, args = n, args[2:]
	}
	if neg || len(args) != 0 {
		ts.Fatalf("usage: mcprss [-max MIB]")
	}
	kb, err := procStatusKB(serverPID(ts, mcpClient(ts)), "VmHWM")
	ts.Check(err)
	mib := kb / 1024
	fmt.Fprintf(ts.Stdout(), "peak rss: %d MiB\n", mib)
	if limit >= 0 && mib > limit {
		ts.Fatalf("the mcp server's peak resident size is %d MiB, over %d MiB", mib, limit)
	}
}

// cmdGoBuildStatic is the script command gobuildstatic (scriptcmds_test.go).
func cmdGoBuildStatic(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: gobuildstatic DIR OUT")
	}
	cmd := exec.Command("go", "build", "-o", ts.MkAbs(args[1]), ".")
	cmd.Dir = ts.MkAbs(args[0])
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if msg, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build %s: %v\n%s", args[0], err, msg)
	}
}

// cmdDirSize is the script command dirsize (scriptcmds_test.go).
func cmdDirSize(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: dirsize DIR MAXMIB")
	}
	limit, err := strconv.Atoi(args[1])
	ts.Check(err)
	var total int64
	ts.Check(filepath.Walk(ts.MkAbs(args[0]), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return err
	}))
	fmt.Fprintf(ts.Stdout(), "size: %d MiB\n", total>>20)
	if total>>20 > int64(limit) {
		ts.Fatalf("%s holds %d MiB, over %d MiB", args[0], total>>20, limit)
	}
}
