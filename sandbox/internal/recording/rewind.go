package recording

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// rewindRemoveSh: the paths to remove from /src on stdin, NUL-separated.
// Folders in the way (where the rewind puts a file) go too, then folders
// left empty.
const rewindRemoveSh = `cd /src || exit 1
tr '\0' '\n' | while IFS= read -r p; do
  [ -n "$p" ] || continue
  rm -rf -- "./$p"
  d=${p%/*}; while [ "$d" != "$p" ] && [ -n "$d" ]; do rmdir -- "./$d" 2>/dev/null || break; p=$d; d=${d%/*}; done
done`

// Rewind puts the sandbox's /src back to rev, a commit of its branch from
// its base to its tip (an agent's undo), and records that as a new commit
// on top, "rewind: to REV (subject)", so nothing is lost: rewinding to the
// old tip undoes it. What /src held is snapshotted first. Ignored files stay.
// Services that were running are restarted, so they serve the rewound
// files. A rev not on the branch is ErrBadRef, and nothing changes.
func (rec *Recorder) Rewind(ctx context.Context, h *api.Handle, rev string) (*api.RewindResult, error) {
	// rev is checked before anything is recorded, and the snapshot's
	// message names the commit it resolved to, never rev as given.
	rv, err := rec.inv.ResolveBranch(ctx, h.Repo, h.Slug)
	if err != nil {
		return nil, err
	}
	notOnBranch := func() error {
		return &api.Error{Kind: api.ErrBadRef,
			Msg:   fmt.Sprintf("Cannot rewind sandbox '%s': %s is not a commit of its branch %s%s since its base %s. `litterbox log %s` lists them; nothing was changed.", h.Slug, api.Quote(rev), api.BranchPrefix, h.Slug, core.Short(rv.Base), h.Slug),
			Agent: fmt.Sprintf("Cannot rewind sandbox '%s': %s is not one of its commits. Give the id of one of its snapshot commits (a tool result's snapshot.commit), or its base %s; nothing was changed.", h.Slug, api.Quote(rev), rv.Base)}
	}
	to, ok, err := h.Repo.Git.ResolveRef(ctx, rev)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notOnBranch()
	}
	onTip, err := h.Repo.Git.IsAncestor(ctx, to, rv.Tip)
	if err != nil {
		return nil, err
	}
	afterBase, err := h.Repo.Git.IsAncestor(ctx, rv.Base, to)
	if err != nil {
		return nil, err
	}
	if !onTip || !afterBase {
		return nil, notOnBranch()
	}
	if _, err := rec.Snapshot(ctx, h, "snapshot: before rewind to "+core.Short(to)); err != nil {
		return nil, fmt.Errorf("snapshot before the rewind (nothing was changed): %w", err)
	}
	if rv, err = rec.inv.ResolveBranch(ctx, h.Repo, h.Slug); err != nil {
		return nil, err
	}
	res := &api.RewindResult{Name: h.Slug, To: to}
	changes, err := h.Repo.Git.RawDiff(ctx, rv.Tip, to)
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		res.Unchanged = true
		return res, nil
	}
	var list bytes.Buffer
	for _, c := range changes {
		list.WriteString(c.Path)
		list.WriteByte(0)
	}
	if err := rec.execOK(ctx, h, []string{"sh", "-c", rewindRemoveSh}, &list, "remove what the rewind replaces"); err != nil {
		return nil, err
	}
	// The whole tree goes back in: the files of to, modes and links as
	// they are in git, over what is left.
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(h.Repo.Git.TreeArchive(ctx, to, pw)) }()
	err = rec.execOK(ctx, h, []string{"tar", "-x", "-o", "-f", "-", "-C", api.Workdir}, pr, "put the files of "+core.Short(to)+" back")
	pr.CloseWithError(errors.New("rewind abandoned"))
	if err != nil {
		return nil, err
	}
	subject := ""
	if cs, err := h.Repo.Git.Log(ctx, to+"^", to); err == nil && len(cs) == 1 {
		subject = " (" + cs[0].Subject + ")"
	}
	snap, err := rec.Snapshot(ctx, h, "rewind: to "+core.Short(to)+subject)
	if err != nil {
		return nil, fmt.Errorf("/src holds the files of %s, but the snapshot that records it failed: %w", core.Short(to), err)
	}
	res.Commit = snap.Commit
	if res.Restarted, err = rec.services.RestartRunning(ctx, h); err != nil {
		return res, fmt.Errorf("rewound to %s, but restarting its services failed: %w", core.Short(to), err)
	}
	return res, nil
}

// execOK runs cmd with stdin in the sandbox and fails on a non-zero exit.
func (rec *Recorder) execOK(ctx context.Context, h *api.Handle, cmd []string, stdin io.Reader, what string) error {
	var errOut bytes.Buffer
	_, err := rec.Common.Exec(ctx, provider.ExecRequest{Ref: h.Ref, Kind: runner.Stream, Cmd: cmd, Stdin: stdin, Stderr: &errOut})
	if err != nil {
		return core.ExecError(h, what, core.WithStderr(err, errOut.String()))
	}
	return nil
}
