package e2e

import (
	"os/exec"
	"strings"
)

// condGvisor is the script condition gvisor (scriptcmds_test.go).
func condGvisor() (bool, error) {
	if !dockerUp() {
		return false, nil
	}
	out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output()
	return neededInCI(err == nil && strings.Contains(string(out), `"runsc"`), "CI=true but the Docker engine has no runtime runsc: run scripts/ensure-gvisor.sh first")
}
