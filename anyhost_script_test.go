package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// arm64Image is the linux/arm64 busybox image scripts/ensure-arm64.sh makes.
const arm64Image = "litterbox-test/busybox:arm64"

func anyhostScripts(s *scriptSet) {
	// buildlitterbox cgo|static DIR
	// builds this module's litterbox into DIR/litterbox with cgo on or off
	// (a plain `go build`, as `go install` does), and fails unless the
	// binary is dynamically linked (cgo) or static: a test of a cgo build
	// on a machine without a C compiler would prove nothing.
	s.cmd("buildlitterbox", func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 || (args[0] != "cgo" && args[0] != "static") {
			ts.Fatalf("usage: buildlitterbox cgo|static DIR")
		}
		out := filepath.Join(ts.MkAbs(args[1]), "litterbox")
		cgo := map[string]string{"cgo": "1", "static": "0"}[args[0]]
		cmd := exec.Command("go", "build", "-o", out, ".")
		// The test's own environment (GOCACHE, GOPATH), not the script's.
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
		if msg, err := cmd.CombinedOutput(); err != nil {
			ts.Fatalf("CGO_ENABLED=%s go build: %v\n%s", cgo, err, msg)
		}
		f, err := elf.Open(out)
		ts.Check(err)
		defer f.Close()
		dynamic := false
		for _, p := range f.Progs {
			dynamic = dynamic || p.Type == elf.PT_INTERP
		}
		if dynamic != (args[0] == "cgo") {
			ts.Fatalf("CGO_ENABLED=%s go build gave a binary with dynamic=%v (is a C compiler installed?)", cgo, dynamic)
		}
		fmt.Fprintf(ts.Stdout(), "built %s dynamic=%v\n", out, dynamic)
	})
	// loadimage NAME OS/ARCH
	// loads an image named NAME whose metadata says OS/ARCH, holding one
	// file (/hello), offline (docker load of a docker-save archive). It is
	// removed when the script ends.
	s.cmd("loadimage", cmdLoadImage)
	// arm64engine: the engine can run arm64Image (scripts/ensure-arm64.sh
	// ran). In CI its absence fails the script: .ci/run runs that script.
	s.cond("arm64engine", func() (bool, error) {
		_, errBinfmt := os.Stat("/proc/sys/fs/binfmt_misc/qemu-aarch64")
		errImage := exec.Command("docker", "image", "inspect", arm64Image).Run()
		if errBinfmt == nil && errImage == nil {
			return true, nil
		}
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("CI=true but %s or the qemu-aarch64 binfmt handler is missing: run scripts/ensure-arm64.sh as root", arm64Image)
		}
		return false, nil
	})
}

func cmdLoadImage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || !strings.Contains(args[1], "/") {
		ts.Fatalf("usage: loadimage NAME OS/ARCH")
	}
	goos, goarch, _ := strings.Cut(args[1], "/")
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	ts.Check(tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: 3}))
	_, err := tw.Write([]byte("hi\n"))
	ts.Check(err)
	ts.Check(tw.Close())
	layerSum := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"os": goos, "architecture": goarch,
		"config": map[string]any{"Cmd": []string{"sh"}, "Labels": map[string]string{"dev.litterbox.test": ts.Getenv("TESTID")}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{fmt.Sprintf("sha256:%x", layerSum)}},
	})
	ts.Check(err)
	cfgName := fmt.Sprintf("%x.json", sha256.Sum256(config))
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{args[0]}, "Layers": []string{"layer.tar"}}})
	ts.Check(err)
	var archive bytes.Buffer
	tw = tar.NewWriter(&archive)
	for _, f := range []struct {
		name string
		data []byte
	}{{"layer.tar", layer.Bytes()}, {cfgName, config}, {"manifest.json", manifest}} {
		ts.Check(tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}))
		_, err := tw.Write(f.data)
		ts.Check(err)
	}
	ts.Check(tw.Close())
	cmd := exec.Command("docker", "load")
	cmd.Stdin = &archive
	if msg, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("docker load: %v\n%s", err, msg)
	}
	ts.Defer(func() { _ = exec.Command("docker", "rmi", "--force", args[0]).Run() })
}
