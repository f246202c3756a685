package wire

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Result is a scan stream as the host read it. The contents of its files are
// already stored, as blobs.
type Result struct {
	// Files are the files and symlinks sent, by path.
	Files map[string]File
	Meta  Meta
	// Run is the command's result, when the scan ran one first.
	Run  *RunResult
	held hold
}

// File is one file or symlink of a scan: its path, its git mode (100644,
// 100755, 120000) and the id of the blob that holds its content (a
// symlink's: its target).
type File struct {
	Path string
	Mode string
	ID   string
}

// keepPackBytes: a scan that sends more than this keeps its blobs in a
// pack. Below it, a few small files become loose objects, as `git add`
// would write them; above it, loose objects would cost as much disk as a
// pack, one file each, and git would only have to pack them again.
const keepPackBytes = 4 << 20

// ErrBadStream marks a scan stream the host refuses to read on.
var ErrBadStream = errors.New("bad scan stream")

// What a scan stream makes the host hold is bounded in memory, not in
// bytes read: the scanner runs as the agent's uid, so its stream is as
// untrusted as the agent (a forged meta entry of 3-byte listing records
// once took `litterbox mcp` to 1.9 GiB, one 24-byte DirEntry and a string
// each). Each entry kept is charged what it costs the host as it is read,
// before it is kept: the bytes of the command's output and of the meta,
// recordCost for each record of the meta, fileCost and its name for each
// file. A scan that would hold more than maxScanHeld is refused, and so is
// one that would take all the scans of the process together past
// maxHeldTotal; a result holds its charge until Release.
const (
	maxScanHeld  = 64 << 20
	maxHeldTotal = 128 << 20
	// recordCost is what one meta record costs parsed: its slot in a
	// listing or a list, and its entry in the maps a snapshot builds from
	// the listing.
	recordCost = 64
	// fileCost is what one file sent costs besides its name: its entries
	// in the result's map and in the snapshot's, and its blob id.
	fileCost = 320
	// dirCost is what a directory listed costs besides its records: its
	// entry in the meta's map of listings, and in the maps and list of
	// trees a snapshot reads for it.
	dirCost = 320
)

// maxEntry bounds the entries that are small in any honest stream: the
// command's result (its refusals are at most MaxRefusals, escaped as JSON)
// and the plan. JSON decoding copies what it decodes, which the charge
// does not count.
var maxEntry = map[string]int64{RunResultName: 8 * MaxRefusals, PlanName: 4 << 10}

// held is what the scans of this process hold together.
var held atomic.Int64

// hold is one scan's charge.
type hold struct{ n int64 }

// take charges n bytes for what to the scan, or refuses the stream.
func (h *hold) take(n int64, what string) error {
	if n < 0 || h.n+n > maxScanHeld {
		return &heldError{fmt.Sprintf("the scan is too big for one snapshot: %s would make the host hold more than %s for it (about 200,000 files changed, 1,000,000 entries of changed directories, or 150,000 directories), so nothing was recorded: ignore what need not be recorded (.gitignore), or remove it", what, sizeText(maxScanHeld))}
	}
	if held.Add(n) > maxHeldTotal {
		held.Add(-n)
		return &heldError{fmt.Sprintf("the scan was refused: %s would take the scans this process reads together past %s of memory, so nothing was recorded: try again once they are done", what, sizeText(maxHeldTotal))}
	}
	h.n += n
	return nil
}

// heldError is a stream refused for what it would make the host hold: a
// bad stream, whose text says what to do.
type heldError struct{ msg string }

func (e *heldError) Error() string        { return e.msg }
func (e *heldError) Is(target error) bool { return target == ErrBadStream }

func (h *hold) release() {
	held.Add(-h.n)
	h.n = 0
}

// Release gives back what the result holds in memory, for other scans;
// call it once the result is no longer used.
func (sc *Result) Release() {
	if sc != nil {
		sc.held.release()
	}
}

// sizeText is n bytes in MiB.
func sizeText(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// BlobStore stores file contents as blobs as they stream by: git's
// BlobWriter.
type BlobStore interface {
	KeepPack()
	Write(size int64, r io.Reader) (id string, err error)
}

// FileStore is a BlobStore told which file each blob is. A WriteFile that
// returns a *SkipError stored nothing and read nothing: the file is
// skipped, with the reason, and the stream goes on.
type FileStore interface {
	BlobStore
	WriteFile(path string, size int64, r io.Reader) (id string, err error)
}

// SkipError is a file a FileStore declined to store (the sandbox's record
// limit is reached), with the reason Read reports it under.
type SkipError struct {
	Reason string
}

func (e *SkipError) Error() string { return e.Reason }

// Read reads a scan stream, storing file contents as blobs through blobs
// as they come. Names are checked, never trusted: an entry that is
// absolute, climbs with "..", or holds a name git refuses is dropped and
// reported.
func Read(r io.Reader, blobs BlobStore) (*Result, error) {
	sc := &Result{Files: map[string]File{}}
	res, err := sc.read(r, blobs)
	if err != nil {
		sc.Release()
	}
	return res, err
}

func (sc *Result) read(r io.Reader, blobs BlobStore) (*Result, error) {
	write := func(_ string, size int64, r io.Reader) (string, error) { return blobs.Write(size, r) }
	if fs, ok := blobs.(FileStore); ok {
		write = fs.WriteFile
	}
	tr := tar.NewReader(r)
	gotMeta := false
	var refused []Skipped // names refused here; the meta comes last
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read scan: %w", err)
		}
		switch hdr.Name {
		case RunStdoutName, RunStderrName, RunResultName, PlanName, MetaName:
			if max, ok := maxEntry[hdr.Name]; ok && hdr.Size > max {
				return nil, fmt.Errorf("%w: its entry %s holds %d bytes, over %d", ErrBadStream, hdr.Name, hdr.Size, max)
			}
			if err := sc.held.take(hdr.Size, fmt.Sprintf("its entry %s of %d bytes", hdr.Name, hdr.Size)); err != nil {
				return nil, err
			}
			data := make([]byte, hdr.Size)
			if _, err := io.ReadFull(tr, data); err != nil {
				return nil, fmt.Errorf("read scan: %s: %w", hdr.Name, err)
			}
			bad := func(err error) error { return fmt.Errorf("%w: %w", ErrBadStream, err) }
			switch hdr.Name {
			case RunStdoutName:
				sc.ensureRun().Stdout = unsafeString(data)
			case RunStderrName:
				sc.ensureRun().Stderr = unsafeString(data)
			case RunResultName:
				out, errOut := sc.ensureRun().Stdout, sc.Run.Stderr
				if err := json.Unmarshal(data, sc.Run); err != nil {
					return nil, bad(fmt.Errorf("read command result: %w", err))
				}
				sc.Run.Stdout, sc.Run.Stderr = out, errOut
			case PlanName:
				p, err := parsePlan(data)
				if err != nil {
					return nil, bad(err)
				}
				if p.Bytes >= keepPackBytes {
					blobs.KeepPack()
				}
			case MetaName:
				records, dirs := countRecords(data)
				if err := sc.held.take(records*recordCost+dirs*dirCost, fmt.Sprintf("its meta of %d records", records)); err != nil {
					return nil, err
				}
				if sc.Meta, err = parseMeta(data); err != nil {
					return nil, bad(err)
				}
				gotMeta = true
			}
			continue
		}
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeSymlink {
			continue
		}
		if err := sc.held.take(fileCost+int64(len(hdr.Name)), fmt.Sprintf("its file %d", len(sc.Files)+len(refused)+1)); err != nil {
			return nil, err
		}
		if reason := unsafePath(hdr.Name, hdr.Typeflag == tar.TypeSymlink); reason != "" {
			refused = append(refused, Skipped{Path: hdr.Name, Reason: reason})
			continue
		}
		ch := File{Path: hdr.Name, Mode: "100644"}
		switch hdr.Typeflag {
		case tar.TypeSymlink:
			ch.Mode = "120000"
			ch.ID, err = write(hdr.Name, int64(len(hdr.Linkname)), strings.NewReader(hdr.Linkname))
		case tar.TypeReg:
			if hdr.Mode&0o111 != 0 {
				ch.Mode = "100755"
			}
			ch.ID, err = write(hdr.Name, hdr.Size, tr)
		default:
			continue
		}
		if skip := (*SkipError)(nil); errors.As(err, &skip) {
			refused = append(refused, Skipped{Path: hdr.Name, Reason: skip.Reason})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read scan: %s: %w", hdr.Name, err)
		}
		sc.Files[hdr.Name] = ch
	}
	if !gotMeta {
		return nil, errors.New("read scan: the stream ended early (no meta entry)")
	}
	sc.Meta.Skipped = append(sc.Meta.Skipped, refused...)
	sc.sanitize()
	return sc, nil
}

// sanitize checks the meta, which is as untrusted as the names: the agent
// runs as the scanner's uid and can tamper with it. Its paths go back to the
// scanner (Full, Paths, List, Tracked) and into git queries, so they get the
// same checks (Linked goes back too); a listing entry is one name, never
// a path.
func (sc *Result) sanitize() {
	for d, listing := range sc.Meta.Dirs {
		if d != "" && unsafePath(d, false) != "" {
			delete(sc.Meta.Dirs, d)
			continue
		}
		kept := listing[:0]
		for _, e := range listing {
			if safeListingName(e.Name) {
				kept = append(kept, e)
			}
		}
		sc.Meta.Dirs[d] = kept
	}
	ignored := sc.Meta.IgnoredChanged[:0]
	for _, p := range sc.Meta.IgnoredChanged {
		if reason := unsafePath(p, false); reason == "" {
			ignored = append(ignored, p)
		} else {
			sc.Meta.Skipped = append(sc.Meta.Skipped, Skipped{Path: p, Reason: reason})
		}
	}
	sc.Meta.IgnoredChanged = ignored
	unrec := sc.Meta.Unrecordable[:0]
	for _, u := range sc.Meta.Unrecordable {
		if reason := unsafePath(u.Path, false); reason == "" {
			unrec = append(unrec, u)
		} else {
			sc.Meta.Skipped = append(sc.Meta.Skipped, Skipped{Path: u.Path, Reason: reason})
		}
	}
	sc.Meta.Unrecordable = unrec
	sc.Meta.Ignored = safePaths(sc.Meta.Ignored)
	sc.Meta.Linked = safePaths(sc.Meta.Linked)
	// What changed while it was read is not recorded now; the next scan
	// sends it again.
	for _, p := range sc.Meta.Torn {
		delete(sc.Files, p)
	}
}

// safePaths are the safe paths of list, sorted, each once.
func safePaths(list []string) []string {
	var out []string
	for _, p := range list {
		if unsafePath(p, false) == "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (sc *Result) ensureRun() *RunResult {
	if sc.Run == nil {
		sc.Run = &RunResult{}
	}
	return sc.Run
}

// safeListingName checks the name of one listing entry: a single path
// component. A name git refuses may be listed: listing it only keeps a
// tree entry of that name from being taken for deleted.
func safeListingName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// SafePath reports whether p, a directory or file named by the scanner, is
// one the host may send back to it or look up (unsafePath says nothing).
func SafePath(p string) bool { return unsafePath(p, false) == "" }

// unsafePath says why p cannot be recorded, or "" when it can: it must be
// relative and clean, and no component may be a name git refuses.
func unsafePath(p string, isLink bool) string {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || path.Clean(p) != p {
		return "unsafe path"
	}
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if c == ".." || c == "." {
			return "unsafe path"
		}
		if reason := RefusedName(c, isLink && i == len(comps)-1); reason != "" {
			return reason
		}
	}
	return ""
}

// unsafeString is data as a string, without a copy: data, read for it
// alone, is never written again, and a copy would double what a scan holds.
func unsafeString(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	return unsafe.String(&data[0], len(data))
}

// countRecords counts the NUL-ended records of a meta entry, and those of
// them that open a directory's listing (a record after a reason counts as
// one too: the count is what parsing may cost, at most).
func countRecords(data []byte) (records, dirs int64) {
	for len(data) > 0 {
		if data[0] == 'D' {
			dirs++
		}
		records++
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			break
		}
		data = data[i+1:]
	}
	return records, dirs
}
