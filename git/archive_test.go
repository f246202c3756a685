package git

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"
)

func TestWriteTar(t *testing.T) {
	ls := "040000 tree t1\tdir\x00100755 blob b1\tdir/run.sh\x00120000 blob b2\tlink\x00160000 commit c1\tsub\x00100644 blob b3\tREADME\x00"
	entries, err := ParseLsTree([]byte(ls))
	if err != nil {
		t.Fatal(err)
	}
	batch := "b1 blob 5\necho\n\nb2 blob 11\n/etc/shadow\nb3 blob 0\n\n"
	var out bytes.Buffer
	if err := writeTar(bytes.NewBufferString(batch), entries, &out, time.Unix(0, 0), nil); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name, body, link string
		flag             byte
		mode             int64
	}{
		{"dir/", "", "", tar.TypeDir, 0o755},
		{"dir/run.sh", "echo\n", "", tar.TypeReg, 0o755},
		{"link", "", "/etc/shadow", tar.TypeSymlink, 0o777},
		{"sub/", "", "", tar.TypeDir, 0o755},
		{"README", "", "", tar.TypeReg, 0o644},
	}
	tr := tar.NewReader(&out)
	for _, w := range want {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("entry %s: %v", w.name, err)
		}
		body, _ := io.ReadAll(tr)
		if h.Name != w.name || h.Typeflag != w.flag || h.Mode != w.mode || string(body) != w.body || h.Linkname != w.link {
			t.Errorf("got %s %c %o %q -> %q, want %s %c %o %q -> %q", h.Name, h.Typeflag, h.Mode, body, h.Linkname, w.name, w.flag, w.mode, w.body, w.link)
		}
	}
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("extra entries after the tree: %v", err)
	}
}

func TestWriteTarRefusesAMismatchedStream(t *testing.T) {
	entries, _ := ParseLsTree([]byte("100644 blob b1\ta\x00"))
	if err := writeTar(bytes.NewBufferString("zz blob 1\nx\n"), entries, io.Discard, time.Now(), nil); err == nil {
		t.Fatal("a blob stream out of step with the tree was accepted")
	}
}
