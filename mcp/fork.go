package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// sandbox-fork

const forkDesc = `Fork a sandbox: create a new sandbox whose /src holds the other sandbox's latest work (its branch tip; it is snapshotted first), with a branch of its own. Use it to try a variation without losing the original.
The new sandbox's base is the fork point: its changes are reviewed from there. It is made with the settings the sandbox it forks was made with (the user's .litterbox.toml, never the one in the sandbox). The new name follows sandbox-create's rules.`

// ForkArgs are sandbox-fork's arguments.
type ForkArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox to fork, as given to sandbox-create"`
	Name    string `json:"name" jsonschema:"Name of the new sandbox, e.g. fix-login-bug-b"`
}

func (s *Server) fork(ctx context.Context, a ForkArgs) (*CreateResult, error) {
	f, err := s.sandboxes.Fork(ctx, s.repo, a.Sandbox, a.Name, api.CreateOptions{ByAgent: true})
	if err != nil {
		return nil, err
	}
	return createResult(&f.Created), nil
}

// rewind

const rewindDesc = `Rewind a sandbox (undo): put its /src back to one of its commits, by id (a tool result's snapshot.commit, or the base sandbox-create returned). The rewind is a new commit on top, so nothing is lost: rewind to the commit before it to undo the rewind.
Anything not yet committed is snapshotted first; files ignored by .gitignore stay as they are. Services that were running are restarted. A commit that is not the sandbox's own is an error and changes nothing.`

// RewindArgs are rewind's arguments.
type RewindArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Commit  string `json:"commit" jsonschema:"Id of the commit to go back to (full or abbreviated)"`
}

// RewindResult is rewind's result.
type RewindResult struct {
	plain
	api.RewindResult
}

func (r *RewindResult) blocks() []string {
	if r.Unchanged {
		return []string{fmt.Sprintf("/src already holds the files of %s; nothing changed.", r.To)}
	}
	t := fmt.Sprintf("Rewound /src to %s, recorded as commit %s.", r.To, r.Commit)
	if len(r.Restarted) > 0 {
		t += " Restarted services: " + strings.Join(r.Restarted, ", ") + "."
	}
	return []string{t}
}

func (s *Server) rewind(ctx context.Context, a RewindArgs) (*RewindResult, error) {
	// Once begun, a rewind completes, as milestone does.
	ctx = context.WithoutCancel(ctx)
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*RewindResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		defer l.Unlock()
		r, err := s.sandboxes.Rewind(ctx, h, a.Commit)
		if err != nil {
			return nil, err
		}
		return &RewindResult{RewindResult: *r}, nil
	})
}
