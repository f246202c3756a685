package vm_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/internal/kvm"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/contract"
	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/runner"
)

// need fails the test with CI=true, and skips it otherwise, when the VM
// engine cannot run here (vm.Runnable: the image and qemu; emulated where
// KVM cannot be used, as the engine itself runs).
func need(t *testing.T) vm.Image {
	t.Helper()
	img, accel, err := vm.Runnable(vm.DefaultImageDir())
	if err == nil {
		t.Logf("the VM runs under %s %s", accel.Name, accel.Note)
		return img
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true but the VM engine cannot run: %v", err)
	}
	t.Skipf("the VM engine cannot run: %v", err)
	return img
}

// rss is the resident memory of a process, in MiB.
func rss(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb / 1024
		}
	}
	return 0
}

// TestContract boots one VM and runs the provider contract on its engine,
// then lets it stop when idle, and starts it again by using it: the
// sandbox made before the stop is still there (stopped: what lived in its
// memory is gone), and a VM killed from outside is reported and started
// again in the same way. The boots are timed in the log.
func TestContract(t *testing.T) {
	img := need(t)
	ctx := context.Background()
	run := runner.Exec{Log: log.New(io.Discard)}
	// Idle 3 minutes: the watcher checks every 18 s, so it notices the 2 s
	// idle time below soon.
	m := vm.New(vm.Config{Dir: t.TempDir(), Image: img, Idle: 3 * time.Minute, Runner: run})
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	p, err := vm.NewProvider(m, run)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("first boot (accel %s%s): %.1f s to the engine answering", m.Accel().Name, note(m.Accel()), time.Since(start).Seconds())
	st := m.Status()
	t.Logf("idle memory of the VM after its boot: qemu's resident set %d MiB (of %d MiB given)", rss(st.PID), 2048)
	dead, err := vm.NewProvider(vm.New(vm.Config{Dir: t.TempDir(), Runner: run}), run)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	label := fmt.Sprintf("dev.litterbox.test=contract-%d-vm", os.Getpid())
	t.Run("contract", func(t *testing.T) {
		contract.Run(t, contract.Engine{
			Provider: p, Kind: vm.Engine, Dead: dead, Label: label,
			Kernel: func(t *testing.T, inside string) {
				if !strings.HasPrefix(inside, img.KernelRelease+"\n") || !strings.Contains(inside, "Debian") || strings.Contains(inside, strings.TrimSpace(string(host))) {
					t.Errorf("inside the sandbox: %q; want the VM's kernel %s, nothing of the host's %s", inside, img.KernelRelease, strings.TrimSpace(string(host)))
				}
			},
		})
	})
	t.Logf("idle memory of the VM after the contract: qemu's resident set %d MiB", rss(st.PID))

	// A sandbox to find again, with a file in its memory (its /src is a
	// tmpfs).
	k, v, _ := strings.Cut(label, "=")
	spec := provider.Spec{Name: fmt.Sprintf("lbvm-%d", os.Getpid()), Image: "busybox:latest", Labels: map[string]string{k: v, "dev.litterbox.slug": "kept"},
		Network: provider.NetworkIsolated, Cmd: []string{"sleep", "infinity"}, Init: true,
		Tmpfs: []provider.Tmpfs{{Path: "/src", Mode: 0o1777, Exec: true}}}
	sb, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	// Not removed: it goes with the VM's directory.
	cat := func() (string, error) {
		res, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", "cat /src/kept"}})
		return string(res.Stdout), err
	}
	if _, err := p.Exec(ctx, provider.ExecRequest{Ref: sb.Ref, Cmd: []string{"sh", "-c", "echo in memory > /src/kept"}}); err != nil {
		t.Fatal(err)
	}

	// Idle: the watcher suspends it (its memory saved to its directory),
	// and the next use resumes it where it was: the file in /src is there.
	if err := m.SetIdle(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	deadline := time.Now().Add(3 * time.Minute)
	for m.Status().State != vm.StateSuspended {
		if time.Now().After(deadline) {
			t.Fatalf("the VM is not suspended 3 minutes after it became idle: %+v", m.Status())
		}
		time.Sleep(500 * time.Millisecond)
	}
	fi, _ := os.Stat(m.Dir() + "/state")
	t.Logf("idle suspend: %.1f s after the last use (2 s idle, the watcher's check, the save); saved state %d MiB", time.Since(start).Seconds(), fi.Size()>>20)
	if err := m.SetIdle(10 * time.Minute); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if got, err := cat(); err != nil || got != "in memory\n" {
		t.Fatalf("after the idle suspend, /src/kept = %q, %v; want it kept", got, err)
	}
	t.Logf("resume from the saved state to an exec's answer: %.1f s", time.Since(start).Seconds())

	// Killed from outside: reported, with how it ended, and the next use
	// boots it again, the sandbox still there but stopped: what lived in
	// its memory is gone (after a sync: what a VM has not written is lost
	// with it, as on a host that loses power).
	if out, err := exec.Command("ssh", "-F", m.SSHConfig(), strings.TrimPrefix(strings.TrimSuffix(m.Endpoint(), "/var/run/docker.sock"), "ssh://"), "sync").CombinedOutput(); err != nil {
		t.Fatalf("sync the VM's disk: %v: %s", err, out)
	}
	if err := syscall.Kill(m.Status().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50 && m.Status().State == vm.StateRunning; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if st := m.Status(); st.State != vm.StateStopped || st.Exit == "" {
		t.Errorf("a VM killed from outside: %+v; want stopped, with how it ended", st)
	}
	start = time.Now()
	list, err := p.List(ctx, provider.Selector{Labels: map[string]string{"dev.litterbox.slug": "kept", k: v}})
	if err != nil || len(list) != 1 || list[0].Ref.ID != sb.Ref.ID || list[0].State != provider.StateStopped {
		t.Fatalf("after the VM was killed, list = %+v, %v; want the VM started again and the sandbox there, stopped", list, err)
	}
	t.Logf("second boot (image cached, disk kept): %.1f s to the engine answering and a list", time.Since(start).Seconds())
}

func note(a kvm.Accel) string {
	if a.Note == "" {
		return ""
	}
	return ": " + a.Note
}
