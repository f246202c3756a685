package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/atomicfile"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// A repository is known to the engine by a random id, not by its path: a
// different repository put where another one was must never see, pause or
// delete the other's sandboxes, and two repositories whose directories share
// a name must both be able to have a sandbox x (docs/architecture.md,
// "Repository identity").
//
// The id is made by the first create of a clone and kept in
// <common git dir>/litterbox/repo.id, beside the sandboxes' state (linked
// worktrees share it; a new clone gets its own). Every object a sandbox is
// made of carries it as LabelRepoID, and every lookup, list, pause and delete
// goes by it. Objects made before ids existed have no such label: they
// belong to the repository whose common git dir their LabelGitDir names.

// repoIDFile is the file holding a clone's id. Its name holds a dot, which no
// slug does, so it never meets a sandbox's state directory.
const repoIDFile = "repo.id"

func repoIDPath(gitDir string) string {
	return filepath.Join(gitDir, "litterbox", repoIDFile)
}

// ReadRepoID reads the id of the repository whose common git dir is gitDir:
// "" when it has none yet (no create since ids exist) or it cannot be read.
func ReadRepoID(gitDir string) string {
	if gitDir == "" {
		return ""
	}
	data, err := os.ReadFile(repoIDPath(gitDir))
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(data))
	if !validRepoID(id) {
		return ""
	}
	return id
}

// validRepoID: 32 lower-case hex digits, as EnsureRepoID makes them.
func validRepoID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// EnsureRepoID gives r an id unless it has one: a new random one, written so
// that of two processes doing this at once both end up with the same (the
// file is linked into place, which fails when it exists; the loser reads the
// winner's). The id is never removed: objects that carry it would be lost
// to every lookup.
func EnsureRepoID(r *api.Repo) error {
	if r.ID != "" {
		return nil
	}
	if id := ReadRepoID(r.Git.CommonDir); id != "" {
		r.ID = id
		return nil
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	id := hex.EncodeToString(b)
	// Of two creates (an MCP server's side by side) one writes the id; both
	// then read it.
	path := repoIDPath(r.Git.CommonDir)
	if _, err := atomicfile.Create(path, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("record this repository's id: %w", err)
	}
	if r.ID = ReadRepoID(r.Git.CommonDir); r.ID == "" {
		return fmt.Errorf("record this repository's id: %s holds no valid id: remove it and try again", path)
	}
	return nil
}

// RepoIDOf is the id of the repository containing dir, made when it has
// none yet: what an engine of its own (--engine vm) is kept under.
func RepoIDOf(ctx context.Context, run runner.Runner, dir string) (string, error) {
	r, err := OpenRepo(ctx, run, dir)
	if err != nil {
		return "", err
	}
	if err := EnsureRepoID(r); err != nil {
		return "", err
	}
	return r.ID, nil
}
