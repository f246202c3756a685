package commands

import "testing"

func TestRepoFlag(t *testing.T) {
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"pause"}, "."},
		{[]string{"--repo", "/r", "pause"}, "/r"},
		{[]string{"pause", "--repo=/r"}, "/r"},
		{[]string{"--repo", "/a", "pause", "--repo", "/b"}, "/b"},
		{[]string{"pause", "--repo"}, "."}, // its value is the word being typed
	} {
		if got := repoFlag(tc.words, "."); got != tc.want {
			t.Errorf("repoFlag(%q) = %q, want %q", tc.words, got, tc.want)
		}
	}
}
