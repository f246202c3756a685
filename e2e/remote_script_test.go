package e2e

import (
	"os"
	"os/exec"
	"strings"
	"sync"
)

// The ssh engine of scripts/ensure-ssh-engine.sh: a second dockerd in its own
// network namespace, reached as DOCKER_HOST=ssh://litterbox-remote. Scripts
// that use it say [sshengine] and set DOCKER_HOST themselves; what they leave
// there is removed through the engine's socket, which this host can open
// directly.
//
// The open engine (ensure-ssh-engine.sh --open) is the same with its
// firewall off (dockerd --iptables=false): sandboxes there reach each other.
// Scripts that use it say [openengine] and use its socket.
const (
	sshEngineHost    = "ssh://litterbox-remote"
	sshEngineSocket  = "unix:///run/litterbox-remote/docker.sock"
	openEngineSocket = "unix:///run/litterbox-open/docker.sock"
)

var openEngineOnce = sync.OnceValue(func() bool {
	return exec.Command("docker", "--host", openEngineSocket, "version", "--format", "{{.Server.Version}}").Run() == nil
})

var sshEngineOnce = sync.OnceValue(func() bool {
	cmd := exec.Command("docker", "--host", sshEngineHost, "version", "--format", "{{.Server.Version}}")
	return cmd.Run() == nil
})

func sshEngineUp() bool { return sshEngineOnce() }

// removeLabelledRemote removes from the ssh and open engines the containers
// and networks carrying label, when a script may have made some there.
func removeLabelledRemote(label string) {
	for _, sock := range []string{sshEngineSocket, openEngineSocket} {
		removeLabelledAt(sock, label)
	}
}

func removeLabelledAt(sock, label string) {
	if _, err := os.Stat(strings.TrimPrefix(sock, "unix://")); err == nil {
		removeLabelled(sock, label)
	}
}

// condSSHEngine is the script condition sshengine (scriptcmds_test.go).
func condSSHEngine() (bool, error) {
	return neededInCI(sshEngineUp(), "CI=true but the ssh engine does not answer: run scripts/ensure-ssh-engine.sh first")
}

// condOpenEngine is the script condition openengine (scriptcmds_test.go).
func condOpenEngine() (bool, error) {
	return neededInCI(openEngineOnce(), "CI=true but the open engine does not answer: run scripts/ensure-ssh-engine.sh --open first")
}
