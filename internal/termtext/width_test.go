package termtext

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// The text an agent used to draw a row of its own in the UI and in watch:
// characters that the UI measured at another width than the terminal drew.
var widthAttacks = map[string]string{
	"skin tones":      "👍🏽👍🏽👍🏽 ok",
	"zwj sequence":    "👩‍💻 👨‍👩‍👧",
	"flag":            "🇫🇷",
	"soft hyphen":     "a\u00adb",
	"prepended mark":  "\u0600\u0601\u0602x",
	"zero width":      "a\u200bb\u200cc\u200dd\ufeffe\u2060f",
	"line separator":  "a\u2028b\u2029c",
	"combining":       "e\u0301\u0301\u0301\u0301",
	"variation":       "☺\ufe0f",
	"hangul jamo":     "\u1100\u1161\u11a8",
	"tag characters":  "\U0001f3f4\U000e0067\U000e0062\U000e007f",
	"private use":     "\ue000\U000f0000",
	"unassigned":      "\U0003fffe\u0378",
	"thai am":         "\u0e01\u0e33",
	"hangul filler":   "\u3164\u115f",
	"interlinear":     "\ufff9x\ufffb",
	"nbsp and others": "a\u00a0b\u2003c\u3000d",
}

// TestEscapeWidth: escaped, every attack measures the same by the grapheme
// measure (lipgloss, the UI's) and by wcwidth's (a terminal's, cell by
// cell), and none of its width-changing characters is left.
func TestEscapeWidth(t *testing.T) {
	for name, s := range widthAttacks {
		got := Escape(s)
		if g, w := ansi.StringWidth(got), ansi.StringWidthWc(got); g != w {
			t.Errorf("%s: Escape(%q) = %q measures %d cells as graphemes, %d as wcwidth", name, s, got, g, w)
		}
		if got == s {
			t.Errorf("%s: Escape(%q) left it as it is", name, s)
		}
	}
	for in, want := range map[string]string{
		"👍🏽":           `👍\u{1f3fd}`,
		"a\u00adb":     `a\u{ad}b`,
		"\u0600x":      `\u{600}x`,
		"a\u200bb":     `a\u{200b}b`,
		"a\u2028b":     `a\u{2028}b`,
		"e\u0301":      `e\u{301}`,
		"👩‍💻":          `👩\u{200d}\u{1f4bb}`,
		"café 中文 ☕ ok": "café 中文 ☕ ok",
		"\u0301 alone": `\u{301} alone`,
		"\n\u0301":     `\n\u{301}`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEveryCodePoint: every code point, alone, after a letter and before
// a combining mark, escapes to text that both measures agree on. Plain's
// one check per code point is what makes this hold for characters that
// no list above names.
func TestEveryCodePoint(t *testing.T) {
	if testing.Short() {
		t.Skip("a million code points")
	}
	step := rune(1)
	if raceEnabled {
		step = 7
	}
	for r := rune(0x80); r <= utf8.MaxRune; r += step {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		c := string(r)
		for _, s := range []string{c, "x" + c, c + "\u0301", c + "\u200d" + c, "\n" + c} {
			got := Escape(s)
			if g, w := ansi.StringWidth(got), ansi.StringWidthWc(got); g != w {
				t.Fatalf("Escape(%q) = %q measures %d cells as graphemes, %d as wcwidth", s, got, g, w)
			}
		}
	}
}

// TestExpandTabs: tabs become the spaces a terminal would skip, counted in
// cells.
func TestExpandTabs(t *testing.T) {
	for in, want := range map[string]string{
		"a\tb":       "a       b",
		"\tx":        "        x",
		"12345678\t": "12345678        ",
		"中文\tx":      "中文    x",
		"none":       "none",
	} {
		if got := ExpandTabs(in); got != want {
			t.Errorf("ExpandTabs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestJSON: C1 and bidirectional controls, zero-width and joining
// characters leave as \u escapes; the value decodes the same.
func TestJSON(t *testing.T) {
	in := "csi \u009b31m rlo \u202egnp.exe zw a\u200bb ls \u2028 skin 👍🏽 café 中文"
	enc, err := json.Marshal(map[string]string{"args": in})
	if err != nil {
		t.Fatal(err)
	}
	got := JSON(enc)
	for _, raw := range []string{"\u009b", "\u202e", "\u200b", "\U0001f3fd"} {
		if strings.Contains(string(got), raw) {
			t.Errorf("JSON left %q raw: %s", raw, got)
		}
	}
	for _, esc := range []string{`\u009b`, `\u202e`, `\u200b`, `\ud83c\udffd`, "café 中文", "👍"} {
		if !strings.Contains(string(got), esc) {
			t.Errorf("JSON has no %s: %s", esc, got)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["args"] != in {
		t.Errorf("JSON decodes to %q (%v), want %q", back["args"], err, in)
	}
}
