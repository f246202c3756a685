package scanner

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

func scanStream(t *testing.T, entries []tar.Header, contents []string, meta wire.Meta) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i, h := range entries {
		h.Size = int64(len(contents[i]))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(contents[i]))
	}
	data := meta.Encode()
	tw.WriteHeader(&tar.Header{Name: wire.MetaName, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o644})
	tw.Write(data)
	tw.Close()
	return buf.Bytes()
}

// memBlobs is a blobStore in memory, for tests.
type memBlobs map[string][]byte

func (memBlobs) KeepPack() {}

func (m memBlobs) Write(size int64, r io.Reader) (string, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return "", err
	}
	id := git.BlobID(data)
	m[id] = data
	return id, nil
}

// parseScan reads a scan stream held in memory, keeping contents in blobs.
func parseScan(data []byte, blobs memBlobs) (*wire.Result, error) {
	res, err := wire.Read(bytes.NewReader(data), blobs)
	res.Release() // only the charge: the test reads on
	return res, err
}

func TestParseScanRefusesHostileNames(t *testing.T) {
	names := []string{"../../etc/passwd", "/etc/passwd", ".git/config", "a/.GIT/hooks/x", "a/./b", "ok.txt"}
	var hdrs []tar.Header
	var contents []string
	for _, n := range names {
		hdrs = append(hdrs, tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644})
		contents = append(contents, "x")
	}
	blobs := memBlobs{}
	sc, err := parseScan(scanStream(t, hdrs, contents, wire.Meta{Dirs: map[string][]wire.DirEntry{"../x": {{Name: "y", Kind: wire.EntryFile}}}}), blobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Files) != 1 || string(blobs[sc.Files["ok.txt"].ID]) != "x" {
		t.Fatalf("files = %v, want only ok.txt", sc.Files)
	}
	if len(sc.Meta.Skipped) != len(names)-1 {
		t.Fatalf("skipped %v, want the %d unsafe names reported", sc.Meta.Skipped, len(names)-1)
	}
	if _, ok := sc.Meta.Dirs["../x"]; ok {
		t.Fatal("an unsafe directory listing was kept")
	}
}

// TestParseScanRefusesHostileMeta: the agent runs as the scanner's uid and
// can forge its meta too. Paths in it that climb out of /src must not go
// back to the scanner (Full, Paths) or into git queries.
func TestParseScanRefusesHostileMeta(t *testing.T) {
	sc, err := parseScan(scanStream(t, nil, nil, wire.Meta{
		Dirs:           map[string][]wire.DirEntry{"": {{Name: "../../etc", Kind: wire.EntryDir}, {Name: "a/b", Kind: wire.EntryDir}, {Name: ".", Kind: wire.EntryDir}, {Name: "ok", Kind: wire.EntryDir}, {Name: "ok.txt", Kind: wire.EntryFile}, {Name: "ign", Kind: wire.EntryNotWalked}}},
		IgnoredChanged: []string{"../../etc/passwd", "/etc/shadow", ".git/config", "kept.log"},
		Ignored:        []string{"../up", "ign"},
	}), memBlobs{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range sc.Meta.Dirs[""] {
		names = append(names, e.Name)
	}
	if got, want := strings.Join(names, ","), "ok,ok.txt,ign"; got != want {
		t.Errorf("listing = %q, want %q", got, want)
	}
	if got := sc.Meta.IgnoredChanged; len(got) != 1 || got[0] != "kept.log" {
		t.Errorf("ignoredChanged = %q, want only kept.log", got)
	}
	if got := sc.Meta.Ignored; len(got) != 1 || got[0] != "ign" {
		t.Errorf("ignored = %q, want only ign", got)
	}
	if len(sc.Meta.Skipped) != 3 {
		t.Errorf("skipped = %v, want the 3 unsafe ignored paths named", sc.Meta.Skipped)
	}
}

func TestParseScanModes(t *testing.T) {
	blobs := memBlobs{}
	sc, err := parseScan(scanStream(t, []tar.Header{
		{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o755},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"},
	}, []string{"echo\n", ""}, wire.Meta{}), blobs)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Files["run.sh"].Mode != "100755" {
		t.Errorf("run.sh mode %s, want 100755", sc.Files["run.sh"].Mode)
	}
	if l := sc.Files["link"]; l.Mode != "120000" || string(blobs[l.ID]) != "/etc/shadow" {
		t.Errorf("link = %s %q, want a 120000 entry holding the target", l.Mode, blobs[l.ID])
	}
}

func TestParseScanWithoutMetaIsAnError(t *testing.T) {
	var buf bytes.Buffer
	tar.NewWriter(&buf).Close()
	if _, err := parseScan(buf.Bytes(), memBlobs{}); err == nil {
		t.Fatal("a stream cut before its meta entry was accepted")
	}
}

// scanDir scans root with o and reads the stream back.
func scanDir(t *testing.T, o wire.Options) (*wire.Result, memBlobs) {
	t.Helper()
	var buf bytes.Buffer
	if err := Scan(&buf, o); err != nil {
		t.Fatal(err)
	}
	blobs := memBlobs{}
	sc, err := parseScan(buf.Bytes(), blobs)
	if err != nil {
		t.Fatal(err)
	}
	return sc, blobs
}

func TestScanReportsOnlyChanges(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	write("old.txt", "old")
	write(".gitignore", "*.o\nbuild/\n")
	write("build/x", "ignored")
	start := stampAfter(t, root, "old.txt", ".gitignore", "build/x")
	write("a/new.txt", "new")
	write("a/obj.o", "ignored")
	os.Chmod(filepath.Join(root, "old.txt"), 0o755)

	sc, _ := scanDir(t, wire.Options{Root: root, Since: start})
	if len(sc.Files) != 2 || sc.Files["a/new.txt"].ID == "" || sc.Files["old.txt"].Mode != "100755" {
		t.Fatalf("files = %v, want a/new.txt and old.txt (chmod +x)", keys(sc.Files))
	}
	if strings.Join(sc.Meta.IgnoredChanged, ",") != "a/obj.o" {
		t.Fatalf("ignoredChanged = %v, want a/obj.o", sc.Meta.IgnoredChanged)
	}
	if _, ok := sc.Meta.Dirs["build"]; ok {
		t.Fatal("an ignored directory was walked")
	}
	if strings.Join(sc.Meta.Ignored, ",") != "build" {
		t.Fatalf("ignored = %v, want build", sc.Meta.Ignored)
	}
}

func keys(m map[string]wire.File) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTarKeepsNamesByteForByte: Go's archive/tar writes a name that is not
// ASCII in a PAX record and reads it back as it was, whatever its bytes;
// the scan stream relies on it for every name, and on its meta format for
// listings (JSON turned non-UTF-8 names into U+FFFD, and the host deleted
// the real files).
func TestTarKeepsNamesByteForByte(t *testing.T) {
	var names []string
	for c := 1; c < 256; c++ {
		if c != '/' {
			names = append(names, "n"+string([]byte{byte(c)})+"x")
		}
	}
	names = append(names, "\xff\xfe", "\xc3", "\xed\xa0\x80", strings.Repeat("\xe9", 300), " ", "-", "--x", "a\nb", "\r")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644}); err != nil {
			t.Fatalf("write %q: %v", n, err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: n + "l", Typeflag: tar.TypeSymlink, Linkname: n}); err != nil {
			t.Fatalf("write link %q: %v", n, err)
		}
	}
	tw.Close()
	tr := tar.NewReader(&buf)
	for _, n := range names {
		h, err := tr.Next()
		if err != nil || h.Name != n {
			t.Fatalf("read %q back as %q (%v)", n, h.Name, err)
		}
		h, err = tr.Next()
		if err != nil || h.Name != n+"l" || h.Linkname != n {
			t.Fatalf("read link %q back as %q -> %q (%v)", n, h.Name, h.Linkname, err)
		}
	}

	// And through a whole scan: files, directories and listings.
	root := t.TempDir()
	odd := []string{"\xff\xfe", "\x80", "\xc0\xc1", "t\tab", "n\nl", "c\rr", "-dash", "sp ace", "q\"\\'"}
	for _, n := range odd {
		os.MkdirAll(filepath.Join(root, n), 0o755)
		os.WriteFile(filepath.Join(root, n, n), []byte(n), 0o644)
	}
	sc, blobs := scanDir(t, wire.Options{Root: root})
	for _, n := range odd {
		p := n + "/" + n
		if string(blobs[sc.Files[p].ID]) != n {
			t.Errorf("file %q: sent %q, want its name as content", p, blobs[sc.Files[p].ID])
		}
		if l := sc.Meta.Dirs[n]; len(l) != 1 || l[0].Name != n || l[0].Kind != wire.EntryFile {
			t.Errorf("listing of %q = %q, want [%q]", n, l, n)
		}
	}
	if got := len(sc.Meta.Dirs[""]); got != len(odd) {
		t.Errorf("root listing has %d entries, want %d", got, len(odd))
	}
}

// TestScanEntersOnlyTrackedIgnoredDirs: an ignored directory is never
// walked (node_modules can be huge), unless the host says the branch tracks
// files under it; then only the directories it names are walked, and files
// there are named for the host to check, never sent.
func TestScanEntersOnlyTrackedIgnoredDirs(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"node_modules/a/x.js", "node_modules/b/y.js", "build/keep.txt", "build/sub/deep.txt", "build/other/z", "src/main.go"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(p), 0o644)
	}
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte("node_modules/\nbuild/\n"), 0o644)

	sc, _ := scanDir(t, wire.Options{Root: root})
	if got := strings.Join(sc.Meta.Ignored, ","); got != "build,node_modules" {
		t.Fatalf("ignored = %q, want build,node_modules", got)
	}
	for d := range sc.Meta.Dirs {
		if strings.HasPrefix(d, "node_modules") || strings.HasPrefix(d, "build") {
			t.Errorf("ignored directory %q was walked", d)
		}
	}
	if len(sc.Meta.IgnoredChanged) != 0 {
		t.Errorf("ignoredChanged = %q, want nothing from unwalked directories", sc.Meta.IgnoredChanged)
	}

	sc, _ = scanDir(t, wire.Options{Root: root, Tracked: []string{"build", "build/sub"}})
	if got := strings.Join(slices.Sorted(maps.Keys(sc.Meta.Dirs)), ","); got != ",build,build/sub,src" {
		t.Errorf("walked %q, want the root, build, build/sub and src only", got)
	}
	if got := strings.Join(sc.Meta.IgnoredChanged, ","); got != "build/keep.txt,build/sub/deep.txt" && got != "build/sub/deep.txt,build/keep.txt" {
		t.Errorf("ignoredChanged = %q, want build/keep.txt and build/sub/deep.txt", got)
	}
	if _, ok := sc.Files["build/keep.txt"]; ok {
		t.Error("a file under an ignored directory was sent before the host asked for it")
	}
}

// TestScanFileShorterThanStat: the scanner streams a file with the size
// fstat gave and never reads it whole; a file that yields less than that
// (it shrank while read: a sysfs file does so every time, 4096 bytes by
// stat, a few by read) is padded so the tar stays whole, and named Torn,
// so the host records nothing of it.
func TestScanFileShorterThanStat(t *testing.T) {
	const dir, name = "/sys/kernel/mm/transparent_hugepage", "enabled"
	fi, err := os.Stat(filepath.Join(dir, name))
	if err != nil || fi.Size() == 0 {
		t.Skip("needs a sysfs file whose stat size exceeds its content")
	}
	var buf bytes.Buffer
	if err := Scan(&buf, wire.Options{Root: dir, Since: 1 << 62, Paths: []string{name}}); err != nil {
		t.Fatal(err)
	}
	sc, err := parseScan(buf.Bytes(), memBlobs{})
	if err != nil {
		t.Fatalf("the stream is broken: %v", err)
	}
	if strings.Join(sc.Meta.Torn, ",") != name {
		t.Errorf("torn = %q, want %q", sc.Meta.Torn, name)
	}
	if _, ok := sc.Files[name]; ok {
		t.Error("a torn file was kept for the commit")
	}
}

// stampAfter takes a scan stamp later than the ctime of every named file.
// The kernel stamps files with a coarse clock: a file written just before a
// stamp can carry the stamp's own time, and the scan, which takes "at or
// after" as changed, rightly reports it (the test then failed under load).
func stampAfter(t *testing.T, root string, names ...string) int64 {
	t.Helper()
	var last int64
	for _, n := range names {
		fi, err := os.Lstat(filepath.Join(root, n))
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, ctime(fi))
	}
	for {
		st, err := stamp()
		if err != nil {
			t.Fatal(err)
		}
		if st > last {
			return st
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScanAudit: an audit sends nothing and lists nothing; it names every
// file no snapshot can record, changed or not (over the cap, with its blob
// id so the host can tell whether the branch holds it; ignored ones marked,
// as they matter only when tracked), every name git refuses, and every
// directory it cannot read. A plain scan after the stamp reports none of
// them: they did not change.
func TestScanAudit(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte(s), 0o644)
	}
	big := strings.Repeat("b", 100)
	write(".gitignore", "*.log\nbuild/\n")
	write("small.txt", "ok")
	write("model.bin", big)
	write("sub/deep.bin", big+"x")
	write("app.log", big)
	write("build/out.bin", big)
	write("build/keep.bin", big)
	write("GIT~1/x", "refused")
	os.Symlink("model.bin", filepath.Join(root, "link"))
	start := stampAfter(t, root, ".", ".gitignore", "small.txt", "model.bin", "sub", "sub/deep.bin", "app.log", "build", "build/out.bin", "build/keep.bin", "GIT~1", "GIT~1/x", "link")

	sc, _ := scanDir(t, wire.Options{Root: root, Since: start, MaxSize: 50})
	if len(sc.Files) != 0 || len(sc.Meta.Skipped) != 0 {
		t.Fatalf("a plain scan after the stamp sent %v and skipped %v; want nothing", keys(sc.Files), sc.Meta.Skipped)
	}

	sc, _ = scanDir(t, wire.Options{Root: root, Since: start, MaxSize: 50, Audit: true, Tracked: []string{"build"}, Paths: []string{"small.txt"}, List: []string{""}})
	if len(sc.Files) != 0 || len(sc.Meta.Dirs) != 0 {
		t.Errorf("an audit sent %v and listed %d directories; want nothing", keys(sc.Files), len(sc.Meta.Dirs))
	}
	got := map[string]wire.Unrecordable{}
	for _, u := range sc.Meta.Unrecordable {
		got[u.Path] = u
	}
	want := map[string]bool{"model.bin": false, "sub/deep.bin": false, "app.log": true, "build/out.bin": true, "build/keep.bin": true}
	if len(got) != len(want) {
		t.Errorf("unrecordable = %v; want %v", sc.Meta.Unrecordable, want)
	}
	for p, ignored := range want {
		u, ok := got[p]
		content, _ := os.ReadFile(filepath.Join(root, p))
		switch {
		case !ok:
			t.Errorf("%s is not named", p)
		case u.Ignored != ignored:
			t.Errorf("%s: ignored = %v, want %v", p, u.Ignored, ignored)
		case u.ID != git.BlobID(content):
			t.Errorf("%s: id %q, want its blob id %s", p, u.ID, git.BlobID(content))
		case !strings.Contains(u.Reason, "over the snapshot size cap of 50 bytes"):
			t.Errorf("%s: reason %q", p, u.Reason)
		}
	}
	if len(sc.Meta.Skipped) != 1 || sc.Meta.Skipped[0].Path != "GIT~1" {
		t.Errorf("skipped = %v; want the refused name GIT~1", sc.Meta.Skipped)
	}

	// What cannot be read, when the scanner is not root (root reads all).
	os.Chmod(filepath.Join(root, "small.txt"), 0o000)
	os.Chmod(filepath.Join(root, "sub"), 0o600) // listed, not searchable
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "sub"), 0o755) })
	sc, _ = scanDir(t, wire.Options{Root: root, Since: start, MaxSize: 50, Audit: true})
	if os.Geteuid() == 0 {
		return // snapshot_unreadable.txtar runs it as uid 1000
	}
	names := []string{}
	for _, u := range sc.Meta.Unrecordable {
		names = append(names, u.Path)
	}
	for _, s := range sc.Meta.Skipped {
		names = append(names, s.Path)
	}
	slices.Sort(names)
	if got := strings.Join(names, ","); got != "GIT~1,app.log,model.bin,small.txt,sub/" {
		t.Errorf("named %s", got)
	}
}

// TestScanUnsearchableDir: a directory that can be read but not searched
// (mode r without x) is named as one that cannot be read, and not listed:
// its listing came out empty, and the host recorded its files as deleted.
// Root searches any directory, so this runs as another user only
// (snapshot_unreadable.txtar runs it in a sandbox).
func TestScanUnsearchableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root searches any directory")
	}
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "f"), []byte("x"), 0o644)
	os.Chmod(filepath.Join(root, "d"), 0o600)
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "d"), 0o755) })
	sc, _ := scanDir(t, wire.Options{Root: root})
	if l, ok := sc.Meta.Dirs["d"]; ok {
		t.Errorf("d was listed as %v: its files would be recorded as deleted", l)
	}
	if len(sc.Meta.Skipped) != 1 || sc.Meta.Skipped[0].Path != "d/" || !strings.Contains(sc.Meta.Skipped[0].Reason, "permission denied") {
		t.Errorf("skipped = %v; want d/, permission denied", sc.Meta.Skipped)
	}
}
