package core

import (
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// HandleOf is the handle of sandbox container c, from its labels.
func HandleOf(r *api.Repo, c provider.Sandbox) *api.Handle {
	l := c.Labels
	return &api.Handle{Repo: r, Slug: l[api.LabelSlug], Ref: c.Ref, Base: l[api.LabelBase], Image: l[api.LabelImage], Platform: l[api.LabelPlatform]}
}
