package docker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// socketNetns says in which network namespace the engine serving the unix
// socket at path runs, when that is not ours: the name under /run/netns
// (`ip netns`), else a /proc path. "" means ours, or unknown (no such socket,
// no right to look): then nothing is claimed.
//
// The engine's published ports are bound in its own namespace, so an engine
// started in another one (scripts/ensure-podman.sh runs Podman so, to keep
// its firewall rules off the host) publishes where this machine's 127.0.0.1
// does not reach. The socket's peer credentials name the process that
// listens on it; its /proc entry names its namespace.
func socketNetns(path string) string {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return ""
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil || cred.Pid <= 0 {
		return ""
	}
	theirsPath := fmt.Sprintf("/proc/%d/ns/net", cred.Pid)
	theirs, err := os.Stat(theirsPath)
	if err != nil {
		return ""
	}
	ours, err := os.Stat("/proc/self/ns/net")
	if err != nil || os.SameFile(theirs, ours) {
		return ""
	}
	named, _ := filepath.Glob("/run/netns/*")
	for _, p := range named {
		if fi, err := os.Stat(p); err == nil && os.SameFile(fi, theirs) {
			return p
		}
	}
	return theirsPath
}
