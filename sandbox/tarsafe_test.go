package sandbox

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
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
	res, err := extract(bytes.NewReader(hostileTar(t)), "top", dst, "top")
	if err != nil {
		t.Fatal(err)
	}
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
