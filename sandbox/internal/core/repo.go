// Package core is the vocabulary every concern of the sandbox service
// shares: the repository and its id, a sandbox's handle, names and labels,
// paths in the sandbox, the outcomes callers branch on (errors.go), and
// Common, what each concern is given: the engine, git's runner, the log,
// the options, and the bounded exec every concern runs in a sandbox with.
package core

import (
	"context"
	"path/filepath"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// LabelKeys are the labels every lookup asks the engine to report.
var LabelKeys = []string{api.LabelSlug, api.LabelRepo, api.LabelGitDir, api.LabelRepoID, api.LabelBranch, api.LabelBase, api.LabelImage, api.LabelPlatform, LabelGatewayOf, api.LabelRuntime}

// LabelGatewayOf marks a sandbox's egress gateway (its container and
// volume) with the sandbox container's name (egress.LabelGatewayOf): it
// carries the sandbox's labels too, so that delete and the removal of
// leftovers find it, but it is never taken for the sandbox.
const LabelGatewayOf = "dev.litterbox.gateway-of"

// LabelPoolMember marks the egress gateway of a warm pool's member with the
// member container's id: the member's claim is the gateway's too.
const LabelPoolMember = "dev.litterbox.pool-member"

// OpenRepo finds the git repository containing dir.
func OpenRepo(ctx context.Context, run runner.Runner, dir string) (*api.Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	g, err := git.Open(ctx, run, abs)
	if err != nil {
		return nil, err
	}
	return repoOf(g), nil
}

// OpenRepoBranches is OpenRepo, with the repository's sandbox branches
// (refs/heads/litterbox/..., by full name, to their commits) from the same
// git call (git.OpenBranches).
func OpenRepoBranches(ctx context.Context, run runner.Runner, dir string) (*api.Repo, map[string]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	g, refs, err := git.OpenBranches(ctx, run, abs, api.BranchPrefix)
	if err != nil {
		return nil, nil, err
	}
	return repoOf(g), refs, nil
}

func repoOf(g *git.Repo) *api.Repo {
	return &api.Repo{Git: g, Slug: repoSlug(filepath.Base(g.Root)), ID: ReadRepoID(g.CommonDir)}
}
