package vm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/internal/kvm"
	"github.com/litterbox-dev/litterbox/runner"
)

func writeImage(t *testing.T) Image {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"vmlinuz", "initrd.img", "base.qcow2"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest := "recipe 1\nkernel 6.1.0-50-amd64\ncmdline console=ttyS0 root=/dev/vda rw init=/sbin/litterbox-boot\n"
	if err := os.WriteFile(filepath.Join(dir, "manifest"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := LoadImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestLoadImage(t *testing.T) {
	img := writeImage(t)
	if img.KernelRelease != "6.1.0-50-amd64" || img.Cmdline != "console=ttyS0 root=/dev/vda rw init=/sbin/litterbox-boot" ||
		img.Kernel != filepath.Join(img.Dir, "vmlinuz") || img.Base != filepath.Join(img.Dir, "base.qcow2") {
		t.Errorf("image = %+v", img)
	}
	_, err := LoadImage(filepath.Join(t.TempDir(), "none"))
	if err == nil || !strings.Contains(err.Error(), "scripts/ensure-vm-image.sh") {
		t.Errorf("a missing image: %v; want an error saying how to build it", err)
	}
}

// The VM gets the image's kernel and command line, its own disk, a network
// whose only way in is the ssh port on the host's loopback, and its keys
// through fw_cfg, never on the command line.
func TestQemuArgs(t *testing.T) {
	img := writeImage(t)
	m := New(Config{Dir: "/v", Image: img, MemoryMiB: 1024, CPUs: 2, Accel: kvm.Accel{Name: "kvm"}})
	args := m.qemuArgs(40022, false)
	line := strings.Join(args, " ")
	for _, want := range []string{
		"-accel kvm -cpu host", "-m 1024", "-smp 2",
		"-kernel " + img.Kernel, "-initrd " + img.Initrd, "-append " + img.Cmdline,
		"-drive file=/v/disk.qcow2,if=virtio,format=qcow2",
		"-netdev user,id=net0,hostfwd=tcp:127.0.0.1:40022-:22",
		"-fw_cfg name=opt/dev.litterbox/authorized_keys,file=/v/id_ed25519.pub",
		"-fw_cfg name=opt/dev.litterbox/host_key,file=/v/host_key",
		"-daemonize -pidfile /v/qemu.pid", "-chardev file,id=console,path=/v/console.log,append=on -serial chardev:console", "-no-reboot", "-nodefaults",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("qemu argv lacks %q:\n%s", want, line)
		}
	}
	if slices.Contains(args, "-incoming") || !strings.Contains(line, "-qmp unix:/v/qmp.sock,server=on,wait=off") {
		t.Errorf("a boot's argv: %s", line)
	}
	// A VM with a saved state resumes from it.
	if line := strings.Join(m.qemuArgs(40022, true), " "); !strings.Contains(line, "-incoming exec:exec cat '/v/state' 2>/dev/null") {
		t.Errorf("a resume's argv lacks the state: %s", line)
	}
	if slices.Contains(args, "-enable-kvm") && m.c.Accel.Name != "kvm" {
		t.Error("kvm asked for without kvm")
	}
	tcg := New(Config{Dir: "/v", Image: img, Accel: kvm.Accel{Name: "tcg"}})
	if line := strings.Join(tcg.qemuArgs(1, false), " "); !strings.Contains(line, "-accel tcg,thread=multi,tb-size=256 -cpu max") || !strings.Contains(line, "-m 2048") {
		t.Errorf("tcg argv: %s", line)
	}
}

// The ssh configuration names the VM by an alias of its own, reached on
// the host's loopback with the VM's key, and checks its host key.
func TestSSHConfig(t *testing.T) {
	m := New(Config{Dir: "/v", Image: Image{}})
	cfg := m.sshConfig(40022)
	for _, want := range []string{"Host " + m.alias + "\n", "HostName 127.0.0.1", "Port 40022", "User root", "IdentityFile /v/id_ed25519",
		"IdentitiesOnly yes", "UserKnownHostsFile /v/known_hosts", "HostKeyAlias " + m.alias, "StrictHostKeyChecking yes", "BatchMode yes"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("ssh config lacks %q:\n%s", want, cfg)
		}
	}
	if m.Endpoint() != "ssh://"+m.alias+"/var/run/docker.sock" || !strings.HasPrefix(m.alias, "litterbox-vm-") {
		t.Errorf("endpoint %s", m.Endpoint())
	}
	if other := New(Config{Dir: "/w"}); other.alias == m.alias {
		t.Error("two VMs share an ssh alias")
	}
}

func TestStatusStopped(t *testing.T) {
	m := New(Config{Dir: t.TempDir(), Idle: time.Minute})
	if st := m.Status(); st.State != StateStopped || st.PID != 0 {
		t.Errorf("status of a VM never started = %+v", st)
	}
}

// Start returns once the VM's sshd greets a connection, not only once its
// init said it was ready: an emulated VM on a busy host took past ssh's
// 45 s to greet ssh's first connection after a boot ("Connection timed
// out during banner exchange"). A connection the VM drops before its sshd
// listens (qemu accepts it on the host first) is tried again; no greeting
// before the deadline is an error that says so.
func TestWaitGreeting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if i == 0 { // not listening yet in the VM: qemu drops it
				c.Close()
				continue
			}
			time.Sleep(300 * time.Millisecond) // slow to greet
			c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n"))
			c.Close()
		}
	}()
	m := New(Config{Dir: t.TempDir(), Accel: kvm.Accel{Name: "tcg"}})
	stop := fakeQemu(t, m)
	port := l.Addr().(*net.TCPAddr).Port
	start := time.Now()
	if err := m.waitGreeting(context.Background(), port, time.Now().Add(10*time.Second)); err != nil {
		t.Fatalf("waitGreeting: %v", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("returned after %s, before the greeting", took)
	}

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never greeted
		}
	}()
	err = m.waitGreeting(context.Background(), silent.Addr().(*net.TCPAddr).Port, time.Now().Add(time.Second))
	if err == nil || !strings.Contains(err.Error(), "sshd") || !strings.Contains(err.Error(), "try again") {
		t.Errorf("a VM whose sshd never greets: %v; want an error naming its sshd, and what to do", err)
	}

	// An interrupt ends the wait on a connection never greeted, at once.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start = time.Now()
	err = m.waitGreeting(ctx, silent.Addr().(*net.TCPAddr).Port, time.Now().Add(20*time.Second))
	if took := time.Since(start); err == nil || took > 5*time.Second {
		t.Errorf("interrupted after 300 ms, waitGreeting returned %v after %s", err, took)
	}

	// A VM that stopped is said at once, not after the whole boot's bound.
	stop()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	start = time.Now()
	err = m.waitGreeting(context.Background(), closed.Addr().(*net.TCPAddr).Port, time.Now().Add(20*time.Second))
	if took := time.Since(start); err == nil || !strings.Contains(err.Error(), "stopped") || took > 5*time.Second {
		t.Errorf("a VM that stopped: waitGreeting returned %v after %s; want at once an error that says it stopped", err, took)
	}
}

// fakeQemu runs a stand-in for m's qemu (its name, its -name) until the
// test ends, its pid in m's pid file, and returns what ends it.
func fakeQemu(t *testing.T, m *Machine) func() {
	t.Helper()
	pid, stop := qemuNamed(t, m.alias)
	if err := os.WriteFile(m.path("qemu.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.running(); !ok {
		t.Fatal("the stand-in qemu is not taken for running")
	}
	return stop
}

// A resume's qemu (daemonized) exits once the VM runs, while the command
// that feeds it the saved state, its child, still reads it: that command
// must not hold the streams of the qemu litterbox ran, or the run waits
// for the whole state to be read and then fails ("WaitDelay expired before
// I/O complete": vm_journey's resume under load). Here it is run as qemu
// runs it (sh -c, its stdout qemu's, its stderr inherited), with a state
// that is never written.
func TestResumeFeedLeavesStreams(t *testing.T) {
	dir := t.TempDir()
	m := New(Config{Dir: dir, Image: writeImage(t), Accel: kvm.Accel{Name: "tcg"}})
	if err := syscall.Mkfifo(m.path("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := m.qemuArgs(40022, true)
	i := slices.Index(args, "-incoming")
	if i < 0 || i+1 == len(args) || !strings.HasPrefix(args[i+1], "exec:") {
		t.Fatalf("a resume's argv: %v", args)
	}
	feed := strings.TrimPrefix(args[i+1], "exec:")
	defer func() { // let the feed end
		if f, err := os.OpenFile(m.path("state"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	qemu := runner.New("sh", "-c", `sh -c "$1" </dev/null >/dev/null & exit 0`, "qemu", feed)
	start := time.Now()
	if _, err := (runner.Exec{}).Run(context.Background(), qemu); err != nil {
		t.Fatalf("qemu that daemonized, its feed still reading: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the run took %s: it waited for the feed", took)
	}
}

// qemuNamed runs a process named as qemu, with -name alias, until the test
// ends; it returns its pid and what ends it.
func qemuNamed(t *testing.T, alias string) (int, func()) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nwhile :; do sleep 0.1; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-name", alias, "-daemonize")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	t.Cleanup(stop)
	for i := 0; ; i++ { // until it has exec'd
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if strings.HasPrefix(string(comm), "qemu") {
			break
		}
		if i == 100 {
			t.Fatalf("the stand-in qemu is named %q", comm)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd.Process.Pid, stop
}

// A pid file that a killed qemu left names, once its pid is reused,
// another repository's VM: Start neither takes that VM for its own nor,
// when its own qemu fails, kills it.
func TestStartLeavesAnotherVM(t *testing.T) {
	other, _ := qemuNamed(t, "litterbox-vm-000000000000")
	m := withQemu(t, "#!/bin/sh\necho 'qemu-system-x86_64: cannot boot' >&2\nexit 1\n")
	if err := os.WriteFile(m.path("qemu.pid"), []byte(strconv.Itoa(other)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := m.Status(); st.State != StateStopped {
		t.Errorf("status with another VM's pid in its pid file: %+v", st)
	}
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot boot") {
		t.Errorf("Start with a qemu that fails, another VM's pid in its pid file: %v", err)
	}
	if syscall.Kill(other, 0) != nil {
		t.Errorf("the other VM's qemu (pid %d) was killed", other)
	}
}

// TestMain runs the test binary as a stand-in qemu that holds a pid
// file's lock (holdPidFile) when asked to.
func TestMain(m *testing.M) {
	if path := os.Getenv("LITTERBOX_TEST_HOLD_PIDFILE"); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			err = syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		_, _ = io.Copy(io.Discard, os.Stdin) // until it is told to end
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdPidFile runs a process that holds m's pid file's lock as qemu does
// (a POSIX write lock on the whole file, as /proc/locks shows of a real
// one) until the test ends, the pid file naming it; it returns what ends
// it.
func holdPidFile(t *testing.T, m *Machine) func() {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "LITTERBOX_TEST_HOLD_PIDFILE="+m.path("qemu.pid"))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.path("qemu.pid"), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	release := sync.OnceFunc(func() { in.Close(); _ = cmd.Wait() })
	t.Cleanup(release)
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("the stand-in did not lock the pid file: %q, %v", line, err)
	}
	if err := os.WriteFile(m.path("qemu.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return release
}

// A qemu of this VM that was killed and is still ending holds its pid
// file's lock, though its command line is gone: Start waits for it to end
// before it starts another, which would fail ("Cannot lock pid file").
// Here the ending qemu is a process that holds the lock half a second.
func TestStartWaitsForAKilledQemu(t *testing.T) {
	ended := filepath.Join(t.TempDir(), "ended")
	m := withQemu(t, "#!/bin/sh\n[ -e "+ended+" ] || { echo 'started while the killed qemu was ending' >&2; exit 1; }\necho 'qemu-system-x86_64: cannot boot' >&2\nexit 1\n")
	release := holdPidFile(t, m)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(500 * time.Millisecond)
		_ = os.WriteFile(ended, nil, 0o600)
		release()
	}()
	err := m.Start(context.Background())
	<-done
	if err == nil || !strings.Contains(err.Error(), "cannot boot") {
		t.Errorf("Start beside a killed qemu still ending: %v; want it to wait, then run its own qemu", err)
	}
}

// A qemu of this VM that has exited and is not yet reaped (a zombie) holds
// nothing: Start does not wait for it (it waited the whole 30 s).
func TestStartLeavesAZombieQemu(t *testing.T) {
	m := withQemu(t, "#!/bin/sh\necho 'qemu-system-x86_64: cannot boot' >&2\nexit 1\n")
	pid, _ := qemuNamed(t, m.alias) // reaped when the test ends
	if err := os.WriteFile(m.path("qemu.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if _, after, _ := strings.Cut(string(stat), ") "); strings.HasPrefix(after, "Z") {
			break
		}
		if i == 100 {
			t.Fatalf("the killed stand-in qemu did not become a zombie: %q", stat)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Start(ctx); err == nil || !strings.Contains(err.Error(), "cannot boot") {
		t.Errorf("Start beside a zombie of its qemu: %v; want its own qemu run at once", err)
	}
}

// An interrupt ends the wait for a killed qemu to end, and the start: no
// qemu is run.
func TestStartInterruptedWhileAQemuEnds(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	m := withQemu(t, "#!/bin/sh\ntouch "+ran+"\nexit 1\n")
	holdPidFile(t, m)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	err := m.Start(ctx)
	if took := time.Since(start); !errors.Is(err, context.Canceled) || took > 10*time.Second {
		t.Errorf("interrupted 300 ms into the wait for a qemu ending, Start returned %v after %s; want it interrupted at once", err, took)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("an interrupted start ran qemu")
	}
}

// A qemu whose run failed after it daemonized (here: its child held the
// run's stderr past the runner's wait) is not left running: the VM would
// run on with no idle watcher to stop it, nor anything to use it.
func TestStartFailedLeavesNoVM(t *testing.T) {
	fake := `#!/bin/sh
# A stand-in for qemu that daemonizes (its pid file names the daemon) and
# exits 0, the daemon keeping its stderr.
if [ "$1" = --daemon ]; then sleep 30; exit 0; fi
for a; do [ "$prev" = -pidfile ] && pf=$a; prev=$a; done
"$0" --daemon "$@" </dev/null >/dev/null &
echo $! >"$pf"
exit 0
`
	m := withQemu(t, fake)
	defer m.kill()
	if err := m.Start(context.Background()); err == nil {
		t.Fatal("Start succeeded with a qemu that failed")
	}
	if pid, ok := m.running(); ok {
		t.Errorf("the qemu of a failed start runs on (pid %d)", pid)
	}
}

// withQemu is a VM (its disk made) whose Start runs script as qemu.
func withQemu(t *testing.T, script string) *Machine {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "qemu-system-x86_64"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	m := New(Config{Dir: t.TempDir(), Image: writeImage(t), Accel: kvm.Accel{Name: "tcg"}, BootTimeout: 5 * time.Second, Runner: runner.Exec{}})
	if err := os.WriteFile(m.path("disk.qcow2"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}
