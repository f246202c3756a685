package scanner

import "syscall"

// undumpable makes this process non-dumpable (PR_SET_DUMPABLE 0): its
// /proc/PID entries then belong to root, and a process of the same uid
// without CAP_SYS_PTRACE can neither open its descriptors there nor
// ptrace it. The scanner runs as the agent's uid, and the command it runs
// opened /proc/$PPID/fd/1, the stream to the host, and wrote a forged meta
// entry into it. The install makes the program execute-only, so the
// kernel starts it non-dumpable (a program its user cannot read); this
// covers a scanner installed otherwise (LITTERBOX_SCANNER).
func undumpable() {
	const prSetDumpable = 4
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
}
