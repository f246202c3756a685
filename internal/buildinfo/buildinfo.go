// Package buildinfo says which build of litterbox is running: the version and
// commit that `make build` and `make release` stamp in with -ldflags -X, or,
// for a plain `go build` or `go install`, what the Go toolchain recorded in the
// binary (the module version and the VCS revision).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Set with -ldflags "-X github.com/litterbox-dev/litterbox/internal/buildinfo.version=v1.2.3
// -X github.com/litterbox-dev/litterbox/internal/buildinfo.commit=<sha>".
// They are plain variables because -X can set only those.
var (
	version string
	commit  string
)

// Version is the version of this build alone, as an MCP server's
// serverInfo.version shows it.
func Version() string {
	v, _ := resolve(version, commit, readBuildInfo())
	return v
}

// String is the one line `litterbox --version` and `litterbox version` print:
// "litterbox VERSION (commit SHA)", the commit part only when known.
func String() string {
	v, c := resolve(version, commit, readBuildInfo())
	if c == "" {
		return "litterbox " + v
	}
	return "litterbox " + v + " (commit " + c + ")"
}

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// resolve picks the stamped values first and fills what is missing from the
// build info; a revision built with uncommitted changes is marked "-dirty",
// as git describe --dirty does, so it is never taken for the commit itself.
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) (v, c string) {
	v, c = stampedVersion, stampedCommit
	if bi != nil {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		if c == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if c != "" && modified {
				c += "-dirty"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	return strings.TrimSpace(v), strings.TrimSpace(c)
}
