package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestContainerPath(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      error
	}{
		{"", "/src", nil},
		{".", "/src", nil},
		{"a/b.txt", "/src/a/b.txt", nil},
		{"./a//b/../c", "/src/a/c", nil},
		{"/etc/passwd", "/etc/passwd", nil},
		{"/src/../etc", "/etc", nil},
		{"../../etc/shadow", "", ErrBadPath},
		{"a/../../x", "", ErrBadPath},
		{"..", "", ErrBadPath},
		{"a\x00b", "", ErrBadPath},
		{"a\nb", "", ErrBadPath},
	} {
		got, err := ContainerPath(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ContainerPath(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestHidden(t *testing.T) {
	for p, want := range map[string]bool{
		"/src/a.txt": false, "/src/.env": true, "/src/.git/config": true, "/src/a/.b/c": true,
		"/src/a.b": false, "/src/a./b": false, "a/..": false, "/": false,
	} {
		if got := Hidden(p); got != want {
			t.Errorf("Hidden(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDisplayPath(t *testing.T) {
	for in, want := range map[string]string{"/src": ".", "/src/a/b": "a/b", "/srcx": "/srcx", "/tmp/x": "/tmp/x"} {
		if got := DisplayPath(in); got != want {
			t.Errorf("DisplayPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSliceLines(t *testing.T) {
	for _, tc := range []struct {
		text          string
		offset, limit int
		want          string
		total, n      int
	}{
		{"", 0, 0, "", 0, 0},
		{"a\nb\nc\n", 0, 0, "a\nb\nc\n", 3, 3},
		{"a\nb\nc", 0, 0, "a\nb\nc", 3, 3},
		{"a\nb\nc", 1, 1, "b\n", 3, 1},
		{"a\nb\nc", 2, 5, "c", 3, 1},
		{"a\nb\nc\n", 3, 0, "", 3, 0},
		{"a\r\nb\r\n", 1, 0, "b\r\n", 2, 1},
		{"\n\n", 1, 1, "\n", 2, 1},
	} {
		got, total, n := SliceLines(tc.text, tc.offset, tc.limit)
		if got != tc.want || total != tc.total || n != tc.n {
			t.Errorf("SliceLines(%q, %d, %d) = %q, %d, %d; want %q, %d, %d", tc.text, tc.offset, tc.limit, got, total, n, tc.want, tc.total, tc.n)
		}
	}
}

func TestGrepLine(t *testing.T) {
	if got := grepLine("/src/a/b.go:12:func X() {}"); got != "a/b.go:12:func X() {}" {
		t.Errorf("got %q", got)
	}
	if got := grepLine("/src/bin:3:a\x00b"); got != "bin:3:(binary line)" {
		t.Errorf("got %q", got)
	}
	long := grepLine("/src/x:1:" + strings.Repeat("é", 400))
	if !strings.HasSuffix(long, "more bytes]") || len(long) > MaxGrepLine+40 {
		t.Errorf("long line not cut: %d bytes", len(long))
	}
}
