package e2e

import (
	"os/exec"
)

// debianImage is the real Debian userland of scripts/ensure-debian-image.sh
// (debootstrap minbase with python3, imported offline).
const debianImage = "litterbox-test/debian-python:bookworm"

// condDebianImage is the script condition debianimage (scriptcmds_test.go).
func condDebianImage() (bool, error) {
	return neededInCI(exec.Command("docker", "image", "inspect", debianImage).Run() == nil, "CI=true but the engine has no %s: run scripts/ensure-debian-image.sh first (as root; it needs Debian's mirror once, then its cache)", debianImage)
}

// nodeImage is the Debian image with node 20 or later of
// scripts/ensure-node-image.sh, which Gemini CLI needs (bookworm's is 18).
const nodeImage = "litterbox-test/node:bookworm"

// condNodeImage is the script condition nodeimage (scriptcmds_test.go).
func condNodeImage() (bool, error) {
	return neededInCI(exec.Command("docker", "image", "inspect", nodeImage).Run() == nil, "CI=true but the engine has no %s: run scripts/ensure-node-image.sh first", nodeImage)
}

// goImage is the Debian image with the host's Go toolchain of
// scripts/ensure-go-image.sh (cache_go.txtar).
const goImage = "litterbox-test/go:bookworm"

// condGoImage is the script condition goimage (scriptcmds_test.go).
func condGoImage() (bool, error) {
	return neededInCI(exec.Command("docker", "image", "inspect", goImage).Run() == nil, "CI=true but the engine has no %s: run scripts/ensure-go-image.sh first", goImage)
}
