package git

import "testing"

func TestParseCatFileBlob(t *testing.T) {
	body, ok, err := ParseCatFileBlob([]byte("abc123 blob 12\n[ports]\nx=1\n\n"), "f")
	if err != nil || !ok || string(body) != "[ports]\nx=1\n" {
		t.Errorf("blob: %q %v %v", body, ok, err)
	}
	if _, ok, err := ParseCatFileBlob([]byte("HEAD:.litterbox.toml missing\n"), "f"); ok || err != nil {
		t.Errorf("missing: %v %v", ok, err)
	}
	if _, _, err := ParseCatFileBlob([]byte("abc123 tree 30\n..."), "f"); err == nil {
		t.Error("a tree was accepted")
	}
}
