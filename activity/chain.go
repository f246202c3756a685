package activity

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/internal/flock"
)

// The chains: what makes a change to a record show.
//
// Each line a record holds carries in Prev the hash (SHA-256, hex) of the
// line before it in its file, or in the file it rotated from: one chain
// per record, kept across rotation. Each store of kept events is a chain of
// its own, and so is the pair of files of its newest events. A chain's
// head, kept in the record's lock file, says the number, hash and file
// size of its last line, so a cut at its end shows too; the next line
// follows what the head says, not the file, so a change to the last line
// shows once a line follows it. Tidy writes in <slug>.pruned the last line
// of each file of a record it removes, so a file it removed is told from a
// file gone missing.
//
// This shows a change made by anything that does not rewrite the chain
// from the change on (an edit, a line taken out, a cut, a file removed),
// not one made by someone who rewrites it: every hash is computed from the
// lines alone, and anything with the user's rights can compute them again
// (docs/security.md).

// KindBroken is never written: a reader's note that the line of Seq does
// not follow the line before it (Message says how), found by a Follower or
// by Verify.
const KindBroken Kind = "broken"

// lineHash is the hash a line's successor carries: of its bytes, without
// the newline.
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// linePrev reads the hash a line carries without decoding the rest: Append
// writes it third, after the time and the number. "" when it has none.
func linePrev(line []byte) string {
	const key = `,"prev":"`
	i := bytes.Index(line, []byte(key))
	// within the first fields: a "prev" in agent text comes later, escaped
	if i < 0 || i > 80 {
		return ""
	}
	rest := line[i+len(key):]
	end := bytes.IndexByte(rest, '"')
	if end != sha256.Size*2 {
		return ""
	}
	return string(rest[:end])
}

// chain is a run of files whose lines each follow the one before.
type chain struct {
	name  string   // what verify calls it
	files []string // oldest first
	slot  int      // of its head in the lock file
	// numbered: each line is one past the line before (a record); a store
	// keeps some of its record's numbers, in order.
	numbered bool
	// whole: its first file holds the chain from its first line (a store
	// of kept events never rotates), so that line follows nothing.
	whole bool
}

func (c chain) newest() string { return c.files[len(c.files)-1] }

// chains are r's chains: the record, then each store of kept events and
// the pair of files of its newest.
func (r Record) chains() []chain {
	out := []chain{{name: "record", files: []string{r.OldPath(), r.Path()}, numbered: true}}
	for _, class := range []string{ClassEgress, ClassFailed} {
		last := r.lastPaths(class)
		out = append(out,
			chain{name: class + " store", files: []string{r.keptPath(class)}, whole: true},
			chain{name: "newest " + class + " store", files: last[:]})
	}
	for i := range out {
		out[i].slot = i
	}
	return out
}

// head is what a chain's head says of its last line. The heads of a
// record's chains are kept in its lock file, a slot of headSize bytes each
// (chain.slot), which every writer opens anyway: reading and writing them
// costs two system calls an append, not two opens of files of their own.
type head struct {
	seq  int64  // its number
	size int64  // the size of the file that ends with it
	hash string // lineHash of it
	ok   bool   // false for a chain that has no head
}

// headSize is the size of a head's slot: "%020d %020d %064s\n".
const headSize = 20 + 1 + 20 + 1 + 64 + 1

// readHeads reads the heads of a record's chains from its lock file, by
// slot.
func readHeads(f *os.File, n int) []head {
	buf := make([]byte, n*headSize)
	got, _ := f.ReadAt(buf, 0)
	out := make([]head, n)
	for i := range out {
		if got < (i+1)*headSize {
			break
		}
		fields := strings.Fields(string(buf[i*headSize : (i+1)*headSize]))
		if len(fields) != 3 {
			continue // a slot never written: zeros
		}
		seq, err1 := strconv.ParseInt(fields[0], 10, 64)
		size, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 == nil && err2 == nil {
			out[i] = head{seq: seq, size: size, hash: fields[2], ok: true}
		}
	}
	return out
}

// writeHead writes h in its slot of the lock file f, in place: a slot is
// always as long, so no reader under the lock sees part of one.
func writeHead(f *os.File, slot int, h head) error {
	_, err := f.WriteAt(fmt.Appendf(nil, "%020d %020d %064s\n", h.seq, h.size, h.hash), int64(slot*headSize))
	return err
}

// end is the number and hash of c's last line, which the next line follows,
// given h, its head, and size, that of its newest file now. The caller
// holds the lock.
//
// It is the head's when the newest file is the size the head says (so a
// change to the last line shows once a line follows it), and when the
// file's last line is not past the head (a cut or a change at the end:
// the next line follows what was written, so the cut shows). Otherwise the
// file's last line: a record written before the chains, or a line whose
// writer stopped before it wrote the head.
func (c chain) end(size int64, h head) (seq int64, hash string) {
	if h.ok && h.size == size {
		return h.seq, h.hash
	}
	var last []byte
	for i := len(c.files) - 1; i >= 0 && last == nil; i-- {
		last = lastLine(c.files[i])
	}
	switch {
	case last == nil && h.ok:
		return h.seq, h.hash
	case last == nil:
		return 0, ""
	case h.ok && lineSeq(last) <= h.seq:
		return h.seq, h.hash
	}
	return lineSeq(last), lineHash(last)
}

// forget clears the heads of a record whose files are all gone, so a
// sandbox made again under its name starts a chain anew. It gives up when
// another process holds the lock.
func (r Record) forget() {
	unlock, ok, err := flock.TryLock(r.lockPath())
	if err != nil || !ok {
		return
	}
	defer unlock()
	_ = os.Truncate(r.lockPath(), 0)
}

// prunedPath is where Tidy notes the files of a record it removed.
func (r Record) prunedPath() string { return filepath.Join(r.Dir, r.Sandbox+".pruned") }

// notePruned notes in the record's .pruned that Tidy removes path, with
// its last line, before it does. The caller holds the lock.
func (r Record) notePruned(path string, now time.Time) error {
	last := lastLine(path)
	if last == nil {
		return nil
	}
	return appendLine(r.prunedPath(), fmt.Appendf(nil, "%s %d %s %s\n",
		filepath.Base(path), lineSeq(last), lineHash(last), now.UTC().Format(time.RFC3339)))
}

// pruned reports whether Tidy noted removing the file name whose last line
// hashed to hash, and when.
func pruned(notes []byte, name, hash string) (string, bool) {
	for _, l := range strings.Split(string(notes), "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == name && f[2] == hash {
			return f[3], true
		}
	}
	return "", false
}

// linker follows a chain line by line, as a reader reads it.
type linker struct {
	slug    string // the record's, for the notes
	seq     int64  // the number of the last line, 0 before one
	hash    string // its hash, "" before one
	chained bool   // a line so far carried a link
}

// next takes the next whole line; broken says why it does not follow the
// one before, "" when it does or cannot be told (the first line read, one
// after numbers that skip: a Follower says what it missed).
func (l *linker) next(line []byte) (broken string) {
	seq, prev := lineSeq(line), linePrev(line)
	switch {
	case l.hash == "" || (seq > 0 && l.seq > 0 && seq != l.seq+1):
	case prev == "" && l.chained && seq != 1:
		broken = "it carries no link to the line before, as every line after the first that did must"
	case prev != "" && prev != l.hash:
		broken = "it does not follow the line before it, which was changed or taken out"
	}
	l.seq, l.hash = seq, lineHash(line)
	l.chained = l.chained || prev != ""
	return broken
}
