package scanner

import "testing"

func TestIgnore(t *testing.T) {
	root := parseIgnore("", []byte("# comment\n*.log\n/build/\nnode_modules/\n!keep.log\ndocs/**/*.tmp\n**/cache\nfoo/bar\n\\#hash\n"))
	sub := parseIgnore("src", []byte("gen/\n!important.tmp\n*.tmp\n"))
	ig := (&ignorer{}).with(root).with(sub)
	cases := []struct {
		path string
		dir  bool
		want bool
	}{
		{"a.log", false, true},
		{"deep/x/a.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"build", false, false},    // dir-only rule
		{"src/build", true, false}, // anchored to root
		{"node_modules", true, true},
		{"x/node_modules", true, true},
		{"docs/a/b/c.tmp", false, true},
		{"docs/c.tmp", false, true},
		{"cache", true, true},
		{"a/b/cache", false, true},
		{"foo/bar", false, true},
		{"x/foo/bar", false, false},
		{"#hash", false, true},
		{"src/gen", true, true},
		{"gen", true, false},
		{"src/x.tmp", false, true},
		{"src/important.tmp", false, true}, // later *.tmp wins over the negation
		{"main.go", false, false},
	}
	for _, c := range cases {
		if got := ig.ignored(c.path, c.dir); got != c.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", c.path, c.dir, got, c.want)
		}
	}
}
