package core

import (
	"errors"
	"testing"

	"github.com/litterbox-dev/litterbox/sandbox/api"
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
		{"../../etc/shadow", "", api.ErrBadPath},
		{"a/../../x", "", api.ErrBadPath},
		{"..", "", api.ErrBadPath},
		{"a\x00b", "", api.ErrBadPath},
		{"a\nb", "", api.ErrBadPath},
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
