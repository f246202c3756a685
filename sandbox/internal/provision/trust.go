package provision

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// What an agent may decide: nothing an agent wrote
// decides how a sandbox is made, and an agent starts a sandbox only from a
// commit the user lets it.
//
// A sandbox's branch is the agent's writing: its .litterbox.toml is data,
// never settings. So create takes .litterbox.toml from a commit of the
// user's (one their branches, tags or remote-tracking branches hold, or
// HEAD), records what it took in the sandbox's state directory
// (settingsFile, on the host, out of the agent's reach), and a sandbox made
// from another sandbox's work (a fork, create --from litterbox/NAME, a
// recreate from its own branch) is made with that record: as its source
// was. .litterbox.local.toml, which only the user writes, is read anew
// each time.

// createSettings is the configuration a create makes its sandbox with, and
// the record of it: the record of the sandbox it starts from (its source,
// for a fork; its own, for a recreate; the one a --from names by its
// branch), else the committed file of the commit it starts from when that
// commit is the user's, else HEAD's. inherited says it is a record's.
// committed, when not nil, is what git read of config.Files at start
// (readHead), which is then not read again.
func (pv *Provisioner) createSettings(ctx context.Context, r *api.Repo, slug string, opts api.CreateOptions, start, base string, committed []git.FileContent) (cfg *config.Config, rec *state.Settings, inherited bool, err error) {
	source := ""
	switch {
	case opts.FromBranch:
		source = slug
	case opts.ForkOf != "":
		source = opts.ForkOf
	case opts.From != "":
		name, err := r.Git.FullRefName(ctx, opts.From)
		if err != nil {
			return nil, nil, false, err
		}
		source, _ = strings.CutPrefix(name, "refs/heads/"+api.BranchPrefix)
		if source == name {
			source = ""
		}
	}
	if source != "" {
		rec, ok, err := state.ReadSettings(r, source)
		if err != nil {
			return nil, nil, false, err
		}
		if ok {
			cfg, err := config.WithLocal(ctx, r.Git, rec.File, pv.Warn)
			if err == nil && rec.DevContainer != nil {
				err = cfg.ApplyDevContainer(rec.DevContainer)
			}
			if err != nil {
				return nil, nil, false, fmt.Errorf("the settings sandbox '%s' was made with: %w", source, err)
			}
			if source != slug {
				rec.From = "sandbox " + source
			}
			return cfg, rec, true, nil
		}
	}
	// A new sandbox starts at HEAD (the user's) unless told otherwise; a
	// recreate is labelled with the merge base of HEAD and its branch.
	commit := start
	if opts.FromBranch {
		commit = base
	}
	if opts.From != "" || opts.FromBranch || opts.ForkOf != "" {
		mine, err := pv.usersCommit(ctx, r, commit, nil)
		if err != nil {
			return nil, nil, false, err
		}
		if !mine {
			if commit, err = r.Git.Head(ctx); err != nil {
				return nil, nil, false, err
			}
			pv.Log.Warn("the sandbox starts from a commit that is not on your branches; it takes its settings from HEAD's "+config.File, "sandbox", slug, "commit", core.Short(start))
		}
	}
	if committed != nil && commit == start {
		cfg, err = config.LoadFiles(ctx, r.Git, commit, committed, pv.Warn)
	} else {
		cfg, err = pv.LoadConfig(ctx, r, commit)
	}
	if err != nil {
		return nil, nil, false, err
	}
	return cfg, &state.Settings{From: commit, File: cfg.Committed}, false, nil
}

// usersCommit reports whether commit is one of the user's: on a local
// branch (not a sandbox's), a tag or a remote-tracking branch, or HEAD or
// before it; or on a ref also allows.
func (pv *Provisioner) usersCommit(ctx context.Context, r *api.Repo, commit string, also func(ref string) bool) (bool, error) {
	refs, err := r.Git.RefsContaining(ctx, commit)
	if err != nil {
		return false, fmt.Errorf("find the refs that hold %s: %w", core.Short(commit), err)
	}
	for _, ref := range refs {
		if usersRef(ref) || also != nil && also(ref) {
			return true, nil
		}
	}
	head, err := r.Git.Head(ctx)
	if err != nil {
		return false, err
	}
	return r.Git.IsAncestor(ctx, commit, head)
}

// usersRef: the user's branches, tags and remote-tracking branches. Not
// sandboxes' branches (the agents' writing), the stash (uncommitted
// changes), notes, or anything else under refs/.
func usersRef(ref string) bool {
	switch {
	case strings.HasPrefix(ref, "refs/heads/"+api.BranchPrefix):
		return false
	case strings.HasPrefix(ref, "refs/heads/"), strings.HasPrefix(ref, "refs/tags/"), strings.HasPrefix(ref, "refs/remotes/"):
		return true
	}
	return false
}

// matchRef reports whether ref matches one of patterns (agent_base_refs):
// a full name, a name ending in "/" for every ref under it, or a
// path.Match pattern.
func matchRef(patterns []string, ref string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, ref); ok || p == ref || strings.HasSuffix(p, "/") && strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}

// agentMayStartFrom refuses a base_ref an agent gave that the user does
// not let agents start from: commit (what from resolved to) must be one of
// the user's, or on a ref agent_base_refs in .litterbox.local.toml lists.
func (pv *Provisioner) agentMayStartFrom(ctx context.Context, r *api.Repo, slug, from, commit string) error {
	local, err := config.Local(ctx, r.Git, pv.Warn)
	if err != nil {
		return err
	}
	ok, err := pv.usersCommit(ctx, r, commit, func(ref string) bool { return matchRef(local.AgentBaseRefs, ref) })
	if err != nil || ok {
		return err
	}
	name, err := r.Git.FullRefName(ctx, from)
	if err != nil {
		return err
	}
	e := &api.Error{Kind: api.ErrBadRef,
		Msg:   fmt.Sprintf("Cannot create sandbox '%s': an agent asked to start it from %s, which is not on your branches, tags or remote-tracking branches. Agents start only from those and the commits they hold, unless agent_base_refs in %s lists more (see docs/mcp.md); nothing was created.", slug, api.Quote(from), config.LocalFile),
		Agent: fmt.Sprintf("Cannot create sandbox '%s': base_ref %s is not one you may start from. You may start from the user's branches, tags and remote-tracking branches (e.g. HEAD, main, v1.0, origin/main) or a commit they hold, or leave base_ref out to start from HEAD. Nothing was created.", slug, api.Quote(from))}
	if other, ok := strings.CutPrefix(name, "refs/heads/"+api.BranchPrefix); ok {
		e.Agent = fmt.Sprintf("Cannot create sandbox '%s': base_ref %s is another sandbox's branch: to build on its work, use sandbox-fork with sandbox %q, which keeps its settings. Otherwise start from the user's branches, tags or a commit they hold, or leave base_ref out to start from HEAD. Nothing was created.", slug, api.Quote(from), other)
	}
	return e
}
