package scanner

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// runMark is the environment variable that marks every process a run
// started (scanner side): a process that left the run's group and was
// orphaned (setsid, a double fork) keeps it, so a stop still finds it. Only
// a process that clears its environment on purpose escapes.
const runMark = "LITTERBOX_RUN"

// killTree stops a command for good: its process group, every descendant of
// pid, and every process whose environment holds mark. The processes found
// are frozen (SIGSTOP) before the next look, so none can fork past it, then
// killed together.
func killTree(pid int, mark string) {
	_ = syscall.Kill(-pid, syscall.SIGSTOP)
	found := map[int]bool{}
	for round := 0; round < 10; round++ {
		more := false
		for _, p := range treeOf(pid, mark) {
			if !found[p] {
				found[p], more = true, true
				_ = syscall.Kill(p, syscall.SIGSTOP)
			}
		}
		if !more {
			break
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for p := range found {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// proc is what killTree needs of a process.
type proc struct {
	pid, ppid, pgrp int
}

// treeOf lists the processes of pid's group, its descendants, and the
// processes marked with mark, from /proc.
func treeOf(pid int, mark string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var procs []proc
	in := map[int]bool{pid: true}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == self {
			continue
		}
		st, ok := readStat(p)
		if !ok {
			continue
		}
		procs = append(procs, st)
		if st.pgrp == pid || marked(p, mark) {
			in[p] = true
		}
	}
	// descendants, to a fixed point: /proc lists children in any order
	for grew := true; grew; {
		grew = false
		for _, st := range procs {
			if !in[st.pid] && in[st.ppid] {
				in[st.pid], grew = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for p := range in {
		out = append(out, p)
	}
	return out
}

// readStat reads pid, ppid and pgrp from /proc/PID/stat, whose second field
// (the command name, in parentheses) may hold spaces and parentheses.
func readStat(pid int) (proc, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return proc{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: pid, ppid: ppid, pgrp: pgrp}, true
}

// marked reports whether the environment of pid holds mark (KEY=VALUE;
// "" marks nothing).
func marked(pid int, mark string) bool {
	if mark == "" {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if string(kv) == mark {
			return true
		}
	}
	return false
}
