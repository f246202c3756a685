package api

import (
	"github.com/litterbox-dev/litterbox/git"
)

// History is a sandbox's branch since its base.
type History struct {
	Name    string       `json:"name"`
	Branch  string       `json:"branch"`
	Base    string       `json:"base"`
	Commits []git.Commit `json:"commits"` // newest first
}

// DiffResult says what Diff compared.
type DiffResult struct {
	Name string
	Base string
	// Tip is the commit the diff shows: what `merge --at` and `apply --at`
	// take to land exactly what was read.
	Tip   string
	Empty bool // the branch changes nothing; nothing was written
	// Paths are every file the diff changes (renames as two); only for a
	// diff written.
	Paths []string
	// Files lists the files with their entries and line counts, in the
	// order the patch shows them (as far as the limits keep them), and
	// Patch is what was held of the patch; only for a diff asked to hold
	// it (DiffOptions.Hold).
	Files *git.FileList
	Patch *git.PatchCutter
	// ConfigFiles are the changed files that steer git or litterbox (see
	// configFiles): a human should read them before landing the branch.
	ConfigFiles []string
}

// ApplyResult says what Apply did.
type ApplyResult struct {
	Name  string   `json:"name"`
	Base  string   `json:"base"`
	Tip   string   `json:"tip"`
	Files []string `json:"files"` // paths changed in the working tree
	// Empty: the branch changes nothing, so nothing was applied.
	Empty bool `json:"empty,omitempty"`
	// Already: the working tree already holds the changes; nothing was applied.
	Already bool `json:"alreadyApplied,omitempty"`
	// ConfigFiles are the changed files that steer git or litterbox.
	ConfigFiles []string `json:"configFiles,omitempty"`
}

// MergeResult says what Merge did.
type MergeResult struct {
	Name   string `json:"name"`
	Into   string `json:"into"`   // the branch merged into, e.g. main
	From   string `json:"from"`   // the branch's tip before the merge
	Commit string `json:"commit"` // the branch's new tip
	// Tip is the sandbox's commit that was merged: all of it, and nothing
	// the branch gained after.
	Tip         string   `json:"merged"`
	FastForward bool     `json:"fastForward,omitempty"`
	Files       []string `json:"files"`
	// NothingToMerge: the branch's commits were all in HEAD already.
	NothingToMerge bool `json:"nothingToMerge,omitempty"`
	// Unsigned: commit.gpgSign is on but signing failed, so the merge commit
	// was made unsigned rather than not at all.
	Unsigned    bool   `json:"unsigned,omitempty"`
	SignFailure string `json:"signFailure,omitempty"`
	// ConfigFiles are the merged files that steer git or litterbox.
	ConfigFiles []string `json:"configFiles,omitempty"`
	// Unnormalized are merged files git stores otherwise than the branch
	// holds them (line endings .gitattributes converts): git status shows
	// them modified until their normalized form is committed.
	Unnormalized []string      `json:"unnormalized,omitempty"`
	Deleted      *DeleteReport `json:"deleted,omitempty"`
}
