package guest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
	"github.com/litterbox-dev/litterbox/scanner/wire"
	"github.com/litterbox-dev/litterbox/secrets"
)

// A new sandbox holds the commit it starts from and, beside it, the files
// of the user's working tree that git ignores and that the user asks for
// (a .env the tests need): the bootstrap. Which ones git decides, never a
// matcher of ours: the untracked files the patterns of .worktreeinclude
// (the convention of Claude Code, Conductor and Codex, read from the
// working tree) and of [bootstrap] include (LocalFile only) match, of
// which those git's own rules ignore. They go into the copy's tar after
// the commit's files, and the sandbox's record (state.Bootstrapped) keeps
// their paths so that no snapshot ever records them.

// WorktreeInclude is the file at the root of the working tree whose
// gitignore patterns name the ignored files a new sandbox gets a copy of.
const WorktreeInclude = ".worktreeinclude"

// The bootstrap's bounds: more files, or more bytes in all, refuse the
// create, which then makes nothing.
const (
	BootstrapMaxFiles = 1000
	BootstrapMaxBytes = 64 << 20
)

// Bootstrap is the list of files a new sandbox of r gets beside its
// commit, read from the working tree: those .worktreeinclude and include
// name that git ignores. None when neither names any.
func Bootstrap(ctx context.Context, r *api.Repo, include []string) ([]git.ArchiveFile, error) {
	from := WorktreeInclude
	if _, err := os.Lstat(filepath.Join(r.Root(), from)); err != nil {
		from = ""
	}
	if from == "" && len(include) == 0 {
		return nil, nil
	}
	paths, err := r.Git.IgnoredMatching(ctx, from, include)
	if err != nil {
		return nil, err
	}
	return BootstrapFiles(r, paths)
}

// bootstrapSources names what lists the files, for messages.
const bootstrapSources = WorktreeInclude + " and [bootstrap] include in " + config.LocalFile

// BootstrapFiles reads paths from r's working tree, through the
// repository's root only: a symbolic link that leads out of it, a name git
// refuses or one with a control character, and anything but a regular
// file are refused, as are more than BootstrapMaxFiles files or
// BootstrapMaxBytes in all. A file gone meanwhile is left out.
func BootstrapFiles(r *api.Repo, paths []string) ([]git.ArchiveFile, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	refuse := func(format string, args ...any) error {
		return &api.Error{Kind: api.ErrConfig,
			Msg:   fmt.Sprintf(format, args...) + " Nothing was made.",
			Agent: fmt.Sprintf(format, args...) + " Nothing was made; tell the user, who sets what goes in."}
	}
	if len(paths) > BootstrapMaxFiles {
		return nil, refuse("%s name %d ignored files of your working tree to copy into the sandbox (%s, ...); at most %d are copied (the bootstrap's bound). Name fewer: a dependency or build directory is better made by the setup command.",
			bootstrapSources, len(paths), api.Quote(paths[0]), BootstrapMaxFiles)
	}
	root, err := os.OpenRoot(r.Root())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	files := make([]git.ArchiveFile, 0, len(paths))
	var total int64
	for _, p := range paths {
		if !wire.SafePath(p) || strings.ContainsFunc(p, func(c rune) bool { return c < ' ' || c == 0x7f }) {
			return nil, refuse("%s name %s, a file name litterbox refuses (git refuses it, or it holds a control character). Rename it, or take it out of the list.", bootstrapSources, api.Quote(p))
		}
		fi, err := root.Stat(p)
		if errors.Is(err, os.ErrNotExist) {
			if _, lerr := root.Lstat(p); lerr != nil {
				continue // gone meanwhile
			}
		}
		if err != nil {
			return nil, refuse("%s name %s, a symbolic link that leads out of the repository or nowhere: no file outside the repository goes into a sandbox. Put the file itself in the repository (ignored), or take it out of the list.", bootstrapSources, api.Quote(p))
		}
		if !fi.Mode().IsRegular() {
			return nil, refuse("%s name %s, which is not a regular file. Take it out of the list.", bootstrapSources, api.Quote(p))
		}
		total += fi.Size()
		if total > BootstrapMaxBytes {
			return nil, refuse("%s name more than %d MiB of ignored files to copy into the sandbox (past the bootstrap's bound at %s). Name fewer or smaller files: a dependency or build directory is better made by the setup command.",
				bootstrapSources, BootstrapMaxBytes>>20, api.Quote(p))
		}
		f, err := root.Open(p)
		if err != nil {
			return nil, fmt.Errorf("read %s for the sandbox: %w", api.Quote(p), err)
		}
		data, err := io.ReadAll(io.LimitReader(f, fi.Size()))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s for the sandbox: %w", api.Quote(p), err)
		}
		files = append(files, git.ArchiveFile{Path: p, Executable: fi.Mode()&0o100 != 0, Data: data})
	}
	return files, nil
}

// Paths are the paths of files.
func Paths(files []git.ArchiveFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// Rebootstrap is the bootstrap of sandbox slug read again from the working
// tree, for a container made anew from its branch (a resume that found
// /src gone): the files its record lists, as they are now, the values of
// its dotenv files that bs (its bindings) bind as their placeholders.
func Rebootstrap(r *api.Repo, slug string, bs []secrets.Binding) ([]git.ArchiveFile, error) {
	set, err := state.Bootstrapped(r, slug)
	if err != nil || len(set) == 0 {
		return nil, err
	}
	files, err := BootstrapFiles(r, slices.Sorted(maps.Keys(set)))
	if err != nil {
		return nil, err
	}
	return Placehold(r.Root(), files, bs)
}
