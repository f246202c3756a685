package wire

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// forged streams a tar of files empty files named f0, f1..., then a meta
// entry of size metaSize made of records rec repeated, as a scanner the
// agent wrote over (or a command writing into the scanner's stream) could.
func forged(files int, metaSize int64, rec string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		for i := range files {
			if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%d", i), Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		head := "S1\x00D\x00"
		if err := tw.WriteHeader(&tar.Header{Name: MetaName, Typeflag: tar.TypeReg, Size: metaSize, Mode: 0o644}); err != nil {
			pw.CloseWithError(err)
			return
		}
		w := io.Writer(tw)
		if _, err := io.WriteString(w, head); err != nil {
			pw.CloseWithError(err)
			return
		}
		chunk := []byte(strings.Repeat(rec, 64<<10/len(rec)))
		left := metaSize - int64(len(head))
		for left > 0 {
			n := min(left, int64(len(chunk)))
			n -= n % int64(len(rec))
			if n == 0 {
				n = left
			}
			if _, err := w.Write(chunk[:n]); err != nil {
				pw.CloseWithError(err)
				return
			}
			left -= n
		}
		tw.Close()
		pw.Close()
	}()
	return pr
}

// nopBlobs stores nothing.
type nopBlobs struct{}

func (nopBlobs) KeepPack() {}
func (nopBlobs) Write(size int64, r io.Reader) (string, error) {
	_, err := io.Copy(io.Discard, r)
	return strings.Repeat("0", 40), err
}

// heapPeak runs fn and reports the largest heap in use seen while it ran
// (sampled) and after it, above what was in use before.
func heapPeak(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak uint64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapAlloc)
			mu.Unlock()
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if peak < base {
		return 0
	}
	return peak - base
}

// TestReadBoundsMemory: what a scan stream makes the host hold is bounded in
// memory, not in bytes read. A forged meta entry of 3-byte listing records
// made `litterbox mcp` hold about 30 times its size (one DirEntry each: a 60
// MB entry took it from 17 MiB to 1.9 GiB), and the stream's file entries
// were not bounded at all.
func TestReadBoundsMemory(t *testing.T) {
	cases := []struct {
		name     string
		files    int
		metaSize int64
	}{
		{"a meta entry over the bound, refused at its header", 0, 1 << 30},
		{"listing records under the byte bound", 0, 60 << 20},
		{"empty files", 400_000, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			peak := heapPeak(func() {
				var res *Result
				res, err = Read(forged(c.files, c.metaSize, "fa\x00"), nopBlobs{})
				if res != nil {
					res.Release()
				}
			})
			if !errors.Is(err, ErrBadStream) {
				t.Errorf("err = %v, want a refused stream", err)
			}
			if peak > maxScanHeld+16<<20 {
				t.Errorf("the host held %d MiB reading it, over the bound of %d MiB", peak>>20, maxScanHeld>>20)
			}
			if held.Load() != 0 {
				t.Errorf("%d bytes still counted as held", held.Load())
			}
		})
	}
}

// TestReadChargesWhatItHolds: the charge is at least what a result holds,
// so the bound is one of memory, measured: many files and a long listing,
// and many directories listed (each an entry of a map: they were charged
// half what they held).
func TestReadChargesWhatItHolds(t *testing.T) {
	var dirs bytes.Buffer
	dirs.WriteString("S1\x00")
	for i := range 100_000 {
		fmt.Fprintf(&dirs, "D%07d\x00", i)
	}
	var dirStream bytes.Buffer
	tw := tar.NewWriter(&dirStream)
	tw.WriteHeader(&tar.Header{Name: MetaName, Typeflag: tar.TypeReg, Size: int64(dirs.Len()), Mode: 0o644})
	tw.Write(dirs.Bytes())
	tw.Close()
	for _, c := range []struct {
		name   string
		stream func() io.Reader
	}{
		{"files and a listing", func() io.Reader { return forged(50_000, 4*100_000+5, "fab\x00") }},
		{"directories", func() io.Reader { return bytes.NewReader(dirStream.Bytes()) }},
	} {
		stream := c.stream()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Read(stream, nopBlobs{})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		used := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		if res.held.n < used {
			t.Errorf("%s: charged %d KiB for a result that holds %d KiB", c.name, res.held.n>>10, used>>10)
		}
		t.Logf("%s: charged %d KiB, holds %d KiB", c.name, res.held.n>>10, used>>10)
		runtime.KeepAlive(res)
		res.Release()
		if held.Load() != 0 {
			t.Errorf("%d bytes still counted as held", held.Load())
		}
	}
}

// TestReadBoundsScansTogether: scans read side by side share one bound, so
// two forged streams in parallel cannot hold twice as much.
func TestReadBoundsScansTogether(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 3)
	peak := heapPeak(func() {
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := Read(forged(0, maxScanHeld-1<<20, "fa\x00"), nopBlobs{})
				if res != nil {
					res.Release()
				}
				errs[i] = err
			}()
		}
		wg.Wait()
	})
	for i, err := range errs {
		if !errors.Is(err, ErrBadStream) {
			t.Errorf("scan %d: err = %v, want a refused stream", i, err)
		}
	}
	if peak > maxHeldTotal+32<<20 {
		t.Errorf("three scans together held %d MiB, over the bound of %d MiB", peak>>20, maxHeldTotal>>20)
	}
}

// TestReadRefusesABigResult: the command's result, decoded as JSON (which
// copies what it decodes), is small in an honest stream, and a bigger one
// is refused before it is read.
func TestReadRefusesABigResult(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		tw.WriteHeader(&tar.Header{Name: RunResultName, Typeflag: tar.TypeReg, Size: 32 << 20, Mode: 0o644})
		tw.Write([]byte(`{"refusals":"`))
		pw.Close()
	}()
	_, err := Read(pr, nopBlobs{})
	if !errors.Is(err, ErrBadStream) || !strings.Contains(err.Error(), "over") {
		t.Errorf("err = %v, want a refused entry", err)
	}
}
