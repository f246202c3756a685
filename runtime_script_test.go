package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func runtimeScripts(s *scriptSet) {
	// gvisor: the Docker engine offers the runtime runsc (gVisor), as
	// scripts/ensure-gvisor.sh registers it. In CI a Docker engine without
	// it fails the script instead of skipping it.
	s.cond("gvisor", func() (bool, error) {
		if !dockerUp() {
			return false, nil
		}
		out, err := exec.Command("docker", "info", "--format", "{{json .Runtimes}}").Output()
		if err == nil && strings.Contains(string(out), `"runsc"`) {
			return true, nil
		}
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("CI=true but the Docker engine has no runtime runsc: run scripts/ensure-gvisor.sh first")
		}
		return false, nil
	})
}
