//go:build linux

package scanner

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The watcher: one inotify instance watching every directory of /src (its
// own watch on each, added as directories appear), and a socket on which a
// scan asks what changed. See journal.go.

// watchMask is every event that can change what a scan of the directory
// reports: entries made, removed, renamed, written or changed in mode.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// Bounds of one watcher. Past maxWatches directories it gives up for good
// (every scan walks the tree): each watch pins an inode in the kernel, and
// the watches of all sandboxes share one per-user limit. A reply naming
// more than maxReply directories is a full walk instead.
var (
	maxWatches = 65536
	maxReply   = 20000
	maxDirty   = 100000 // remembered changed directories before the oldest are forgotten
)

// watcher is the journal's state. Every field is guarded by mu; events are
// read from the inotify descriptor only under mu and handled in the same
// hold, so a request that drains the descriptor sees every change finished
// before it: inotify queues an event inside the system call that makes the
// change.
type watcher struct {
	root string
	dev  uint64 // the device of root
	fd   int

	mu        sync.Mutex
	gen       string
	now       uint64            // the sequence number of events being handled
	paths     map[int32]string  // watch descriptor -> directory (relative)
	inos      map[int32]uint64  // watch descriptor -> the directory's inode
	dirty     map[string]uint64 // directory -> sequence of its last event
	unwatched map[string]bool   // directories a watch could not be put on
	lostAt    uint64            // events of sequences before this are lost (overflow)
	forgotAt  uint64            // dirty entries before this are forgotten
	broken    string            // why the journal is off for good, if it is
	buf       []byte

	// Hard links (see settle): a file with two names is written through
	// one, and inotify names only that one's directory. A scan stats the
	// names it knows to have others (Options.Linked) wherever they are;
	// the watcher finds new links, and then says "full", so that a full
	// walk finds the other names.
	linkedAt uint64           // answers to tokens before this are full: a link was made
	created  map[nameKey]bool // files made since the last read, not stat'ed yet; true once written or chmod'ed
	moved    map[uint32]bool  // created files renamed away (by cookie), their new name not read yet; true once written
	pending  map[nameKey]bool // files stat'ed with one name, until a read shows nothing replaced them since
}

// nameKey is a name in a watched directory, by watch descriptor: it stays
// right while the directory is renamed.
type nameKey struct {
	wd   int32
	name string
}

// watchStart starts the watcher of root unless one answers already, and
// returns once the new one listens (or has given up).
func watchStart(root string) error {
	if _, err := askJournal(""); err == nil {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, "scan-internal", "watch-serve", "--root", root)
	// Its own session, no stdio: the exec that started it ends now, and
	// the watcher outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-exited:
			return fmt.Errorf("the watcher exited: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if ownedByWatcher(journalSock(), false) == nil {
			return nil
		}
	}
	return errors.New("the watcher did not start listening within 3s")
}

// watchServe is the watcher itself: it never returns unless it cannot
// listen. A watcher that cannot watch (no inotify instance left, too many
// directories) still answers, always "full", so scans do not ask for a
// new one at every snapshot.
func watchServe(root string) error {
	debug.SetGCPercent(50)
	if err := os.Mkdir(JournalDir, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	if err := ownedByWatcher(JournalDir, true); err != nil {
		return err // someone else's: no journal, scans walk
	}
	stopOtherWatchers()
	_ = os.Remove(journalSock())
	l, err := net.Listen("unix", journalSock())
	if err != nil {
		return err
	}
	defer l.Close()
	if err := os.Chmod(journalSock(), 0o777); err != nil {
		return err
	}
	w := newWatcher(root)
	w.mu.Lock()
	if w.broken == "" {
		// The first answer is "full" whatever this finds: the files already
		// here are not stat'ed for links.
		w.addTree("", false)
		w.now++
	}
	w.mu.Unlock()
	if w.fd >= 0 {
		go w.readLoop()
	}
	for {
		c, err := l.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return err
		}
		go w.serve(c)
	}
}

// stopOtherWatchers kills the watchers of this user but this one: one of
// an earlier litterbox, which does not answer this scanner, would go on
// holding its inotify watches (counted against this user, across the
// host). Only the watcher runs as its user.
func stopOtherWatchers() {
	if os.Getuid() == 0 {
		return // never as root (a test's watcher, in its own process)
	}
	self := os.Getpid()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		var st unix.Stat_t
		if err != nil || pid == self || unix.Stat(p, &st) != nil || int(st.Uid) != os.Getuid() {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join(p, "cmdline")); err == nil && strings.Contains(string(cmd), "\x00watch-serve\x00") {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

func newWatcher(root string) *watcher {
	w := &watcher{root: root, fd: -1, paths: map[int32]string{}, inos: map[int32]uint64{}, dirty: map[string]uint64{}, unwatched: map[string]bool{},
		created: map[nameKey]bool{}, moved: map[uint32]bool{}, pending: map[nameKey]bool{}, buf: make([]byte, 64<<10)}
	var g [8]byte
	_, _ = rand.Read(g[:])
	w.gen = hex.EncodeToString(g[:])
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		w.broken = err.Error()
		return w
	}
	w.dev = st.Dev
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		w.broken = "inotify: " + err.Error()
		return w
	}
	w.fd = fd
	return w
}

// readLoop handles events as they come, so the kernel's queue (16384
// events by default) does not overflow between snapshots.
func (w *watcher) readLoop() {
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			w.mu.Lock()
			w.broken = "poll: " + err.Error()
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		w.drain()
		w.mu.Unlock()
		// Events are taken in batches: a file written line by line
		// would otherwise wake the watcher at every write. A request
		// drains the queue itself, so this delays no answer.
		time.Sleep(readBatch)
	}
}

// readBatch is how long the watcher lets events gather between reads: the
// kernel queues 16384 by default, so it overflows only past 1.6 million a
// second.
const readBatch = 10 * time.Millisecond

// serve answers one request: "since2 TOKEN" (or "since TOKEN", from a
// scanner of an earlier litterbox).
func (w *watcher) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	_, token, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	if !ok || !strings.HasPrefix(line, "since ") && !strings.HasPrefix(line, sinceRequest+" ") {
		return
	}
	bw := bufio.NewWriter(c)
	w.answer(bw, token)
	_ = bw.Flush()
}

// answer writes the reply to a request for the changes since token.
func (w *watcher) answer(bw *bufio.Writer, token string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drain()
	if w.broken == "" && len(w.unwatched) > 0 {
		w.retryUnwatched()
		w.drain()
	}
	if len(w.created) > 0 || len(w.moved) > 0 || len(w.pending) > 0 {
		// Files made in a storm of events that drain gave up settling:
		// any could be a link.
		w.markLinked()
	}
	seq, known := w.parseToken(token)
	var dirs []string
	full := w.broken != "" || !known || seq < w.lostAt || seq < w.forgotAt || seq < w.linkedAt || len(w.unwatched) > 0
	if !full {
		for d, s := range w.dirty {
			if s > seq {
				dirs = append(dirs, d)
			}
		}
		full = len(dirs) > maxReply
	}
	if known && !full && len(w.dirty) > maxDirty {
		// Forget what this token's holder has seen: a later request with
		// an older token gets "full".
		for d, s := range w.dirty {
			if s <= seq {
				delete(w.dirty, d)
			}
		}
		w.forgotAt = seq
	}
	now := fmt.Sprintf("%s:%x", w.gen, w.now)
	w.now++
	if full {
		fmt.Fprintf(bw, "full %s\n", now)
		return
	}
	fmt.Fprintf(bw, "dirs %s\n", now)
	slices.Sort(dirs)
	for _, d := range dirs {
		bw.WriteString(d)
		bw.WriteByte(0)
	}
}

// parseToken is the sequence of a token of this watcher.
func (w *watcher) parseToken(t string) (uint64, bool) {
	gen, seq, ok := strings.Cut(t, ":")
	if !ok || gen != w.gen {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 16, 64)
	return n, err == nil && n < w.now
}

// maxSettle bounds the reads of one drain that bring new files: under a
// storm of events the rest wait for the next drain. maxCreated bounds the
// files made that wait for their stat.
const (
	maxSettle  = 8
	maxCreated = 1 << 16
)

// drain reads and handles every queued event (once the journal is off,
// it only empties the queue), and settles the files made meanwhile: each
// is stat'ed, and one with another name makes the next answer full. A
// file stat'ed with one name could have been replaced between the read
// that named it and the stat (the stat then saw the newcomer); the read
// after the stat would name the newcomer, so the stat is believed once a
// read names none.
func (w *watcher) drain() {
	for round := 0; ; round++ {
		w.readEvents() // a replaced pending file, in this read, makes it full
		clear(w.pending)
		if len(w.created) == 0 && len(w.moved) == 0 || round == maxSettle {
			return
		}
		w.settle()
	}
}

// readEvents reads and handles the events queued now.
func (w *watcher) readEvents() {
	for w.fd >= 0 {
		n, err := unix.Read(w.fd, w.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: the queue is empty
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&w.buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := w.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				name = strings.TrimRight(string(raw), "\x00")
			}
			w.handle(ev.Wd, ev.Mask, ev.Cookie, name)
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// markLinked makes every answer to a token given before now "full": a
// link was made (or may have been), whose other names only a full walk
// finds.
func (w *watcher) markLinked() { w.linkedAt = w.now }

// handle records one event.
func (w *watcher) handle(wd int32, mask uint32, cookie uint32, name string) {
	if w.broken != "" {
		return
	}
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were lost: tokens given before now cannot be answered,
		// and directories made meanwhile may have no watch yet.
		w.lostAt = w.now
		w.addTree("", false)
		return
	}
	dir, ok := w.paths[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 {
		delete(w.paths, wd)
		delete(w.inos, wd)
		return
	}
	w.dirty[dir] = w.now
	if mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || name == "" {
		return
	}
	if mask&unix.IN_ISDIR == 0 {
		w.follow(nameKey{wd, name}, mask, cookie)
		return
	}
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		w.addTree(path.Join(dir, name), true)
	}
}

// follow keeps track of a file made (or renamed in) since the last read
// until settle stats it: link(2) makes a name as creat(2) does, and only
// the file's link count tells them apart. A file made and then removed,
// or replaced, before that stat could have been a link written through:
// the answer is then full, unless nothing wrote it (a link gone unwritten
// changed no content). One renamed is followed to its new name.
func (w *watcher) follow(k nameKey, mask, cookie uint32) {
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && w.pending[k] {
		// Another file came to the name: it may have come before the
		// stat, which then saw it, not the one made.
		w.markLinked()
	}
	if len(w.created) >= maxCreated {
		// More files made than are worth remembering one by one (in the
		// sandbox's memory): the next answer is full, which covers them.
		w.markLinked()
		clear(w.created)
		clear(w.moved)
	}
	written, made := w.created[k]
	switch {
	case mask&unix.IN_CREATE != 0:
		w.created[k] = false
	case mask&(unix.IN_MODIFY|unix.IN_ATTRIB) != 0: // content or mode (a close changes neither)
		if made {
			w.created[k] = true
		}
	case mask&unix.IN_MOVED_FROM != 0:
		if made {
			delete(w.created, k)
			w.moved[cookie] = written
		}
	case mask&unix.IN_MOVED_TO != 0:
		if made && written {
			w.markLinked()
		}
		w.created[k] = w.moved[cookie]
		delete(w.moved, cookie)
	case mask&unix.IN_DELETE != 0:
		if made && written {
			w.markLinked()
		}
		delete(w.created, k)
	}
}

// settle stats the files made since the last read: one with more than one
// name, or one that cannot be stat'ed where it was made, makes the next
// answer full; the others are pending until the next read.
func (w *watcher) settle() {
	if len(w.moved) > 0 {
		w.markLinked() // renamed to a name no read has given yet
		clear(w.moved)
	}
	dirs := map[int32]int{}
	defer func() {
		for _, fd := range dirs {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	for k := range w.created {
		fd, ok := dirs[k.wd]
		if !ok {
			fd = w.openWatched(k.wd)
			dirs[k.wd] = fd
		}
		var st unix.Stat_t
		if fd < 0 || unix.Fstatat(fd, k.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Nlink > 1 {
			w.markLinked()
			continue
		}
		w.pending[k] = true
	}
	clear(w.created)
}

// openWatched opens the directory of watch wd, -1 when it is gone or
// another directory now has its name.
func (w *watcher) openWatched(wd int32) int {
	dir, ok := w.paths[wd]
	if !ok {
		return -1
	}
	fd, err := unix.Open(filepath.Join(w.root, dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != w.dev || st.Ino != w.inos[wd] {
		unix.Close(fd)
		return -1
	}
	return fd
}

// addTree puts a watch on rel and every directory under it, and marks
// them changed: a new directory's entries may have come before its watch.
// A directory already watched (moved within the tree) keeps its watch
// under its new name. With track, the files of a directory not watched
// before are settled as files made now: one may be a link made before
// the watch.
func (w *watcher) addTree(rel string, track bool) {
	stack := []string{rel}
	for len(stack) > 0 && w.broken == "" {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		names, err := w.watchDir(d, track)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				w.unwatched[d] = true
			}
			continue
		}
		delete(w.unwatched, d)
		w.dirty[d] = w.now
		for _, n := range names {
			stack = append(stack, path.Join(d, n))
		}
	}
}

// watchDir opens directory rel (never through a link), puts a watch on it
// and returns the names of its subdirectories, all of them: a folder a
// scan never walks (a name git refuses, .git) can still hold a link to a
// file it records. With track, the files of a directory not watched
// before go to created.
func (w *watcher) watchDir(rel string, track bool) ([]string, error) {
	fd, err := unix.Open(filepath.Join(w.root, rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	// A directory reached through a link swapped in above it is not
	// /src's: it would be walked, and watched, under a name not its own.
	// /src is a file system of its own, so anything elsewhere is on
	// another device.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != w.dev {
		return nil, unix.ENOENT
	}
	// The watch goes on the directory opened, by its descriptor: no name
	// is looked up again, so a link swapped in meanwhile is not followed.
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) {
			w.giveUp("no inotify watch left for this user (fs.inotify.max_user_watches)")
		}
		return nil, err
	}
	_, had := w.paths[int32(wd)]
	w.paths[int32(wd)] = rel
	w.inos[int32(wd)] = st.Ino
	if len(w.paths) > maxWatches {
		w.giveUp(fmt.Sprintf("over %d directories", maxWatches))
		return nil, nil
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		switch {
		case e.IsDir():
			dirs = append(dirs, e.Name())
		case track && !had:
			w.created[nameKey{int32(wd), e.Name()}] = false
		}
	}
	return dirs, nil
}

// retryUnwatched tries again the directories a watch could not be put on
// (a mode that kept the watcher out, since changed). While one is left,
// every scan walks the tree.
func (w *watcher) retryUnwatched() {
	dirs := slices.Collect(maps.Keys(w.unwatched))
	clear(w.unwatched)
	for _, d := range dirs {
		w.addTree(d, true)
	}
}

// giveUp turns the journal off for good: every scan walks the tree. The
// watches are removed, freeing the user's share of them.
func (w *watcher) giveUp(why string) {
	w.broken = why
	for wd := range w.paths {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
	}
	w.paths = map[int32]string{}
	w.inos = map[int32]uint64{}
	w.dirty = map[string]uint64{}
	w.unwatched = map[string]bool{}
	clear(w.created)
	clear(w.moved)
	clear(w.pending)
}
