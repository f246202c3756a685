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
			{Key: "vcs.modified", Value: "false"},
		},
	}
	dirty := &debug.BuildInfo{
		Main:     debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}},
	}
	for _, tc := range []struct {
		name           string
		stampV, stampC string
		bi             *debug.BuildInfo
		wantV, wantC   string
	}{
		{"stamped wins over build info", "v1.2.3", "feedface", built, "v1.2.3", "feedface"},
		{"go install: module version and revision", "", "", built, "v0.3.0", "0123abcd"},
		{"only the version stamped", "v1.2.3", "", built, "v1.2.3", "0123abcd"},
		{"uncommitted changes are marked", "", "", dirty, "(devel)", "0123abcd-dirty"},
		{"nothing known", "", "", nil, "(devel)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, c := resolve(tc.stampV, tc.stampC, tc.bi)
			if v != tc.wantV || c != tc.wantC {
				t.Errorf("resolve = %q, %q; want %q, %q", v, c, tc.wantV, tc.wantC)
			}
		})
	}
}
