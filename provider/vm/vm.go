// Package vm is the VM engine: one virtual machine per repository, with a
// Docker engine inside, in which that repository's sandboxes run as on any
// Docker engine. A sandbox then has a kernel between it and the host: the
// VM's, under KVM (or emulated, where KVM cannot boot it).
//
// The image (kernel, initramfs, a root disk with Docker's engine and an
// sshd, nothing else listening) is built offline from Debian's packages by
// scripts/ensure-vm-image.sh and cached outside the clone. Each VM has a
// directory of its own (Config.Dir) holding its disk (a copy-on-write
// overlay of the image's), its keys, its console log and its pid: it keeps
// the engine's images, containers and volumes across stops; what lived in
// memory (a sandbox's tmpfs /src, its processes) does not survive a stop.
//
// The host reaches the VM's engine only through ssh: qemu's user-mode
// network forwards one port of the host's loopback to the VM's sshd, which
// takes one key (made for this VM, given at boot through qemu's fw_cfg), and
// provider/docker's ssh support keeps one connection per VM and forwards the
// engine's socket and the sandboxes' ports over it. The VM starts on first
// use (Start) and a watcher started with it stops it after Config.Idle
// without use (Touch marks a use).
package vm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
	"github.com/litterbox-dev/litterbox/internal/kvm"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// Image is a VM image as scripts/ensure-vm-image.sh builds it.
type Image struct {
	Dir, Kernel, Initrd, Base string
	// Cmdline is the kernel command line the image boots with.
	Cmdline string
	// KernelRelease is its kernel's `uname -r`.
	KernelRelease string
}

// DefaultImageDir is where scripts/ensure-vm-image.sh caches the image:
// LITTERBOX_VM_IMAGE when set.
func DefaultImageDir() string {
	return cmp.Or(os.Getenv("LITTERBOX_VM_IMAGE"), "/var/cache/litterbox/vm/bookworm-v1")
}

// LoadImage reads the image in dir.
func LoadImage(dir string) (Image, error) {
	img := Image{Dir: dir, Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initrd.img"), Base: filepath.Join(dir, "base.qcow2")}
	data, err := os.ReadFile(filepath.Join(dir, "manifest"))
	if err != nil {
		return img, fmt.Errorf("no VM image in %s (%v): build it with `scripts/ensure-vm-image.sh` in the litterbox repository (as root; a few minutes, offline from Debian's packages), or point LITTERBOX_VM_IMAGE at one", dir, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "cmdline":
			img.Cmdline = v
		case "kernel":
			img.KernelRelease = v
		}
	}
	for _, f := range []string{img.Kernel, img.Initrd, img.Base} {
		if _, err := os.Stat(f); err != nil {
			return img, fmt.Errorf("the VM image in %s is incomplete (%v): build it again with `scripts/ensure-vm-image.sh`", dir, err)
		}
	}
	if img.Cmdline == "" {
		return img, fmt.Errorf("the VM image in %s names no kernel command line: build it again with `scripts/ensure-vm-image.sh`", dir)
	}
	return img, nil
}

// Runnable says whether the VM engine can run on this machine with the image
// in dir, and how (its Accel): the image and qemu are all it needs. KVM is
// not: without a usable /dev/kvm (none, or PVM-only) the VM runs emulated
// (TCG), slower, but it runs.
func Runnable(dir string) (Image, kvm.Accel, error) {
	img, err := LoadImage(dir)
	if err != nil {
		return img, kvm.Accel{}, err
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return img, kvm.Accel{}, fmt.Errorf("qemu-system-x86_64 is not installed (Debian's qemu-system-x86): `scripts/ensure-vm-image.sh` installs it")
	}
	return img, kvm.Detect(), nil
}

// Config describes one VM.
type Config struct {
	// Dir is the VM's own directory (one per repository).
	Dir   string
	Image Image
	// MemoryMiB and CPUs size the VM: 2048 and 2 when zero.
	MemoryMiB int
	CPUs      int
	// Idle is how long the VM runs unused before its watcher stops it: 30
	// minutes when zero.
	Idle time.Duration
	// BootTimeout bounds a boot: 90 s under KVM, 300 s emulated, when
	// zero.
	BootTimeout time.Duration
	Accel       kvm.Accel
	Runner      runner.Runner
}

// DefaultIdle is how long a VM runs unused before it is stopped.
const DefaultIdle = 30 * time.Minute

// Machine is one VM. Its methods may be called from several processes at
// once: starting and stopping take a lock in its directory.
type Machine struct {
	c Config
	// alias names the VM in its ssh configuration, and so its endpoint.
	alias string
}

// New returns the VM c describes; nothing starts.
func New(c Config) *Machine {
	c.MemoryMiB = cmp.Or(c.MemoryMiB, 2048)
	c.CPUs = cmp.Or(c.CPUs, 2)
	c.Idle = cmp.Or(c.Idle, DefaultIdle)
	if c.Accel.Name == "" {
		c.Accel = kvm.Detect()
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = 90 * time.Second
		if c.Accel.Name != "kvm" {
			c.BootTimeout = 300 * time.Second
		}
	}
	sum := sha256.Sum256([]byte(c.Dir))
	return &Machine{c: c, alias: "litterbox-vm-" + hex.EncodeToString(sum[:6])}
}

func (m *Machine) path(name string) string { return filepath.Join(m.c.Dir, name) }

// Endpoint is the VM's engine, as the docker provider reaches it (with
// SSHConfig).
func (m *Machine) Endpoint() string { return "ssh://" + m.alias + "/var/run/docker.sock" }

// SSHConfig is the ssh configuration file that names the VM.
func (m *Machine) SSHConfig() string { return m.path("ssh_config") }

// Dir is the VM's directory.
func (m *Machine) Dir() string { return m.c.Dir }

// Accel is how the VM runs.
func (m *Machine) Accel() kvm.Accel { return m.c.Accel }

// States of a VM.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	// StateSuspended: not running, its memory saved (Suspend); the next
	// use resumes it where it was.
	StateSuspended = "suspended"
)

// Status is what `list` and `doctor` show of a VM.
type Status struct {
	State string    `json:"state"`
	PID   int       `json:"pid,omitempty"`
	Accel kvm.Accel `json:"accel"`
	// Since is when it started; LastUsed when it was last used; StopsAt
	// when its watcher stops it unless it is used again.
	Since    time.Time `json:"since,omitzero"`
	LastUsed time.Time `json:"lastUsed,omitzero"`
	StopsAt  time.Time `json:"stopsAt,omitzero"`
	Dir      string    `json:"dir"`
	// Exit says how a VM that is not running ended, when it did not end
	// by a stop (its console's last lines).
	Exit string `json:"exit,omitempty"`
}

// Status reports the VM's state without starting it.
func (m *Machine) Status() Status {
	st := Status{State: StateStopped, Accel: m.c.Accel, Dir: m.c.Dir}
	if fi, err := os.Stat(m.path("used")); err == nil {
		st.LastUsed = fi.ModTime()
	}
	pid, ok := m.running()
	if !ok {
		if _, err := os.Stat(m.path("state")); err == nil {
			st.State = StateSuspended
			return st
		}
		_, stopped := os.Stat(m.path("stopped"))
		_, pidfile := os.Stat(m.path("qemu.pid"))
		if stopped != nil && pidfile == nil {
			// qemu removes its pid file when it exits; it is left
			// when it was killed.
			st.Exit = "the VM ended without a stop (qemu was killed or crashed)"
			if tail := m.consoleTail(5); tail != "" {
				st.Exit += "; its console ends:\n" + tail
			}
		}
		return st
	}
	st.State, st.PID = StateRunning, pid
	if fi, err := os.Stat(m.path("qemu.pid")); err == nil {
		st.Since = fi.ModTime()
	}
	if !st.LastUsed.IsZero() {
		st.StopsAt = st.LastUsed.Add(m.c.Idle)
	}
	return st
}

// running reports qemu's pid when it runs: the pid file names a live qemu
// of this VM (its -name), not a pid reused by something else, another
// repository's VM among them (a killed qemu leaves its pid file).
func (m *Machine) running() (int, bool) {
	data, err := os.ReadFile(m.path("qemu.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err == nil && !strings.HasPrefix(string(comm), "qemu") {
		return 0, false
	}
	argv, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && !bytes.Contains(argv, []byte("\x00-name\x00"+m.alias+"\x00")) {
		return 0, false
	}
	return pid, true
}

// waitEnded waits, 30 s at most, while a qemu of this VM that was killed
// is still ending: its memory is gone, so running() no longer knows it by
// its command line, but until it has exited it holds its pid file's lock,
// and a qemu started meanwhile fails ("Cannot lock pid file"). A qemu that
// has exited holds nothing, reaped or not (a zombie): it is not waited
// for. It returns ctx's error when ctx ends first.
func (m *Machine) waitEnded(ctx context.Context) error {
	for deadline := time.Now().Add(30 * time.Second); pidFileLocked(m.path("qemu.pid")) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// pidFileLocked says a process holds a lock on qemu's pid file at path:
// qemu takes a POSIX write lock on the whole file (fcntl, not flock), and
// the kernel drops it as the process exits.
func pidFileLocked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart}
	return syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk) == nil && lk.Type != syscall.F_UNLCK
}

// Touch marks a use: the idle watcher counts from the last one.
func (m *Machine) Touch() {
	now := time.Now()
	if err := os.Chtimes(m.path("used"), now, now); err != nil {
		if f, err := os.OpenFile(m.path("used"), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		}
	}
}

// unreachable words a VM that cannot be started as an unreachable engine.
func (m *Machine) unreachable(format string, args ...any) error {
	ep := "vm " + m.c.Dir
	return &provider.UnreachableError{Endpoint: ep, Reason: "cannot start the engine at " + ep + ": " + fmt.Sprintf(format, args...)}
}

// SetIdle changes how long the VM runs unused before its watcher stops it;
// a running watcher reads it at its next check.
func (m *Machine) SetIdle(d time.Duration) error {
	m.c.Idle = d
	if err := os.MkdirAll(m.c.Dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(m.path("idle"), []byte(strconv.Itoa(max(int(d.Seconds()), 1))+"\n"), 0o600)
}

// Start boots the VM unless it runs, and returns once its engine is up
// (its init says so on the console). It is what every use of the engine
// calls first; when the VM runs it costs a read of its pid file.
func (m *Machine) Start(ctx context.Context) error {
	if _, ok := m.running(); ok {
		m.Touch()
		return nil
	}
	if err := os.MkdirAll(m.c.Dir, 0o700); err != nil {
		return m.unreachable("%v", err)
	}
	unlock, err := flock.Lock(m.path("lock"))
	if err != nil {
		return m.unreachable("%v", err)
	}
	defer unlock()
	if _, ok := m.running(); ok { // started by another process meanwhile
		m.Touch()
		return nil
	}
	if err := m.waitEnded(ctx); err != nil {
		return err
	}
	if m.c.Image.Cmdline == "" {
		return m.unreachable("no VM image: build it with `scripts/ensure-vm-image.sh` in the litterbox repository")
	}
	r := m.c.Runner
	for _, key := range []string{"host_key", "id_ed25519"} {
		if _, err := os.Stat(m.path(key)); err != nil {
			if _, err := r.Run(ctx, runner.New("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", m.alias, "-f", m.path(key))); err != nil {
				return m.unreachable("make its ssh key: %v", err)
			}
		}
	}
	if _, err := os.Stat(m.path("disk.qcow2")); err != nil {
		if _, err := r.Run(ctx, runner.New("qemu-img", "create", "-q", "-f", "qcow2", "-b", m.c.Image.Base, "-F", "qcow2", m.path("disk.qcow2"))); err != nil {
			return m.unreachable("make its disk: %v", err)
		}
	}
	hostKey, err := os.ReadFile(m.path("host_key.pub"))
	if err != nil {
		return m.unreachable("%v", err)
	}
	fields := strings.Fields(string(hostKey))
	if len(fields) < 2 {
		return m.unreachable("its host key %s is not a public key", m.path("host_key.pub"))
	}
	if err := os.WriteFile(m.path("known_hosts"), []byte(m.alias+" "+fields[0]+" "+fields[1]+"\n"), 0o600); err != nil {
		return m.unreachable("%v", err)
	}
	_, err = os.Stat(m.path("state"))
	resume := err == nil
	var lastErr error
	var port int
	for try := 0; try < 3; try++ {
		port, err = freePort()
		if err != nil {
			return m.unreachable("find a free port: %v", err)
		}
		if err := os.WriteFile(m.SSHConfig(), []byte(m.sshConfig(port)), 0o600); err != nil {
			return m.unreachable("%v", err)
		}
		if !resume {
			os.Remove(m.path("console.log"))
		}
		os.Remove(m.path("stopped"))
		_, lastErr = r.Run(ctx, runner.New("qemu-system-x86_64", m.qemuArgs(port, resume)...).As(runner.Work))
		if lastErr == nil {
			break
		}
		if !strings.Contains(runner.Stderr(lastErr), "hostfwd") { // not a port taken meanwhile
			break
		}
	}
	if lastErr != nil {
		// A qemu that daemonized before its run failed would run on
		// with no idle watcher and no use.
		m.kill()
		return m.unreachable("qemu: %v", lastErr)
	}
	m.Touch()
	deadline := time.Now().Add(m.c.BootTimeout)
	if resume {
		err = m.waitResumed(ctx, deadline)
	} else {
		err = m.waitReady(ctx, deadline)
	}
	if err == nil {
		err = m.waitGreeting(ctx, port, deadline)
	}
	if err != nil {
		m.kill()
		return err
	}
	return m.watch()
}

// waitResumed waits until qemu has loaded the saved state and runs the VM
// on from where it was; the state, now behind the disk, is removed. A
// state that cannot be loaded is removed too (the next start boots), and
// said.
func (m *Machine) waitResumed(ctx context.Context, deadline time.Time) error {
	for {
		st, err := m.qmpStatus(ctx)
		if err == nil && st == "running" {
			return os.Remove(m.path("state"))
		}
		if err == nil && st == "paused" {
			// Loaded: it was saved stopped (Suspend stops it first, for a
			// state that does not change while it is written), so it
			// waits for a cont.
			err = m.qmpDo(ctx, "cont")
		}
		_, alive := m.running()
		if !alive || time.Now().After(deadline) {
			os.Rename(m.path("state"), m.path("state.failed"))
			return m.unreachable("it did not resume from its saved state (status %q, %v; qemu running: %v); the state is kept as %s, and the next start boots afresh (what lived in memory is lost)",
				st, err, alive, m.path("state.failed"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (m *Machine) qmpDo(ctx context.Context, cmd string) error {
	q, err := dialQMP(ctx, m.path("qmp.sock"))
	if err != nil {
		return err
	}
	defer q.close()
	_, err = q.do(cmd, nil)
	return err
}

func (m *Machine) qmpStatus(ctx context.Context) (string, error) {
	q, err := dialQMP(ctx, m.path("qmp.sock"))
	if err != nil {
		return "", err
	}
	defer q.close()
	return q.status()
}

// Suspend saves the whole VM (memory included: the sandboxes' tmpfs /src,
// their processes, paused or not) to a file in its directory and ends
// qemu; the next Start resumes it from there instead of booting. When the
// save fails the VM runs on.
func (m *Machine) Suspend(ctx context.Context) error {
	if _, ok := m.running(); !ok {
		return nil
	}
	unlock, err := flock.Lock(m.path("lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return m.suspend(ctx)
}

func (m *Machine) suspend(ctx context.Context) error {
	q, err := dialQMP(ctx, m.path("qmp.sock"))
	if err != nil {
		return fmt.Errorf("suspend the VM in %s: %w", m.c.Dir, err)
	}
	defer q.close()
	tmp := m.path("state.tmp")
	if _, err := q.do("stop", nil); err != nil {
		return err
	}
	if _, err := q.do("migrate", map[string]any{"uri": "exec:cat > " + shellQuote(tmp)}); err != nil {
		_, _ = q.do("cont", nil)
		return err
	}
	for {
		st, why, err := q.migration()
		if err == nil && st == "completed" {
			break
		}
		if err != nil || st == "failed" || st == "cancelled" {
			_, _ = q.do("cont", nil)
			os.Remove(tmp)
			return fmt.Errorf("suspend the VM in %s: saving its state %s: %s %v", m.c.Dir, st, why, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := os.Rename(tmp, m.path("state")); err != nil {
		_, _ = q.do("cont", nil)
		return err
	}
	_ = os.WriteFile(m.path("stopped"), []byte("suspended by litterbox\n"), 0o600)
	_, _ = q.do("quit", nil)
	for i := 0; i < 100; i++ {
		if _, ok := m.running(); !ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.kill()
	return nil
}

// freePort is a port of the host's loopback that is free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits until the VM's init says its engine answers.
func (m *Machine) waitReady(ctx context.Context, deadline time.Time) error {
	for {
		data, _ := os.ReadFile(m.path("console.log"))
		if bytes.Contains(data, []byte("litterbox-init: ready")) {
			return nil
		}
		if _, ok := m.running(); !ok {
			return m.unreachable("it stopped while booting; the end of its console (%s):\n%s", m.path("console.log"), m.consoleTail(15))
		}
		if time.Now().After(deadline) {
			return m.unreachable("its engine did not come up within %s (accel %s); the end of its console (%s):\n%s", m.c.BootTimeout, m.c.Accel.Name, m.path("console.log"), m.consoleTail(15))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// greetWait bounds the wait for one connection's greeting (waitGreeting).
const greetWait = 30 * time.Second

// waitGreeting waits until the VM's sshd, on the host's port, greets a
// connection (its "SSH-" line). Its first connection after a boot or a
// resume is its slowest (an emulated VM runs sshd's code translated
// afresh): on a loaded host ssh gave up on the greeting after its own
// 45 s in CI ("Connection timed out during banner exchange"), the VM's
// init having said it was ready. Waited for here, within the boot's
// bound, it leaves the connection ssh then makes a warm sshd. A
// connection dropped before the sshd listens (qemu accepts it on the host
// first) is made again; a VM that stopped meanwhile is said at once, and an
// interrupt (ctx) ends the wait.
func (m *Machine) waitGreeting(ctx context.Context, port int, deadline time.Time) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	greets := func() bool {
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		defer context.AfterFunc(ctx, func() { c.Close() })() // an interrupt ends the read
		_ = c.SetReadDeadline(time.Now().Add(min(time.Until(deadline), greetWait)))
		line, err := bufio.NewReader(c).ReadString('\n')
		return err == nil && strings.HasPrefix(line, "SSH-")
	}
	for !greets() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, ok := m.running(); !ok {
			return m.unreachable("it stopped before its sshd greeted a connection; the end of its console (%s):\n%s", m.path("console.log"), m.consoleTail(15))
		}
		if time.Now().After(deadline) {
			return m.unreachable("its sshd (port %d on this machine) did not greet a connection within %s (accel %s), and it was stopped: a busy machine can be this slow, so try again (the next use boots it afresh); the end of its console (%s):\n%s", port, m.c.BootTimeout, m.c.Accel.Name, m.path("console.log"), m.consoleTail(15))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// consoleTail is the last n lines of the VM's console.
func (m *Machine) consoleTail(n int) string {
	f, err := os.Open(m.path("console.log"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// qemuArgs is the VM's qemu command line, with its ssh on the host's port;
// resume loads the VM's saved state (Suspend) instead of booting.
func (m *Machine) qemuArgs(port int, resume bool) []string {
	img := m.c.Image
	args := []string{"-name", m.alias}
	if m.c.Accel.Name == "kvm" {
		args = append(args, "-accel", "kvm", "-cpu", "host")
	} else {
		// Emulated: qemu's translation cache defaults to 1 GiB, most of
		// the VM's resident memory; 256 MiB is plenty for a kernel and
		// dockerd.
		args = append(args, "-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max")
	}
	args = append(args,
		"-m", strconv.Itoa(m.c.MemoryMiB), "-smp", strconv.Itoa(m.c.CPUs),
		"-nodefaults", "-display", "none", "-no-reboot",
		"-kernel", img.Kernel, "-initrd", img.Initrd, "-append", img.Cmdline,
		"-drive", "file="+m.path("disk.qcow2")+",if=virtio,format=qcow2",
		// The host reaches the VM's sshd on its loopback only; the VM
		// reaches out through qemu (its sandboxes never the host's own
		// loopback: the image's firewall drops 10.0.2.2).
		"-netdev", fmt.Sprintf("user,id=net0,hostfwd=tcp:127.0.0.1:%d-:22", port),
		"-device", "virtio-net-pci,netdev=net0",
		"-device", "virtio-rng-pci",
		// The keys, where only the VM's root reads them (Docker masks
		// /sys/firmware in containers).
		"-fw_cfg", "name=opt/dev.litterbox/authorized_keys,file="+m.path("id_ed25519.pub"),
		"-fw_cfg", "name=opt/dev.litterbox/host_key,file="+m.path("host_key"),
		// Appended to: a resumed VM's console goes on after its boot's.
		"-chardev", "file,id=console,path="+m.path("console.log")+",append=on", "-serial", "chardev:console",
		"-qmp", "unix:"+m.path("qmp.sock")+",server=on,wait=off",
		"-daemonize", "-pidfile", m.path("qemu.pid"),
	)
	if resume {
		// The feed (qemu runs it with sh -c) reads the state on after
		// qemu has daemonized: its stderr, qemu's first one, would be the
		// runner's, which then waits for it (and fails) however long the
		// state takes. exec: a shell that forked cat would keep that
		// stderr aside for itself.
		args = append(args, "-incoming", "exec:exec cat "+shellQuote(m.path("state"))+" 2>/dev/null")
	}
	return args
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sshConfig is the ssh configuration that reaches the VM.
func (m *Machine) sshConfig(port int) string {
	return fmt.Sprintf(`# Written by litterbox for the VM in %[1]s.
Host %[2]s
  HostName 127.0.0.1
  Port %[3]d
  User root
  IdentityFile %[1]s/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile %[1]s/known_hosts
  HostKeyAlias %[2]s
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
`, m.c.Dir, m.alias, port)
}

// watchScript stops the VM once it was not used for idle seconds: it
// checks every few seconds, and leaves when qemu is gone.
const watchScript = `#!/bin/sh
# litterbox's idle watcher of the VM in this directory: it stops the VM
# once "used" is older than the seconds in "idle", and leaves when the VM is
# gone.
dir=$1 pid=$2
# qmp sends QMP commands to qemu, one a line, and prints the answers.
qmp() {
  { echo '{"execute":"qmp_capabilities"}'; for c in "$@"; do echo "$c"; sleep 0.2; done; sleep 0.3; } |
    socat -t 5 - "UNIX-CONNECT:$dir/qmp.sock" 2>/dev/null
}
# suspend saves the VM's memory to "state" (as Machine.Suspend does) and
# ends qemu; without socat, or when the save fails, it fails and the VM
# runs on.
suspend() {
  command -v socat >/dev/null 2>&1 || return 1
  qmp '{"execute":"stop"}' "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"exec:cat > '$dir/state.tmp'\"}}" >/dev/null
  n=0
  while [ $n -lt 3000 ]; do
    out=$(qmp '{"execute":"query-migrate"}')
    case $out in
    *'"completed"'*) break ;;
    *'"failed"'* | *'"cancelled"'*) rm -f "$dir/state.tmp"; qmp '{"execute":"cont"}' >/dev/null; return 1 ;;
    esac
    sleep 0.2
    n=$((n + 1))
  done
  [ -s "$dir/state.tmp" ] && mv "$dir/state.tmp" "$dir/state" || { qmp '{"execute":"cont"}' >/dev/null; return 1; }
  echo "suspended when idle" >"$dir/stopped"
  qmp '{"execute":"quit"}' >/dev/null
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$pid" 2>/dev/null
  return 0
}
while kill -0 "$pid" 2>/dev/null; do
  idle=$(cat "$dir/idle" 2>/dev/null || echo 1800)
  every=$((idle / 10))
  [ "$every" -ge 1 ] || every=1
  [ "$every" -le 30 ] || every=30
  sleep "$every"
  used=$(stat -c %Y "$dir/used" 2>/dev/null || echo 0)
  [ $(($(date +%s) - used)) -ge "$idle" ] || continue
  exec 9>>"$dir/lock"
  flock 9
  used=$(stat -c %Y "$dir/used" 2>/dev/null || echo 0)
  if [ $(($(date +%s) - used)) -ge "$idle" ]; then
    echo "idle for ${idle}s since $(date -d "@$used" 2>/dev/null || echo "$used")" >"$dir/stopped"
    if suspend; then exit 0; fi
    ssh -F "$dir/ssh_config" -o ConnectTimeout=10 "$(sed -n 's/^Host //p' "$dir/ssh_config")" litterbox-poweroff >/dev/null 2>&1
    i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$pid" 2>/dev/null
    exit 0
  fi
  flock -u 9
  exec 9>&-
done
`

// watch starts the VM's idle watcher, a shell script in a session of its
// own, which outlives this process.
func (m *Machine) watch() error {
	pid, ok := m.running()
	if !ok {
		return m.unreachable("it stopped right after booting")
	}
	if err := os.WriteFile(m.path("watch.sh"), []byte(watchScript), 0o700); err != nil {
		return err
	}
	if err := m.SetIdle(m.c.Idle); err != nil {
		return err
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer null.Close()
	p, err := os.StartProcess("/bin/sh", []string{"sh", m.path("watch.sh"), m.c.Dir, strconv.Itoa(pid)},
		&os.ProcAttr{Dir: "/", Files: []*os.File{null, null, null}, Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		return fmt.Errorf("start the VM's idle watcher: %w", err)
	}
	return p.Release()
}

// Stop stops the VM cleanly (its engine stops its containers, its disk is
// written and unmounted), or kills it after a minute. A stopped VM is left
// alone.
func (m *Machine) Stop(ctx context.Context) error {
	if _, ok := m.running(); !ok {
		return nil
	}
	unlock, err := flock.Lock(m.path("lock"))
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.WriteFile(m.path("stopped"), []byte("stopped by litterbox\n"), 0o600); err != nil {
		return err
	}
	_, _ = m.c.Runner.Run(ctx, runner.New("ssh", "-F", m.SSHConfig(), "-o", "ConnectTimeout=10", m.alias, "litterbox-poweroff"))
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, ok := m.running(); !ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.kill()
	return nil
}

// kill ends qemu at once.
func (m *Machine) kill() {
	if pid, ok := m.running(); ok {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for i := 0; i < 50; i++ {
			if _, ok := m.running(); !ok {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
