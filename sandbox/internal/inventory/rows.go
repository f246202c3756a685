package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/state"
)

// rowFiles is what a sandbox's state files say, as much as its list row
// needs; the zero value when its git dir is not known (see owner).
type rowFiles struct {
	creating     bool   // a create (or a delete) holds its lock (state.BeingCreated)
	deleting     bool   // a delete began (state.Deleting)
	journal      bool   // a create's journal (state.ReadJournal)
	setupFailed  bool   // its startup command failed (state.SetupFailed)
	readyID      string // the container marked ready (state.ReadyMark)
	deleteFailed string // why the end of a delete failed (state.DeleteFailed)
	idlePaused   *time.Duration
	run          *state.Run
	egress       *api.Egress
	secrets      []api.Secret
}

// readRow reads the state files of sandbox slug of the repository whose
// common git dir is gitDir ("": not known, nothing is read).
func readRow(gitDir, slug string) rowFiles {
	if gitDir == "" {
		return rowFiles{}
	}
	f := rowFiles{
		creating:     state.BeingCreated(gitDir, slug),
		deleting:     state.Deleting(gitDir, slug),
		journal:      state.ReadJournal(gitDir, slug) != nil,
		setupFailed:  state.SetupFailed(gitDir, slug),
		readyID:      state.ReadyContainer(gitDir, slug),
		deleteFailed: state.DeleteFailed(gitDir, slug),
		egress:       EgressOf(gitDir, slug),
		secrets:      SecretsOf(gitDir, slug),
	}
	if idle, ok := state.IdlePaused(gitDir, slug); ok {
		f.idlePaused = &idle
	}
	if run, ok := state.ReadRun(gitDir, slug); ok {
		f.run = &run
	}
	return f
}

// readRows reads the state files of every sandbox of the repository whose
// common git dir is gitDir that its branches (own, refs) or its state
// directories name, by slug. List reads them while the engine lists, not
// after it answered: the two are read at the same moment, give or take
// the engine's time, as before they were a few milliseconds apart the other
// way round. A row the engine alone names (a container without a branch
// or state) is read when the rows are made.
func readRows(gitDir string, own map[string]string) map[string]rowFiles {
	slugs := map[string]bool{}
	for ref := range own {
		slugs[strings.TrimPrefix(ref, "refs/heads/"+api.BranchPrefix)] = true
	}
	entries, _ := os.ReadDir(filepath.Join(gitDir, "litterbox"))
	for _, e := range entries {
		if name := e.Name(); e.IsDir() && !strings.Contains(name, ".") {
			slugs[name] = true // a slug's state (slugs have no dot)
		}
	}
	out := make(map[string]rowFiles, len(slugs))
	for slug := range slugs {
		out[slug] = readRow(gitDir, slug)
	}
	return out
}
