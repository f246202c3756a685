package main

import (
	"fmt"
	"os"
	"os/exec"
)

// debianImage is the real Debian userland of scripts/ensure-debian-image.sh
// (debootstrap minbase with python3, imported offline).
const debianImage = "litterbox-test/debian-python:bookworm"

func imagesScripts(s *scriptSet) {
	// debianimage: the engine holds debianImage. In CI (CI=true) a missing
	// image fails the script instead of skipping it: .ci/run makes it.
	s.cond("debianimage", func() (bool, error) {
		if exec.Command("docker", "image", "inspect", debianImage).Run() == nil {
			return true, nil
		}
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("CI=true but the engine has no %s: run scripts/ensure-debian-image.sh first (as root; it needs Debian's mirror once, then its cache)", debianImage)
		}
		return false, nil
	})
}
