package gateway

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// chunked reads r in the chunk sizes of sizes, in turn (a size of 0 reads
// nothing: a reader may return 0, nil), so a pattern is split across reads
// wherever a test wants it.
type chunked struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	n := 1
	if len(c.sizes) > 0 {
		n = c.sizes[c.i%len(c.sizes)]
		c.i++
	}
	if n > len(p) {
		n = len(p)
	}
	return c.r.Read(p[:n])
}

func scrubAll(t *testing.T, r io.Reader, pairs ...string) string {
	t.Helper()
	s, err := NewScrubber(r, pairs...)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := io.Copy(&out, iotest.OneByteReader(s)); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestScrubber: a value the server echoes is replaced by its placeholder
// wherever it is, split across reads in any way.
func TestScrubber(t *testing.T) {
	const value, ph = "ghp_REALTOKEN1234", "litterbox-secret-github-abcdef"
	for _, tc := range []struct {
		name, in, want string
		sizes          []int
	}{
		{"whole", `{"token":"` + value + `"}`, `{"token":"` + ph + `"}`, []int{1 << 20}},
		{"a byte at a time", `x` + value + `y` + value, `x` + ph + `y` + ph, []int{1}},
		{"split in the middle", "aaaa" + value + "bbbb", "aaaa" + ph + "bbbb", []int{7, 3, 100}},
		{"empty reads between", value + value, ph + ph, []int{0, 2, 0, 5}},
		{"a prefix that is not the value", "ghp_REALTOKEN123" + "X" + value, "ghp_REALTOKEN123X" + ph, []int{5}},
		{"a prefix at the end", "tail ghp_REAL", "tail ghp_REAL", []int{3}},
		{"overlapping starts", "ghp_ghp_REALTOKEN1234", "ghp_" + ph, []int{1}},
		{"nothing", "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scrubAll(t, &chunked{r: strings.NewReader(tc.in), sizes: tc.sizes}, value, ph)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// Several values: the leftmost match wins, then the longest, in any
	// order of the pairs.
	for _, pairs := range [][]string{{"ABC", "3", "AB", "2"}, {"AB", "2", "ABC", "3"}} {
		if got := scrubAll(t, strings.NewReader("xx AB ABC"), pairs...); got != "xx 2 3" {
			t.Errorf("several %q: got %q, want %q", pairs, got, "xx 2 3")
		}
	}
	if _, err := NewScrubber(strings.NewReader(""), "", "x"); err == nil {
		t.Error("an empty pattern was taken")
	}
	if _, err := NewScrubber(strings.NewReader(""), "x"); err == nil {
		t.Error("an odd number of strings was taken")
	}
}

// TestScrubberErrors: an error of the reader comes after what was read
// before it, with any prefix held back let out.
func TestScrubberErrors(t *testing.T) {
	s, _ := NewScrubber(io.MultiReader(strings.NewReader("abc ghp"), iotest.ErrReader(io.ErrUnexpectedEOF)), "ghp_X", "P")
	b, err := io.ReadAll(s)
	if string(b) != "abc ghp" || err != io.ErrUnexpectedEOF {
		t.Errorf("got %q, %v", b, err)
	}
}

// FuzzScrubber checks the streaming scrubber against strings.Replacer on
// the whole input, for any patterns and any split of the input into reads.
// Replacer takes the first pair at a position, the scrubber the longest:
// the reference is given the longer pattern first.
func FuzzScrubber(f *testing.F) {
	f.Add("hello TOKEN world TOK", "TOKEN", "ph", "TOK", "x", []byte{1, 2, 3})
	f.Add("hello TOKEN world TOK", "TOK", "x", "TOKEN", "ph", []byte{2})
	f.Add("aaaa", "aa", "b", "a", "c", []byte{1})
	f.Add("abababab", "abab", "X", "ba", "Y", []byte{3, 0, 2})
	f.Fuzz(func(t *testing.T, in, p1, r1, p2, r2 string, sizes []byte) {
		if p1 == "" || p2 == "" || len(p1) > 64 || len(p2) > 64 {
			t.Skip()
		}
		ref := []string{p1, r1, p2, r2}
		if len(p2) > len(p1) {
			ref = []string{p2, r2, p1, r1}
		}
		want := strings.NewReplacer(ref...).Replace(in)
		var sz []int
		for _, b := range sizes {
			sz = append(sz, int(b%17))
		}
		if len(sz) > 0 && func() bool {
			for _, n := range sz {
				if n > 0 {
					return false
				}
			}
			return true
		}() {
			sz = append(sz, 1)
		}
		s, err := NewScrubber(&chunked{r: strings.NewReader(in), sizes: sz}, p1, r1, p2, r2)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("in %q, pairs %q %q %q %q, sizes %v: got %q, want %q", in, p1, r1, p2, r2, sz, got, want)
		}
		if r := ReplaceAll(in, p1, r1, p2, r2); r != want {
			t.Errorf("ReplaceAll: got %q, want %q", r, want)
		}
	})
}

// TestScrubText: a value in any ASCII case, and quoted as Go's %q quotes
// it, is replaced; text around it is left as it is.
func TestScrubText(t *testing.T) {
	pairs := []string{`tok"en\é-VALUE`, "placeholder-x"}
	for in, want := range map[string]string{
		`a tok"en\é-VALUE b`:           "a placeholder-x b",
		`X-Leak-Tok"en\é-Value: 1`:     "X-Leak-placeholder-x: 1",
		`malformed "tok\"en\\é-VALUE"`: `malformed "placeholder-x"`,
		"nothing here \xff":            "nothing here \xff",
	} {
		if got := ScrubText(in, pairs...); got != want {
			t.Errorf("ScrubText(%q) = %q, want %q", in, got, want)
		}
	}
}
