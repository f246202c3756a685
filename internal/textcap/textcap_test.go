package textcap

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLenBoundsJSON: Len never weighs less than encoding/json writes of
// the text made valid.
func TestLenBoundsJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "tab\tnl\n", "\x00\x01\x1b[2J", "<a href=\"x\">&</a>", "caf\xc3\xa9 \xff\xfe", "\u2028\u2029", strings.Repeat("\x00", 100)} {
		v, _ := Valid(s)
		enc, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, min := Len(s), len(enc)-2; got < min {
			t.Errorf("Len(%q) = %d, but JSON writes %d bytes", s, got, min)
		}
	}
}

func TestPrefixSuffix(t *testing.T) {
	s := "ab\x00cé"
	if n := Prefix(s, 2); n != 2 {
		t.Errorf("Prefix 2 = %d", n)
	}
	if n := Prefix(s, 7); n != 2 { // the NUL costs 6
		t.Errorf("Prefix 7 = %d", n)
	}
	if n := Prefix(s, 100); n != len(s) {
		t.Errorf("Prefix 100 = %d", n)
	}
	if n := Suffix(s, 2); n != len(s)-2 { // é, whole
		t.Errorf("Suffix 2 = %d", n)
	}
	if n := Suffix(s, 1); n != len(s) { // never half a rune
		t.Errorf("Suffix 1 = %d", n)
	}
}
