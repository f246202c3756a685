package commands

import (
	"context"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
	kongcompletion "github.com/jotaen/kong-completion"
	"github.com/posener/complete"
)

// SandboxPredictor is the name the `predictor:"..."` tag of a sandbox name
// argument refers to; main registers a SandboxNames under it.
const SandboxPredictor = "sandbox"

// SandboxNames completes a sandbox name for the shell: the names `litterbox
// list` shows for the repository the command line works on. It runs inside a
// shell's completion, so it never prints an error: anything that fails (no
// repository, no engine) completes nothing.
type SandboxNames struct {
	// Env is what list runs with. Its RepoDir is the repository when the
	// words typed so far name none with --repo.
	Env *Env
}

// Predict lists the sandboxes; the shell keeps those that start with the word
// being typed.
func (p SandboxNames) Predict(a complete.Args) []string {
	dir := repoFlag(a.Completed, p.Env.RepoDir)
	list, err := p.Env.Sandboxes.ListDir(context.Background(), dir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(list))
	for _, sb := range list {
		names = append(names, sb.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// repoFlag is the value of the last --repo among the words typed, or def.
// kong takes global flags anywhere on the line, so every word is looked at.
func repoFlag(words []string, def string) string {
	dir := def
	for i, w := range words {
		switch {
		case w == "--repo" && i+1 < len(words):
			dir = words[i+1]
		case strings.HasPrefix(w, "--repo="):
			dir = strings.TrimPrefix(w, "--repo=")
		}
	}
	return dir
}

// Completion prints the shell code that turns on tab completion, as
// kubectl, gh, docker and helm do: `source <(litterbox completion bash)`.
type Completion struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
	// Code is what printed the code before it was the default; scripts
	// that pass it keep working.
	Code bool `short:"c" hidden:"" help:"Print the code (the default; kept for older set-ups)."`
}

// Help says how to use the code.
func (c *Completion) Help() string {
	return `Prints the code that turns on tab completion of commands, flags and sandbox names (those of the repository you are in, or the one --repo names). Load it in your shell's start-up file:

  bash, in ~/.bashrc:                  source <(litterbox completion bash)
  zsh, in ~/.zshrc:                    source <(litterbox completion zsh)
  fish, in ~/.config/fish/config.fish: litterbox completion fish | source

The code names this binary by its full path: run the line again after moving it.`
}

// Run prints the code for c.Shell.
func (c *Completion) Run(ctx *kong.Context) error {
	k := kongcompletion.Completion{Shell: c.Shell, Code: true}
	return k.Run(ctx)
}
