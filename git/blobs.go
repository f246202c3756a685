package git

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BlobWriter streams file contents into the repository as blobs, through
// one `git fast-import` started at the first blob, and returns their ids,
// computed as the bytes go by: no big file is ever held in memory, on
// either side (fast-import itself streams blobs over its
// --big-file-threshold, set low here, instead of reading them whole), and
// small ones only when told to Hold (up to holdBytes). Commit then refers
// to the blobs by id, or carries a held one inline.
//
// Where the objects land: fast-import explodes an import of fewer than
// fastimport.unpackLimit (100) objects into loose objects, one zlib file
// each. That suits a few small files, as `git add` would write them, but a
// few big files became hundreds of megabytes of loose objects that git had
// to pack again later. KeepPack, called before the first blob when the
// caller knows the import is big, keeps fast-import's pack as it is.
//
// Nothing reaches the repository before Close: fast-import writes into a
// quarantine directory of its own (objects/tmp_objdir-litterbox-*, reading
// the repository's objects as an alternate, as git's receive-pack does),
// and Close moves what it wrote into the repository. Discard removes it: a
// scan that fails (an agent can kill its scanner mid-stream at will) leaves
// no pack behind, where each one used to stay until git gc, charged to no
// record limit. git gc removes a quarantine a killed process left.
type BlobWriter struct {
	g        *Repo
	ctx      context.Context
	keepPack bool
	pipe     *io.PipeWriter
	in       *bufio.Writer
	done     chan error
	err      error // the first error; later writes fail with it
	closed   bool
	tmp      string // the quarantine, once started
	// held are the blobs kept in memory by id, not stored (see Hold).
	hold      bool
	held      map[string][]byte
	heldBytes int64
}

// What a writer told to Hold keeps in memory: blobs of up to holdBlob
// bytes, holdBytes in all. A snapshot's usual change (a few source files)
// fits; past it, the import starts and takes the held blobs first.
const (
	holdBlob  = 128 << 10
	holdBytes = 512 << 10
)

// Hold makes the writer keep small blobs in memory, their ids computed,
// instead of starting fast-import for them: a snapshot that finds files
// touched but not changed (a new time, the content the branch has) then
// starts no git process to store what the repository already holds. Held
// gives a held blob's content (for a commit to carry inline), Store writes
// held blobs into the repository. Call it before the first Write.
func (w *BlobWriter) Hold() { w.hold = true }

// Held is the content of blob id when the writer holds it: Close did not
// store it.
func (w *BlobWriter) Held(id string) ([]byte, bool) {
	data, ok := w.held[id]
	return data, ok
}

// Store writes the held blobs among ids into the repository (one
// fast-import), after Close. Their ids are valid there once it returned
// nil.
func (w *BlobWriter) Store(ids ...string) error {
	var todo []string
	for _, id := range ids {
		if _, ok := w.held[id]; ok && !slices.Contains(todo, id) {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	s := w.g.NewBlobWriter(w.ctx)
	for _, id := range todo {
		data := w.held[id]
		if _, err := s.Write(int64(len(data)), bytes.NewReader(data)); err != nil {
			s.Discard()
			return err
		}
	}
	if err := s.Close(); err != nil {
		return err
	}
	for _, id := range todo {
		w.heldBytes -= int64(len(w.held[id]))
		delete(w.held, id)
	}
	return nil
}

// NewBlobWriter returns a writer that starts fast-import on its first blob.
func (g *Repo) NewBlobWriter(ctx context.Context) *BlobWriter {
	return &BlobWriter{g: g, ctx: ctx}
}

// KeepPack makes the import, if it has not started yet, keep its pack
// whatever the number of objects.
func (w *BlobWriter) KeepPack() {
	if w.pipe == nil {
		w.keepPack = true
	}
}

// bigFileThreshold is fast-import's --big-file-threshold: larger blobs are
// streamed into the pack instead of being read whole to look for a delta.
const bigFileThreshold = "1m"

func (w *BlobWriter) start() error {
	objects := filepath.Join(w.g.CommonDir, "objects")
	tmp, err := os.MkdirTemp(objects, "tmp_objdir-litterbox-")
	if err == nil {
		err = os.Mkdir(filepath.Join(tmp, "pack"), 0o755)
	}
	if err != nil {
		return fmt.Errorf("store blobs: %w", err)
	}
	w.tmp = tmp
	args := []string{}
	if w.keepPack {
		args = append(args, "-c", "fastimport.unpackLimit=0")
	}
	args = append(args, "fast-import", "--done", "--quiet", "--big-file-threshold="+bigFileThreshold)
	pr, pw := io.Pipe()
	w.pipe, w.in, w.done = pw, bufio.NewWriterSize(pw, 1<<16), make(chan error, 1)
	go func() {
		_, err := w.g.R.Run(w.ctx, w.g.Cmd(args...).WithStdin(pr).
			WithEnv("GIT_OBJECT_DIRECTORY="+tmp, "GIT_ALTERNATE_OBJECT_DIRECTORIES="+objects))
		if err == nil {
			err = io.ErrClosedPipe // it ended before we closed its input
		}
		pr.CloseWithError(err)
		if err == io.ErrClosedPipe {
			err = nil
		}
		w.done <- err
	}()
	return nil
}

// Write stores size bytes read from r as a blob and returns its id. When r
// ends early or fails, the blob is completed with zeros (fast-import is never
// left inside a data block, which would make it die and leave a crash report
// in the repository), and r's error is returned: the blob is then garbage,
// unreachable, and git gc removes it in time.
func (w *BlobWriter) Write(size int64, r io.Reader) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	if w.closed {
		return "", fmt.Errorf("blob writer closed")
	}
	if w.pipe == nil && w.hold && !w.keepPack && size <= holdBlob && w.heldBytes+size <= holdBytes {
		return w.keep(size, r)
	}
	if w.pipe == nil {
		if err := w.start(); err != nil {
			w.err = err
			return "", err
		}
		// The held blobs go in first: they are stored after all.
		for id, data := range w.held {
			if _, err := w.write(int64(len(data)), bytes.NewReader(data)); err != nil {
				return "", err
			}
			delete(w.held, id)
		}
		w.heldBytes = 0
	}
	return w.write(size, r)
}

// keep holds a blob in memory instead of storing it (Hold). A short r
// holds nothing and returns r's error, as Write does.
func (w *BlobWriter) keep(size int64, r io.Reader) (string, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	h := NewBlobHash(size)
	h.Write(data)
	id := hex.EncodeToString(h.Sum(nil))
	if w.held == nil {
		w.held = map[string][]byte{}
	}
	if _, ok := w.held[id]; !ok {
		w.held[id] = data
		w.heldBytes += size
	}
	return id, nil
}

// write streams one blob into the started import.
func (w *BlobWriter) write(size int64, r io.Reader) (string, error) {
	if _, err := fmt.Fprintf(w.in, "blob\ndata %d\n", size); err != nil {
		return "", w.fail(err)
	}
	h := NewBlobHash(size)
	n, rerr, werr := copyN(w.in, h, r, size)
	if werr == nil && n < size {
		_, _, werr = copyN(w.in, h, zeros{}, size-n)
	}
	if werr == nil {
		werr = w.in.WriteByte('\n')
	}
	if werr != nil {
		return "", w.fail(werr)
	}
	if rerr != nil {
		return "", rerr
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyN copies n bytes from r to both w and h, and says how many it copied
// and which side failed.
func copyN(w *bufio.Writer, h io.Writer, r io.Reader, n int64) (done int64, rerr, werr error) {
	buf := make([]byte, 32<<10)
	for done < n {
		m, err := r.Read(buf[:min(int64(len(buf)), n-done)])
		if m > 0 {
			h.Write(buf[:m])
			if _, werr := w.Write(buf[:m]); werr != nil {
				return done, nil, werr
			}
			done += int64(m)
		}
		if err != nil && done < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err, nil
		}
	}
	return done, nil, nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func (w *BlobWriter) fail(err error) error {
	if w.err == nil {
		w.err = fmt.Errorf("store blobs: %w", err)
		// The process's own error says more than a broken pipe.
		if w.pipe != nil {
			w.pipe.CloseWithError(err)
			if perr := <-w.done; perr != nil {
				w.err = fmt.Errorf("store blobs: %w", perr)
			}
			w.done = nil
		}
	}
	return w.err
}

// Close ends the import, waits for git to write the objects and moves them
// into the repository. Their ids are valid there only once Close returned
// nil, but for the blobs it holds (Held); after a failure nothing of the
// import is kept.
func (w *BlobWriter) Close() error {
	err := w.end()
	if w.tmp == "" {
		return err
	}
	if err == nil {
		err = migrate(w.tmp, filepath.Join(w.g.CommonDir, "objects"))
		if err != nil {
			w.err = fmt.Errorf("store blobs: %w", err)
			err = w.err
		}
	}
	os.RemoveAll(w.tmp)
	w.tmp = ""
	return err
}

// Discard ends the import and keeps nothing of it.
func (w *BlobWriter) Discard() {
	w.held, w.heldBytes = nil, 0
	w.end()
	if w.err == nil {
		w.err = errors.New("store blobs: discarded")
	}
	if w.tmp != "" {
		os.RemoveAll(w.tmp)
		w.tmp = ""
	}
}

// end ends the import and waits for git.
func (w *BlobWriter) end() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.pipe == nil || w.done == nil {
		return w.err
	}
	if w.err == nil {
		if _, err := w.in.WriteString("done\n"); err == nil {
			err = w.in.Flush()
			if err != nil {
				w.err = fmt.Errorf("store blobs: %w", err)
			}
		}
	}
	w.pipe.Close()
	if err := <-w.done; err != nil && w.err == nil {
		w.err = fmt.Errorf("store blobs: %w", err)
	}
	return w.err
}

// migrate moves the objects of the quarantine tmp into objects: loose
// objects, then packs, each pack's index last (git finds a pack by its
// index), as git's tmp_objdir_migrate does. An object already there is
// the same object.
func migrate(tmp, objects string) error {
	dirs, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(tmp, d.Name()))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(objects, d.Name()), 0o755); err != nil {
			return err
		}
		for _, f := range files {
			if err := moveObject(filepath.Join(tmp, d.Name(), f.Name()), filepath.Join(objects, d.Name(), f.Name())); err != nil {
				return err
			}
		}
	}
	packs, err := os.ReadDir(filepath.Join(tmp, "pack"))
	if err != nil {
		return err
	}
	names := make([]string, 0, len(packs))
	for _, p := range packs {
		names = append(names, p.Name())
	}
	slices.SortFunc(names, func(a, b string) int {
		return compareBool(strings.HasSuffix(a, ".idx"), strings.HasSuffix(b, ".idx"))
	})
	for _, n := range names {
		if err := moveObject(filepath.Join(tmp, "pack", n), filepath.Join(objects, "pack", n)); err != nil {
			return err
		}
	}
	return nil
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// moveObject moves one object file, leaving one that is there already (an
// object's name is its content).
func moveObject(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return nil
	}
	return os.Rename(from, to)
}
