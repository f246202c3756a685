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
	v, _, _ := resolve(version, commit, readBuildInfo())
	return v
}

// String is the one line `litterbox --version` and `litterbox version` print:
// "litterbox VERSION (commit SHA, TIME)", the commit and its time only when
// known.
func String() string {
	return line(resolve(version, commit, readBuildInfo()))
}

// line renders what resolve found. A build that knows neither its version nor
// its commit says how to get one that does: go records the commit only when
// it builds in a clone (a git worktree's .git is a file, which go does not
// look for) with -buildvcs on, and this machine's GOFLAGS may turn it off.
func line(v, c, t string) string {
	switch {
	case c != "" && t != "":
		return "litterbox " + v + " (commit " + c + ", " + t + ")"
	case c != "":
		return "litterbox " + v + " (commit " + c + ")"
	case v == devel:
		return "litterbox " + v + " (no commit recorded: `make build` stamps it; see README.md, Install)"
	}
	return "litterbox " + v
}

// devel is the version of a build that knows none, as go itself says it.
const devel = "(devel)"

func readBuildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// resolve picks the stamped values first and fills what is missing from the
// build info: the module version, vcs.revision and its vcs.time (the time
// only when it is the time of the commit given). A revision built with
// uncommitted changes is marked "-dirty", as git describe --dirty does, so
// it is never taken for the commit itself.
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) (v, c, t string) {
	v, c = strings.TrimSpace(stampedVersion), strings.TrimSpace(stampedCommit)
	if bi != nil {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		var rev, tm string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				tm = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if c == "" && rev != "" {
			c = rev
			if modified {
				c += "-dirty"
			}
		}
		if c != "" && c == rev {
			t = tm
		}
	}
	if v == "" {
		v = devel
	}
	return strings.TrimSpace(v), strings.TrimSpace(c), strings.TrimSpace(t)
}
