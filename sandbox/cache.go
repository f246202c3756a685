package sandbox

import (
	"context"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/cache"
)

// Caches lists r's shared cache volumes (see cache.Caches.List).
func (s *Sandboxes) Caches(ctx context.Context, r *api.Repo) ([]api.CacheInfo, error) {
	return cache.New(s.c).List(ctx, r)
}

// ClearCaches empties r's shared caches of names, all when none (see
// cache.Caches.Clear).
func (s *Sandboxes) ClearCaches(ctx context.Context, r *api.Repo, names []string) ([]api.CacheInfo, error) {
	return cache.New(s.c).Clear(ctx, r, names)
}
