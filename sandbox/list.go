package sandbox

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/git"
)

var labelKeys = []string{LabelSlug, LabelRepo, LabelGitDir, LabelBranch, LabelBase}

// containers lists sandbox containers with one docker ps: those of r, or of
// every repository when r is nil. slug narrows it to one sandbox. Extra labels
// (LITTERBOX_LABELS) narrow every lookup too: they make a namespace, so a test
// suite's `pause --all-repos` never reaches a user's sandboxes, nor the
// reverse.
func (s *Service) containers(ctx context.Context, r *Repo, slug string) ([]docker.Container, error) {
	filters := []string{LabelSlug}
	if slug != "" {
		filters = []string{LabelSlug + "=" + slug}
	}
	if r != nil {
		filters = append(filters, LabelGitDir+"="+r.Git.CommonDir)
	}
	filters = append(filters, docker.SortedLabels(s.ExtraLabels)...)
	return s.Docker.PS(ctx, filters, labelKeys)
}

// List returns the sandboxes of r, or of every repository when r is nil, from
// one docker ps and one git for-each-ref per repository. Branches without a
// container and containers without a branch are listed too, as orphans.
// Across repositories, a repository whose sandboxes all lost their containers
// is not found: nothing else records it.
func (s *Service) List(ctx context.Context, r *Repo) ([]Sandbox, error) {
	var (
		cts    []docker.Container
		psErr  error
		own    map[string]string
		refErr error
		wg     sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		cts, psErr = s.containers(ctx, r, "")
	}()
	if r != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own, refErr = r.Git.Refs(ctx, "refs/heads/"+BranchPrefix)
		}()
	}
	wg.Wait()
	if psErr != nil {
		return nil, psErr
	}
	if refErr != nil {
		return nil, refErr
	}
	return s.assemble(ctx, r, cts, own)
}

// ListDir lists the sandboxes of the repository containing dir. Finding the
// repository (git) runs beside the one docker ps, which asks for every
// sandbox and is filtered here: list costs about one docker ps.
func (s *Service) ListDir(ctx context.Context, dir string) ([]Sandbox, error) {
	var (
		r      *Repo
		repErr error
		own    map[string]string
		cts    []docker.Container
		psErr  error
		wg     sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if r, repErr = s.OpenRepo(ctx, dir); repErr == nil {
			own, repErr = r.Git.Refs(ctx, "refs/heads/"+BranchPrefix)
		}
	}()
	go func() {
		defer wg.Done()
		cts, psErr = s.containers(ctx, nil, "")
	}()
	wg.Wait()
	if repErr != nil {
		return nil, repErr
	}
	if psErr != nil {
		return nil, psErr
	}
	mine := cts[:0]
	for _, c := range cts {
		if c.Labels[LabelGitDir] == r.Git.CommonDir {
			mine = append(mine, c)
		}
	}
	return s.assemble(ctx, r, mine, own)
}

// assemble joins containers and branches into list rows; own are r's
// branches (r may be nil when listing every repository).
func (s *Service) assemble(ctx context.Context, r *Repo, cts []docker.Container, own map[string]string) ([]Sandbox, error) {
	var wg sync.WaitGroup
	// Branches of every repository that has a sandbox container.
	type repoRefs struct {
		root string
		refs map[string]string
	}
	repos := map[string]*repoRefs{} // by git dir
	if r != nil {
		repos[r.Git.CommonDir] = &repoRefs{root: r.Root(), refs: own}
	}
	for _, c := range cts {
		gd := c.Labels[LabelGitDir]
		if _, ok := repos[gd]; !ok && gd != "" {
			repos[gd] = &repoRefs{root: c.Labels[LabelRepo]}
		}
	}
	var mu sync.Mutex
	for gd, rr := range repos {
		if rr.refs != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := &git.Repo{R: s.Runner, Root: rr.root, CommonDir: gd}
			refs, err := g.Refs(ctx, "refs/heads/"+BranchPrefix)
			if err != nil {
				// The repository may be gone; its containers then show as
				// orphans, which is the truth.
				s.Log.Debug("cannot read branches", "repo", rr.root, "err", err)
			}
			mu.Lock()
			rr.refs = refs
			mu.Unlock()
		}()
	}
	wg.Wait()

	var out []Sandbox
	seen := map[string]bool{}
	for _, c := range cts {
		gd, slug := c.Labels[LabelGitDir], c.Labels[LabelSlug]
		sb := Sandbox{
			Name: slug, Branch: BranchPrefix + slug, Container: c.Name,
			Repo: c.Labels[LabelRepo], Base: c.Labels[LabelBase], Created: c.Created,
			Status: containerStatus(c.State, gd, slug),
		}
		if rr := repos[gd]; rr == nil || rr.refs[BranchRef(slug)] == "" {
			sb.Status = StatusNoBranch
		}
		seen[gd+"\x00"+slug] = true
		out = append(out, sb)
	}
	for gd, rr := range repos {
		for ref := range rr.refs {
			slug := strings.TrimPrefix(ref, "refs/heads/"+BranchPrefix)
			if seen[gd+"\x00"+slug] {
				continue
			}
			out = append(out, Sandbox{Name: slug, Branch: BranchPrefix + slug, Repo: rr.root, Status: StatusNoContainer})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Repo != out[j].Repo {
			return out[i].Repo < out[j].Repo
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func containerStatus(state, gitDir, slug string) Status {
	switch state {
	case "running":
		if setupFailed(gitDir, slug) {
			return StatusFailedSetup
		}
		return StatusActive
	case "paused":
		return StatusPaused
	default:
		return StatusStopped
	}
}
