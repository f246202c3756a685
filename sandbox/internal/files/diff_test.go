package files

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestApplyDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, diff, want, err string
		create, delete             bool
	}{
		{
			name: "modify",
			old:  "a\nb\nc\n",
			diff: "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			want: "a\nB\nc\n",
		},
		{
			name: "offset: hunk sits lower than its header says",
			old:  "x\ny\na\nb\nc\n",
			diff: "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			want: "x\ny\na\nB\nc\n",
		},
		{
			name: "two hunks",
			old:  "1\n2\n3\n4\n5\n6\n7\n8\n",
			diff: "@@ -1,2 +1,2 @@\n-1\n+one\n 2\n@@ -7,2 +7,3 @@\n 7\n+7.5\n 8\n",
			want: "one\n2\n3\n4\n5\n6\n7\n7.5\n8\n",
		},
		{
			name: "create",
			diff: "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+new\n+file\n",
			want: "new\nfile\n", create: true,
		},
		{
			name: "delete",
			old:  "gone\n",
			diff: "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
			want: "", delete: true,
		},
		{
			name: "no newline at end, both sides",
			old:  "a\nb",
			diff: "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
			want: "a\nc",
		},
		{
			name: "add a newline at the end",
			old:  "a",
			diff: "@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n",
			want: "a\n",
		},
		{
			name: "CRLF lines match exactly",
			old:  "a\r\nb\r\n",
			diff: "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n",
			want: "a\r\nc\r\n",
		},
		{
			name: "insert after line",
			old:  "a\nb\n",
			diff: "@@ -1,0 +2 @@\n+between\n",
			want: "a\nbetween\nb\n",
		},
		{
			name: "stripped blank context line",
			old:  "a\n\nb\n",
			diff: "@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n",
			want: "a\n\nB\n",
		},
		{
			name: "context does not match",
			old:  "a\nb\nc\n",
			diff: "@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n",
			err:  `hunk #1 (@@ -1,3 +1,3 @@) does not match the file: its context/removed lines starting with "a" were not found`,
		},
		{
			name: "second hunk fails",
			old:  "a\nb\n",
			diff: "@@ -1 +1 @@\n-a\n+A\n@@ -2 +2 @@\n-zzz\n+Z\n",
			err:  "hunk #2",
		},
		{
			name: "delete leaves lines",
			old:  "a\nb\n",
			diff: "--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
			err:  "leaves lines", delete: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDiff(tc.diff)
			if err != nil {
				t.Fatalf("ParseDiff: %v", err)
			}
			if d.Create != tc.create || d.Delete != tc.delete {
				t.Errorf("create, delete = %v, %v; want %v, %v", d.Create, d.Delete, tc.create, tc.delete)
			}
			got, err := d.Apply(tc.old)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Apply error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got != tc.want {
				t.Errorf("Apply = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseDiffErrors(t *testing.T) {
	for diff, want := range map[string]string{
		"":                 "no hunks",
		"hello":            "no hunks",
		"@@ bad @@\n":      "bad hunk header",
		"@@ -1 +1 @@\nx\n": "not part of a hunk",
		"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n": "more than one file",
		// a marker with no line before it to mark: git ignores it, and the
		// line the agent meant to mark is then read as ending in a newline
		"@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n":                      `line 2: "\ No newline at end of file" starts hunk #1`,
		"@@ -1 +1 @@\n-a\n+b\n@@ -3 +3 @@\n\\ No newline at end of file\n-c\n+d\n": `line 5: "\ No newline at end of file" starts hunk #2`,
		// a line starting with a backslash that is no such marker (git: "corrupt patch")
		"@@ -1,2 +1,2 @@\n-a\n\\x\n+b\n c\n": `line 3 of the diff starts with a backslash`,
	} {
		if _, err := ParseDiff(diff); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDiff(%q) = %v, want %q", diff, err, want)
		}
	}
}

// TestParseDiffCounts: a hunk's header counts its lines; a body that ends
// early, or runs past its counts with more hunk lines, is refused, naming
// the hunk, before anything is applied.
func TestParseDiffCounts(t *testing.T) {
	for diff, want := range map[string]string{
		// the body has one old line more than the header says
		"@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n gamma\n": `hunk #1 (@@ -1,2 +1,2 @@) has more lines than its header counts`,
		// an added line past the counts
		"@@ -1,2 +1,2 @@\n a\n-b\n+B\n+C\n": `hunk #1 (@@ -1,2 +1,2 @@) has more lines`,
		// the body ends before its counts, at the next hunk
		"@@ -1,3 +1,3 @@\n a\n-b\n+B\n@@ -5 +5 @@\n-e\n+E\n": `hunk #1 (@@ -1,3 +1,3 @@) ends after 2 old and 2 new lines; its header counts 3 and 3`,
		// and at the end of the diff
		"@@ -1,2 +1,3 @@\n a\n+b\n": `hunk #1 (@@ -1,2 +1,3 @@) ends after 1 old and 2 new lines; its header counts 2 and 3`,
		// the second hunk is the bad one
		"@@ -1 +1 @@\n-a\n+A\n@@ -3,2 +3,2 @@\n-c\n+C\n": `hunk #2 (@@ -3,2 +3,2 @@) ends after 1 old and 1 new lines`,
	} {
		if _, err := ParseDiff(diff); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDiff(%q) = %v, want %q", diff, err, want)
		}
	}
	// what git puts after a hunk is fine: "\ No newline", a signature
	for _, diff := range []string{
		"@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
		"@@ -1 +1 @@\n-a\n+b\n-- \n2.39.5\n\n",
	} {
		if _, err := ParseDiff(diff); err != nil {
			t.Errorf("ParseDiff(%q): %v", diff, err)
		}
	}
}

// TestPatchMatchesGitApply compares Apply with git apply on the diffs git
// itself makes of random edits, as made and with their counts or bodies
// damaged: when git applies a diff, so does Apply, with the same result;
// when git refuses one, so does Apply. Two differences are deliberate: git
// reads a hunk only as far as its counts and ignores the lines after, where
// Apply refuses a hunk that has more lines than it counts; and git ignores
// a "\ No newline at end of file" that opens a hunk (it marks no line, so
// the line meant is read as ending in a newline), where Apply refuses it.
func TestPatchMatchesGitApply(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	dir := t.TempDir()
	words := []string{"a", "b", "c", "d", "", "e e", "f\t"}
	randText := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.IntN(len(words))] + "\n")
		}
		s := b.String()
		if rng.IntN(4) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	edit := func(old string) string {
		lines := strings.SplitAfter(old, "\n")
		for k := rng.IntN(4) + 1; k > 0; k-- {
			i := rng.IntN(len(lines) + 1)
			switch rng.IntN(3) {
			case 0:
				lines = append(lines[:i], append([]string{words[rng.IntN(len(words))] + "\n"}, lines[i:]...)...)
			case 1:
				if i < len(lines) {
					lines = append(lines[:i], lines[i+1:]...)
				}
			default:
				if i < len(lines) {
					lines[i] = "x" + lines[i]
				}
			}
		}
		return strings.Join(lines, "")
	}
	gitDiff := func(old, new string, context int) string {
		os.WriteFile(filepath.Join(dir, "old"), []byte(old), 0o644)
		os.WriteFile(filepath.Join(dir, "new"), []byte(new), 0o644)
		out, _ := exec.Command("git", "-C", dir, "diff", "--no-index", "--no-color", fmt.Sprintf("-U%d", context), "--", "old", "new").Output()
		return string(out)
	}
	gitApply := func(old, diff string) (string, bool) {
		os.WriteFile(filepath.Join(dir, "f"), []byte(old), 0o644)
		diff = strings.ReplaceAll(strings.ReplaceAll(diff, "a/old", "a/f"), "b/new", "b/f")
		cmd := exec.Command("git", "-C", dir, "apply", "--whitespace=nowarn", "-")
		cmd.Stdin = strings.NewReader(diff)
		if cmd.Run() != nil {
			return "", false
		}
		data, _ := os.ReadFile(filepath.Join(dir, "f"))
		return string(data), true
	}
	applied, refused := 0, 0
	for n := 0; n < 200; n++ {
		old := randText(rng.IntN(12) + 1)
		new := edit(old)
		if new == old {
			continue
		}
		diff := gitDiff(old, new, rng.IntN(3)+1)
		longer := false
		marker := false
		switch rng.IntN(5) {
		case 1: // a count off by one
			diff, longer = damageCount(diff, rng)
		case 2: // a body line dropped or doubled
			diff, longer = damageBody(diff, rng)
		case 3: // "\ No newline at end of file" opening a hunk
			diff, marker = markerFirst(diff, rng)
		}
		want, gitOK := gitApply(old, diff)
		var got string
		d, err := ParseDiff(diff)
		if err == nil {
			got, err = d.Apply(old)
		}
		switch {
		case gitOK && err == nil && got != want:
			t.Fatalf("git apply and Apply differ on\n%s\nto %q: git %q, Apply %q", diff, old, want, got)
		case marker && (err == nil || !strings.Contains(err.Error(), "starts hunk")):
			t.Fatalf("a hunk opens with a marker in\n%s\nApply: %q, %v", diff, got, err)
		case gitOK && err != nil && !longer && !marker:
			t.Fatalf("git applies\n%s\nto %q, Apply refuses: %v", diff, old, err)
		case !gitOK && err == nil:
			t.Fatalf("git refuses\n%s\nfor %q, Apply applies it: %q", diff, old, got)
		}
		if err == nil {
			applied++
		} else {
			refused++
		}
	}
	t.Logf("%d applied, %d refused", applied, refused)
}

// damageCount changes one count of one hunk header by one; longer says the
// body now runs past its counts.
func damageCount(diff string, rng *rand.Rand) (string, bool) {
	lines, i := randomHeader(diff, rng)
	if i < 0 {
		return diff, false
	}
	m := hunkHeader().FindStringSubmatch(lines[i])
	oldN, newN := countOr1(m[2]), countOr1(m[4])
	delta := 1
	if rng.IntN(2) == 0 {
		delta = -1
	}
	if rng.IntN(2) == 0 {
		oldN += delta
	} else {
		newN += delta
	}
	if oldN < 0 || newN < 0 {
		return diff, false
	}
	lines[i] = fmt.Sprintf("@@ -%s,%d +%s,%d @@", m[1], oldN, m[3], newN)
	return strings.Join(lines, "\n"), delta < 0
}

// damageBody drops or doubles one line of one hunk's body.
func damageBody(diff string, rng *rand.Rand) (string, bool) {
	lines := strings.Split(diff, "\n")
	var body []int
	in := false
	for i, l := range lines {
		switch {
		case hunkHeader().MatchString(l):
			in = true
		case in && l != "" && strings.ContainsRune(" +-", rune(l[0])):
			body = append(body, i)
		}
	}
	if len(body) == 0 {
		return diff, false
	}
	i := body[rng.IntN(len(body))]
	if rng.IntN(2) == 0 {
		return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n"), false
	}
	return strings.Join(append(lines[:i+1:i+1], lines[i:]...), "\n"), true
}

// markerFirst puts "\ No newline at end of file" right after one hunk's
// header; ok is false when the diff has no hunk.
func markerFirst(diff string, rng *rand.Rand) (string, bool) {
	lines, i := randomHeader(diff, rng)
	if i < 0 {
		return diff, false
	}
	i++
	return strings.Join(append(lines[:i:i], append([]string{`\ No newline at end of file`}, lines[i:]...)...), "\n"), true
}

// randomHeader splits diff into lines and picks the index of one hunk
// header among them, -1 when there is none.
func randomHeader(diff string, rng *rand.Rand) ([]string, int) {
	lines := strings.Split(diff, "\n")
	var heads []int
	for i, l := range lines {
		if hunkHeader().MatchString(l) {
			heads = append(heads, i)
		}
	}
	if len(heads) == 0 {
		return lines, -1
	}
	return lines, heads[rng.IntN(len(heads))]
}

func countOr1(s string) int {
	if s == "" {
		return 1
	}
	n, _ := strconv.Atoi(s)
	return n
}

// FuzzParseDiff: no diff makes the parser or Apply panic, and a parsed
// hunk's body always holds the lines its header counts.
func FuzzParseDiff(f *testing.F) {
	f.Add("@@ -1,2 +1,2 @@\n a\n-b\n+B\n", "a\nb\n")
	f.Add("--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n", "")
	f.Add("@@ -1 +1 @@\n-a\n+b\n-- \n2.39\n", "a\n")
	f.Fuzz(func(t *testing.T, diff, old string) {
		d, err := ParseDiff(diff)
		if err != nil {
			return
		}
		for _, h := range d.Hunks {
			oldN, newN := 0, 0
			for _, l := range h.Lines {
				if l.Op != '+' {
					oldN++
				}
				if l.Op != '-' {
					newN++
				}
			}
			if oldN != h.OldLines || newN != h.NewLines {
				t.Fatalf("hunk %s holds %d old and %d new lines", h.Header, oldN, newN)
			}
		}
		_, _ = d.Apply(old)
	})
}
