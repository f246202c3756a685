package commands

import (
	"bytes"
	"strings"
	"testing"
)

// TestTermDiff: what an agent wrote (a title, the alternate screen, a
// clear, C1 and bidi controls) reaches the terminal escaped, whatever the
// writes' boundaries, a character cut by a write included; colour is the
// only escape sequence written, and only when on; a line of megabytes is
// written as it comes.
func TestTermDiff(t *testing.T) {
	in := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+\x1b]0;pwned\x07\x1b[?1049h\x1b[2J\u009b31m\u202eé€\n ctx\tok\n"
	want := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n" + `+\033]0;pwned\a\033[?1049h\033[2J\302\23331m\342\200\256é€` + "\n ctx\tok\n"
	for _, step := range []int{1, 2, 3, 7, len(in)} {
		for _, color := range []bool{false, true} {
			var out bytes.Buffer
			td := &termDiff{w: &out, color: color}
			for i := 0; i < len(in); i += step {
				if _, err := td.Write([]byte(in[i:min(i+step, len(in))])); err != nil {
					t.Fatal(err)
				}
			}
			if err := td.Close(); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if color {
				for _, sgr := range []string{"\x1b[1m", "\x1b[36m", "\x1b[32m", "\x1b[31m", "\x1b[m"} {
					got = strings.ReplaceAll(got, sgr, "")
				}
				if !strings.Contains(out.String(), "\x1b[32m+\\033]0;pwned") {
					t.Errorf("step %d: the added line is not green: %q", step, out.String())
				}
			}
			if got != want {
				t.Errorf("step %d, colour %v:\n got %q\nwant %q", step, color, got, want)
			}
		}
	}

	// a long line is written in pieces, never held whole
	var out bytes.Buffer
	td := &termDiff{w: &out}
	long := strings.Repeat("é", 3*termChunk)
	td.Write([]byte("+" + long))
	if out.Len() == 0 || len(td.line) >= termChunk {
		t.Errorf("a line of %d bytes was held (%d written, %d held)", len(long), out.Len(), len(td.line))
	}
	td.Write([]byte("\n"))
	td.Close()
	if out.String() != "+"+long+"\n" {
		t.Errorf("the long line came out changed: %d bytes, want %d", out.Len(), len(long)+2)
	}
}
