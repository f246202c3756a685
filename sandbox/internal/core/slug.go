package core

import (
	"errors"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// repoSlug slugifies a repository's directory name for container names
// (litterbox-<repo>-<slug>). A name too long is cut to MaxNameLen; one with
// no letters or digits becomes "repo".
func repoSlug(base string) string {
	s, err := api.Slugify(base)
	if err == nil {
		return s
	}
	var ie *api.InvalidNameError
	if errors.As(err, &ie) && ie.Slug != "" {
		return strings.Trim(ie.Slug[:api.MaxNameLen], "-")
	}
	return "repo"
}
