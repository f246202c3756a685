package git

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
)

// BlobWriter streams file contents into the repository as blobs, through
// one `git fast-import` started at the first blob, and returns their ids,
// computed as the bytes go by: no file is ever held in memory, on either
// side (fast-import itself streams blobs over its --big-file-threshold,
// set low here, instead of reading them whole). Commit then refers to the
// blobs by id.
//
// Where the objects land: fast-import explodes an import of fewer than
// fastimport.unpackLimit (100) objects into loose objects, one zlib file
// each. That suits a few small files, as `git add` would write them, but a
// few big files became hundreds of megabytes of loose objects that git had
// to pack again later. KeepPack, called before the first blob when the
// caller knows the import is big, keeps fast-import's pack as it is.
type BlobWriter struct {
	g        *Repo
	ctx      context.Context
	keepPack bool
	pipe     *io.PipeWriter
	in       *bufio.Writer
	done     chan error
	err      error // the first error; later writes fail with it
	closed   bool
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

func (w *BlobWriter) start() {
	args := []string{}
	if w.keepPack {
		args = append(args, "-c", "fastimport.unpackLimit=0")
	}
	args = append(args, "fast-import", "--done", "--quiet", "--big-file-threshold="+bigFileThreshold)
	pr, pw := io.Pipe()
	w.pipe, w.in, w.done = pw, bufio.NewWriterSize(pw, 1<<16), make(chan error, 1)
	go func() {
		_, err := w.g.R.Run(w.ctx, w.g.Cmd(args...).WithStdin(pr))
		if err == nil {
			err = io.ErrClosedPipe // it ended before we closed its input
		}
		pr.CloseWithError(err)
		if err == io.ErrClosedPipe {
			err = nil
		}
		w.done <- err
	}()
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
	if w.pipe == nil {
		w.start()
	}
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

// Close ends the import and waits for git to write the objects. Their ids
// are valid in the repository only once Close returned nil.
func (w *BlobWriter) Close() error {
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
