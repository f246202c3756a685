package core

import (
	"github.com/litterbox-dev/litterbox/provider"
)

// Handle is a sandbox resolved once for repeated tool calls: the MCP server
// caches it so each call costs one exec, not a lookup and an exec.
type Handle struct {
	Repo *Repo
	Slug string
	// Ref names the sandbox on its engine by id, so a same-named sandbox of
	// another repository can never be reached by accident.
	Ref provider.Ref
	// Base is the commit the sandbox started from.
	Base string
	// Image and Platform ("linux/arm64") are its labels: Platform is ""
	// when the engine did not hold the image at create (it pulled it).
	Image, Platform string
}

// HandleOf is the handle of sandbox container c, from its labels.
func HandleOf(r *Repo, c provider.Sandbox) *Handle {
	l := c.Labels
	return &Handle{Repo: r, Slug: l[LabelSlug], Ref: c.Ref, Base: l[LabelBase], Image: l[LabelImage], Platform: l[LabelPlatform]}
}
