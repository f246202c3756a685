package e2e

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

// cmdBuildLitterbox is the script command buildlitterbox (scriptcmds_test.go).
func cmdBuildLitterbox(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 || (args[0] != "cgo" && args[0] != "static") {
		ts.Fatalf("usage: buildlitterbox cgo|static DIR")
	}
	out := filepath.Join(ts.MkAbs(args[1]), "litterbox")
	cgo := map[string]string{"cgo": "1", "static": "0"}[args[0]]
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = moduleRoot
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
}

// condARM64Engine is the script condition arm64engine (scriptcmds_test.go).
func condARM64Engine() (bool, error) {
	_, errBinfmt := os.Stat("/proc/sys/fs/binfmt_misc/qemu-aarch64")
	errImage := exec.Command("docker", "image", "inspect", arm64Image).Run()
	return neededInCI(errBinfmt == nil && errImage == nil, "CI=true but %s or the qemu-aarch64 binfmt handler is missing: run scripts/ensure-arm64.sh as root", arm64Image)
}
