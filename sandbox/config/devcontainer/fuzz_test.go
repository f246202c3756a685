package devcontainer

import (
	"bytes"
	"testing"
)

// FuzzParse: any file is read or refused, never a panic; Standardize keeps
// the length and every line break, so a line named in an error is the
// file's.
func FuzzParse(f *testing.F) {
	for _, s := range []string{goTemplate, dockerfileSample, `{"a": "/*", /* x */ "b": [1,],}`, "{\"a\": \"\\\"//\"}//", "/*"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := Standardize(data)
		if len(out) != len(data) || bytes.Count(out, []byte("\n")) != bytes.Count(data, []byte("\n")) {
			t.Fatalf("Standardize(%q) = %q", data, out)
		}
		_, _ = Parse(".devcontainer.json", data)
	})
}
