package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	built := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/litterbox-dev/litterbox", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123abcd"},
			{Key: "vcs.time", Value: "2026-11-26T07:57:59Z"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{
		Main:     debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name                string
		stampV, stampC      string
		bi                  *debug.BuildInfo
		wantV, wantC, wantT string
	}{
		{"stamped wins over build info", "v1.2.3", "feedface", built, "v1.2.3", "feedface", ""},
		{"go install: module version, revision and its time", "", "", built, "v0.3.0", "0123abcd", "2026-11-26T07:57:59Z"},
		{"only the version stamped", "v1.2.3", "", built, "v1.2.3", "0123abcd", "2026-11-26T07:57:59Z"},
		{"the stamped commit is the recorded one: its time", "v1.2.3", "0123abcd", built, "v1.2.3", "0123abcd", "2026-11-26T07:57:59Z"},
		{"uncommitted changes are marked", "", "", dirty, "(devel)", "0123abcd-dirty", ""},
		{"nothing known", "", "", nil, "(devel)", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, c, tm := resolve(tc.stampV, tc.stampC, tc.bi)
			if v != tc.wantV || c != tc.wantC || tm != tc.wantT {
				t.Errorf("resolve = %q, %q, %q; want %q, %q, %q", v, c, tm, tc.wantV, tc.wantC, tc.wantT)
			}
		})
	}
}

// The one line of --version: the commit and its time when known, and when
// nothing is, how to get a build that knows.
func TestLine(t *testing.T) {
	for _, tc := range []struct{ v, c, t, want string }{
		{"v1.2.3", "feedface", "", "litterbox v1.2.3 (commit feedface)"},
		{"(devel)", "0123abcd", "2026-11-26T07:57:59Z", "litterbox (devel) (commit 0123abcd, 2026-11-26T07:57:59Z)"},
		{"v1.2.3", "", "", "litterbox v1.2.3"},
		{"(devel)", "", "", "litterbox (devel) (no commit recorded: `make build` stamps it; see README.md, Install)"},
	} {
		if got := line(tc.v, tc.c, tc.t); got != tc.want {
			t.Errorf("line(%q, %q, %q) = %q, want %q", tc.v, tc.c, tc.t, got, tc.want)
		}
	}
}
