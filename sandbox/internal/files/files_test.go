package files

import (
	"strings"
	"testing"
)

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
