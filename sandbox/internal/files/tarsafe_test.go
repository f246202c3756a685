package files

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostileTar is what a sandbox that has taken over its tar could send: names
// that climb, absolute names, links and then files through them, a hard
// link to a host file, an entry of another name than the path copied.
func hostileTar(t *testing.T) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	add := func(typ byte, name, link, body string) {
		h := &tar.Header{Typeflag: typ, Name: name, Linkname: link, Mode: 0o644, Size: int64(len(body))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write([]byte(body))
		}
	}
	add(tar.TypeDir, "./top/", "", "")
	add(tar.TypeReg, "./top/ok", "", "fine")
	add(tar.TypeReg, "./top/../escaped", "", "evil")
	add(tar.TypeReg, "/abs", "", "evil")
	add(tar.TypeReg, "./other", "", "evil")
	add(tar.TypeSymlink, "./top/x", "/etc", "")
	add(tar.TypeReg, "./top/x/planted", "", "evil")
	add(tar.TypeSymlink, "./top/up", "..", "")
	add(tar.TypeReg, "./top/up/sibling", "", "evil")
	add(tar.TypeLink, "./top/hard", "/etc/passwd", "")
	add(tar.TypeLink, "./top/hard2", "top/../../victim", "")
	add(tar.TypeChar, "./top/dev", "", "")
	tw.Close()
	return b.Bytes()
}

func TestExtractWritesNothingOutside(t *testing.T) {
	base := t.TempDir()
	dst := filepath.Join(base, "dst")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	x, err := extract(bytes.NewReader(hostileTar(t)), "top", dst, "top")
	if err != nil {
		t.Fatal(err)
	}
	defer x.discard()
	if err := x.commit(); err != nil {
		t.Fatal(err)
	}
	res := x.res
	// Only dst/top and what is under it exists, beside the parent's dst.
	var found []string
	filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
		rel, _ := filepath.Rel(base, p)
		found = append(found, rel)
		return nil
	})
	want := []string{".", "dst", "dst/top", "dst/top/ok", "dst/top/up", "dst/top/x"}
	if strings.Join(found, " ") != strings.Join(want, " ") {
		t.Errorf("files after extract: %v, want %v", found, want)
	}
	if l, _ := os.Readlink(filepath.Join(dst, "top/x")); l != "/etc" {
		t.Errorf("link x = %q, want /etc kept as a link", l)
	}
	reasons := map[string]string{}
	for _, s := range res.Skipped {
		reasons[s.Name] = s.Reason
	}
	for _, name := range []string{"./top/../escaped", "/abs", "other", "top/x/planted", "top/up/sibling", "top/hard", "top/hard2", "top/dev"} {
		if reasons[name] == "" {
			t.Errorf("%s was not reported as skipped (skipped: %v)", name, res.Skipped)
		}
	}
}

// tarOf writes entries: a name ending in "/" is a folder, "name>target" a
// hard link, "name=body" a file; a negative cut ends the stream that many
// bytes early, within the last file.
func tarOf(t *testing.T, cut int, entries ...string) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: e, Mode: 0o644}
		body := ""
		switch {
		case strings.HasSuffix(e, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		case strings.Contains(e, ">"):
			h.Typeflag = tar.TypeLink
			h.Name, h.Linkname, _ = strings.Cut(e, ">")
		case strings.Contains(e, "="):
			h.Name, body, _ = strings.Cut(e, "=")
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if cut < 0 {
		tw.Flush()
		return b.Bytes()[:b.Len()+cut]
	}
	tw.Close()
	return b.Bytes()
}

// extractWhole extracts stream as top into dst, and commits it.
func extractWhole(t *testing.T, stream []byte, top, dst string) *extraction {
	t.Helper()
	x, err := extract(bytes.NewReader(stream), top, dst, top)
	if err != nil {
		t.Fatal(err)
	}
	defer x.discard()
	if err := x.commit(); err != nil {
		t.Fatal(err)
	}
	return x
}

// writeMine writes files (relative to dir) as the user's own.
func writeMine(dir string, files []string) {
	for _, f := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("mine"), 0o644)
	}
}

// tree lists dir's entries, with the link count of each file.
func tree(t *testing.T, dir string) string {
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.Mode().IsRegular() {
			rel += fmt.Sprintf("(%d)", fi.Sys().(*syscall.Stat_t).Nlink)
		}
		out = append(out, rel)
		return nil
	})
	return strings.Join(out, " ")
}

// TestExtractHardLinksOnlyToWhatItMade: a hard link may name only a file the
// same archive made. A first entry linked to a file beside the target, and
// a later one linked to a file already in the folder copied into, are
// skipped; nothing is linked to a file the copy did not make.
func TestExtractHardLinksOnlyToWhatItMade(t *testing.T) {
	for _, c := range []struct {
		name, top string
		before    []string // files in dst first
		stream    []byte
		want      string // dst's tree after
		skipped   string
	}{
		{"a first entry linked to a file beside it", "rep", []string{"victim.txt"},
			tarOf(t, 0, "./rep>./victim.txt"), "victim.txt(1)", "rep"},
		{"a link to a file in the folder copied into", "d", []string{"d/secret"},
			tarOf(t, 0, "./d/", "./d/a=made", "./d/b>./d/a", "./d/x>./d/secret"), "d d/a(2) d/b(2) d/secret(1)", "d/x"},
		{"a link to a file of the same name made later", "d", nil,
			tarOf(t, 0, "./d/", "./d/x>./d/a", "./d/a=made"), "d d/a(1)", "d/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			writeMine(dst, c.before)
			x := extractWhole(t, c.stream, c.top, dst)
			if got := tree(t, dst); got != c.want {
				t.Errorf("after the copy: %s, want %s", got, c.want)
			}
			if len(x.res.Skipped) != 1 || x.res.Skipped[0].Name != c.skipped || !strings.Contains(x.res.Skipped[0].Reason, "hard link") {
				t.Errorf("skipped %v, want %s, a hard link", x.res.Skipped, c.skipped)
			}
		})
	}
}

// TestExtractCutShortLeavesNothing: a stream that ends within a file is an
// error, and nothing of it is left, into a new folder or an existing one;
// one that runs on far past the archive's end likewise.
func TestExtractCutShortLeavesNothing(t *testing.T) {
	cut := tarOf(t, -100, "./d/", "./d/a=whole", "./d/sub/", "./d/b="+strings.Repeat("x", 2000))
	long := append(tarOf(t, 0, "./d/", "./d/a=whole"), make([]byte, maxTrailer+1024)...)
	padded := append(tarOf(t, 0, "./d/", "./d/a=whole"), make([]byte, 10240)...)
	for _, c := range []struct {
		name   string
		before []string
		stream []byte
	}{
		{"cut short, into a new folder", nil, cut},
		{"cut short, into an existing folder", []string{"d/keep"}, cut},
		{"running on past its end", nil, long},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := t.TempDir()
			writeMine(dst, c.before)
			before := tree(t, dst)
			if x, err := extract(bytes.NewReader(c.stream), "d", dst, "d"); err == nil {
				x.discard()
				t.Fatal("no error")
			}
			if got := tree(t, dst); got != before {
				t.Errorf("after a failed copy: %q, want %q as before", got, before)
			}
		})
	}
	// A tar's padding after the end is read, not an error.
	dst := t.TempDir()
	extractWhole(t, padded, "d", dst)
	if got := tree(t, dst); got != "d d/a(1)" {
		t.Errorf("after a padded stream: %q", got)
	}
}

func TestCleanArchiveRefusesWhole(t *testing.T) {
	var out bytes.Buffer
	_, err := cleanArchive(bytes.NewReader(hostileTar(t)), &out)
	if err == nil || !strings.Contains(err.Error(), "nothing was copied") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	for _, name := range []string{`"./top/../escaped"`, `"/abs"`, `"top/x/planted"`, `"top/hard"`, `"top/dev"`} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the refusal does not name %s:\n%v", name, err)
		}
	}
}
