package sandbox

import "context"

// Handle is a sandbox resolved once for repeated tool calls: the MCP server
// caches it so each call costs one docker exec, not a lookup and an exec.
type Handle struct {
	Repo *Repo
	Slug string
	// Container is the container's id, so a same-named container of another
	// repository can never be reached by accident.
	Container string
	// Base is the commit the sandbox started from.
	Base string
}

// Handle resolves a running sandbox. Missing, paused and stopped sandboxes
// are errors that say what to do.
func (s *Service) Handle(ctx context.Context, r *Repo, name string) (*Handle, error) {
	sb, err := s.Running(ctx, r, name)
	if err != nil {
		return nil, err
	}
	return &Handle{Repo: r, Slug: sb.Name, Container: sb.Container, Base: sb.Base}, nil
}
