package sandbox

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/git"
)

func scanStream(t *testing.T, entries []tar.Header, contents []string, meta ScanMeta) []byte {
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
	data, _ := json.Marshal(meta)
	tw.WriteHeader(&tar.Header{Name: scanMetaName, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o644})
	tw.Write(data)
	tw.Close()
	return buf.Bytes()
}

func TestParseScanRefusesHostileNames(t *testing.T) {
	names := []string{"../../etc/passwd", "/etc/passwd", ".git/config", "a/.GIT/hooks/x", "a/./b", "ok.txt"}
	var hdrs []tar.Header
	var contents []string
	for _, n := range names {
		hdrs = append(hdrs, tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644})
		contents = append(contents, "x")
	}
	sc, err := parseScan(scanStream(t, hdrs, contents, ScanMeta{Dirs: map[string][]string{"../x": {"y"}}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.files) != 1 || sc.files["ok.txt"].Content == nil {
		t.Fatalf("files = %v, want only ok.txt", sc.files)
	}
	if len(sc.meta.Skipped) != len(names)-1 {
		t.Fatalf("skipped %v, want the %d unsafe names reported", sc.meta.Skipped, len(names)-1)
	}
	if _, ok := sc.meta.Dirs["../x"]; ok {
		t.Fatal("an unsafe directory listing was kept")
	}
}

// TestParseScanRefusesHostileMeta: the agent runs as the scanner's uid and
// can forge its meta too. Paths in it that climb out of /src must not go
// back to the scanner (--full, --path) or into git queries.
func TestParseScanRefusesHostileMeta(t *testing.T) {
	sc, err := parseScan(scanStream(t, nil, nil, ScanMeta{
		Dirs:           map[string][]string{"": {"../../etc/", "a/b/", "./", "ok/", "ok.txt", "ign/!"}},
		IgnoredChanged: []string{"../../etc/passwd", "/etc/shadow", ".git/config", "kept.log"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.meta.Dirs[""], []string{"ok/", "ok.txt", "ign/!"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("listing = %q, want %q", got, want)
	}
	if got := sc.meta.IgnoredChanged; len(got) != 1 || got[0] != "kept.log" {
		t.Errorf("ignoredChanged = %q, want only kept.log", got)
	}
	if len(sc.meta.Skipped) != 3 {
		t.Errorf("skipped = %v, want the 3 unsafe ignored paths named", sc.meta.Skipped)
	}
	full, paths := sc.followUps(map[string]map[string]git.TreeEntry{"": {"kept.log": {Mode: "100644"}}})
	if strings.Join(full, ",") != "ok" || strings.Join(paths, ",") != "kept.log" {
		t.Errorf("followUps = %q %q, want [ok] [kept.log]", full, paths)
	}
}

func TestParseScanModes(t *testing.T) {
	sc, err := parseScan(scanStream(t, []tar.Header{
		{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o755},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"},
	}, []string{"echo\n", ""}, ScanMeta{}))
	if err != nil {
		t.Fatal(err)
	}
	if sc.files["run.sh"].Mode != "100755" {
		t.Errorf("run.sh mode %s, want 100755", sc.files["run.sh"].Mode)
	}
	if l := sc.files["link"]; l.Mode != "120000" || string(l.Content) != "/etc/shadow" {
		t.Errorf("link = %s %q, want a 120000 entry holding the target", l.Mode, l.Content)
	}
}

func TestParseScanWithoutMetaIsAnError(t *testing.T) {
	var buf bytes.Buffer
	tar.NewWriter(&buf).Close()
	if _, err := parseScan(buf.Bytes()); err == nil {
		t.Fatal("a stream cut before its meta entry was accepted")
	}
}

func TestChanges(t *testing.T) {
	same := []byte("same\n")
	trees := map[string]map[string]git.TreeEntry{
		"": {
			"keep.txt": {Mode: "100644", ID: git.BlobID(same)},
			"gone.txt": {Mode: "100644", ID: git.BlobID([]byte("x"))},
			"dir":      {Mode: "40000", ID: "t1"},
			"becomes":  {Mode: "100644", ID: "b1"},
			"sub":      {Mode: "160000", ID: "c1"},
			"ign":      {Mode: "40000", ID: "t2"},
		},
	}
	sc := &scanned{
		files: map[string]git.Change{
			"keep.txt": {Path: "keep.txt", Mode: "100644", Content: same},       // touched, unchanged
			"new.txt":  {Path: "new.txt", Mode: "100644", Content: []byte("n")}, // added
			"dir":      {Path: "dir", Mode: "100644", Content: []byte("f")},     // a directory became a file
		},
		meta: ScanMeta{Dirs: map[string][]string{"": {"keep.txt", "new.txt", "dir", "becomes/", "sub/", "ign/!"}}},
	}
	var got []string
	for _, c := range sc.changes(trees) {
		op := "M "
		if c.Delete {
			op = "D "
		}
		got = append(got, op+c.Path)
	}
	want := "D becomes,D dir,M dir,D gone.txt,M new.txt"
	if strings.Join(got, ",") != want {
		t.Fatalf("changes = %v, want %s", got, want)
	}
	full, _ := sc.followUps(trees)
	if strings.Join(full, ",") != "becomes" {
		t.Fatalf("followUps = %v, want the file that became a directory", full)
	}
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
	start, _ := stamp()
	write("a/new.txt", "new")
	write("a/obj.o", "ignored")
	os.Chmod(filepath.Join(root, "old.txt"), 0o755)

	var buf bytes.Buffer
	if err := Scan(&buf, ScanOptions{Root: root, Since: start}); err != nil {
		t.Fatal(err)
	}
	sc, err := parseScan(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.files) != 2 || sc.files["a/new.txt"].Content == nil || sc.files["old.txt"].Mode != "100755" {
		t.Fatalf("files = %v, want a/new.txt and old.txt (chmod +x)", keys(sc.files))
	}
	if strings.Join(sc.meta.IgnoredChanged, ",") != "a/obj.o" {
		t.Fatalf("ignoredChanged = %v, want a/obj.o", sc.meta.IgnoredChanged)
	}
	if _, ok := sc.meta.Dirs["build"]; ok {
		t.Fatal("an ignored directory was walked")
	}
}

func keys(m map[string]git.Change) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
