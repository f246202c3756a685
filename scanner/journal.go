package scanner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// The change journal. A watcher (watch_linux.go) runs in the sandbox beside
// the agent, as a user of its own, and keeps, through inotify, the
// directories of /src in which anything happened. A scan asks it which ones
// changed since the token of the last snapshot and walks only those, so a
// snapshot costs what changed, not what is there. Any doubt means the full
// walk: no watcher (not started yet, killed, a container restarted), a
// token of another watcher, an overflowed event queue, a directory it could
// not watch, more changes than a walk would cost. A journal can only make a
// scan walk less, never report less: every directory it names is walked
// exactly as the full walk walks it, times checked against the same stamp.

// JournalDir holds the watcher's socket. The watcher makes it, so it is its
// own: a scan talks to the socket only when the directory and the socket
// belong to WatchUID, and anything else there is not a journal.
var JournalDir = "/tmp/.litterbox-journal"

func journalSock() string { return filepath.Join(JournalDir, "sock") }

// journalReply is what the watcher said: its token now, and either the
// directories changed since the token asked about, or that it cannot say
// (full).
type journalReply struct {
	token string
	full  bool
	dirs  []string
}

// sinceRequest asks a watcher that finds hard links for what changed. A
// watcher of an earlier litterbox (one that does not, still running in a
// sandbox made before an upgrade) does not answer it: the scan then walks
// the whole tree, and the host starts a watcher of this scanner, which
// stops the old one (watchServe).
const sinceRequest = "since2"

// journalWait bounds a scan's wait for the watcher: a watcher that has just
// started answers once it watches the whole tree.
const journalWait = 10 * time.Second

// askJournal asks the watcher for the directories changed since token.
func askJournal(token string) (journalReply, error) {
	if err := ownedByWatcher(JournalDir, true); err != nil {
		return journalReply{}, err
	}
	if err := ownedByWatcher(journalSock(), false); err != nil {
		return journalReply{}, err
	}
	c, err := net.DialTimeout("unix", journalSock(), time.Second)
	if err != nil {
		return journalReply{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(journalWait))
	if token == "" {
		token = "-"
	}
	if _, err := fmt.Fprintf(c, "%s %s\n", sinceRequest, token); err != nil {
		return journalReply{}, err
	}
	return readJournalReply(bufio.NewReader(c))
}

// ownedByWatcher checks that p is a directory (or a socket) of WatchUID,
// not a link.
func ownedByWatcher(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok || int(st.Uid) != wire.WatchUID:
		return fmt.Errorf("%s does not belong to the watcher", p)
	case dir && !fi.IsDir(), !dir && fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is not the watcher's", p)
	}
	return nil
}

// maxJournalDirs bounds a reply the scanner reads.
const maxJournalDirs = 1 << 20

// readJournalReply reads "full TOKEN\n" or "dirs TOKEN\n" and the
// directories, each ended by NUL.
func readJournalReply(r *bufio.Reader) (journalReply, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return journalReply{}, fmt.Errorf("journal: %w", err)
	}
	kind, token, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
	rep := journalReply{token: token, full: kind == "full"}
	if (kind != "full" && kind != "dirs") || !wire.ValidToken(token) {
		return journalReply{}, fmt.Errorf("journal: bad reply %q", line)
	}
	for {
		d, err := r.ReadString(0)
		if errors.Is(err, io.EOF) && d == "" {
			return rep, nil
		}
		if err != nil {
			return journalReply{}, fmt.Errorf("journal: %w", err)
		}
		d = d[:len(d)-1]
		if d != "" && (path.IsAbs(d) || path.Clean(d) != d || d == ".." || strings.HasPrefix(d, "../")) {
			return journalReply{}, fmt.Errorf("journal: bad directory %q", d)
		}
		if len(rep.dirs) == maxJournalDirs {
			return journalReply{}, errors.New("journal: too many directories")
		}
		rep.dirs = append(rep.dirs, d)
	}
}
