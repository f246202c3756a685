package sandbox

import (
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
	} {
		if _, err := ParseDiff(diff); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDiff(%q) = %v, want %q", diff, err, want)
		}
	}
}
