package git

import (
	"context"
	"strings"
)

// CommitInfo is one commit as Messages reports it.
type CommitInfo struct {
	ID      string
	Message string
}

// Messages lists the first-parent commits in base..tip, newest first, with
// their full messages.
func (g *Repo) Messages(ctx context.Context, base, tip string) ([]CommitInfo, error) {
	out, err := g.output(ctx, "log", "--first-parent", "--format=%H%x00%B%x1e", "--end-of-options", base+".."+tip)
	if err != nil {
		return nil, err
	}
	var list []CommitInfo
	for _, rec := range strings.Split(out, "\x1e") {
		id, msg, ok := strings.Cut(strings.TrimLeft(rec, "\n"), "\x00")
		if ok {
			list = append(list, CommitInfo{ID: id, Message: strings.TrimSpace(msg)})
		}
	}
	return list, nil
}

// CommitTree writes a commit of tip's tree with one parent, as author, without
// hooks or signing whatever the user's config says, and returns its id.
func (g *Repo) CommitTree(ctx context.Context, tree, parent, message, name, email string) (string, error) {
	cmd := g.Cmd("-c", "commit.gpgSign=false", "commit-tree", "--no-gpg-sign", "-p", parent, "-m", message, tree).WithEnv(
		"GIT_AUTHOR_NAME="+name, "GIT_AUTHOR_EMAIL="+email,
		"GIT_COMMITTER_NAME="+name, "GIT_COMMITTER_EMAIL="+email,
	)
	res, err := g.R.Run(ctx, cmd)
	return strings.TrimSpace(string(res.Stdout)), err
}
