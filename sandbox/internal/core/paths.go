package core

import (
	"path"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// MaxPathBytes is the longest path an agent may give, Linux's PATH_MAX.
const MaxPathBytes = 4096

// ContainerPath turns a path an agent gave into a clean absolute path in the
// container: absolute paths stay as they are, relative ones are taken from
// /src. A relative path that climbs out of /src ("../../etc/shadow") is
// refused rather than followed: an agent that means a file outside /src says
// so with an absolute path. Symlinks are resolved later, inside the
// container, never on the host.
func ContainerPath(p string) (string, error) {
	if err := CheckLen("path", p, MaxPathBytes); err != nil {
		return "", err
	}
	if strings.ContainsAny(p, "\x00\n") {
		return "", NewError(api.ErrBadPath, "Path %q holds a NUL or newline character; give a plain path, absolute in the sandbox or relative to %s.", p, api.Workdir)
	}
	if p == "" {
		return api.Workdir, nil
	}
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	joined := path.Join(api.Workdir, p)
	if joined != api.Workdir && !strings.HasPrefix(joined, api.Workdir+"/") {
		return "", NewError(api.ErrBadPath, "Path %q climbs out of %s; give a path inside it, or an absolute path in the sandbox.", p, api.Workdir)
	}
	return joined, nil
}

// Hidden reports whether any component of a slash-separated path starts with
// a dot. Hidden files (.env, .git) are kept from agents: they hold secrets
// and the repository's own machinery, which no tool of an agent needs.
func Hidden(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(c, ".") && c != "." && c != ".." {
			return true
		}
	}
	return false
}

// DisplayPath is how results show a container path: relative to /src when
// it is inside it, absolute otherwise. Agents can pass either form back.
func DisplayPath(p string) string {
	if p == api.Workdir {
		return "."
	}
	if rest, ok := strings.CutPrefix(p, api.Workdir+"/"); ok {
		return rest
	}
	return p
}

// AgentPath resolves p and refuses hidden paths, for the file tools.
func AgentPath(p string) (string, error) {
	abs, err := ContainerPath(p)
	if err != nil {
		return "", err
	}
	if Hidden(abs) {
		return "", hiddenError(p)
	}
	return abs, nil
}

func hiddenError(p string) error {
	return NewError(api.ErrHidden, "Path %q is hidden (a component starts with '.'). Hidden files are not available to agents; work with the project's other files.", p)
}
