package ui

import (
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
)

// dialog is what sits over the screen and takes the keys: the help, a
// question before an action that destroys, or a line to type.
type dialog struct {
	kind     dialogKind
	question string
	// run is the action a yes (or the typed line, for a prompt) starts.
	run   func(input string) tea.Cmd
	input textinput.Model
}

type dialogKind int

const (
	noDialog dialogKind = iota
	helpDialog
	confirmDialog
	promptDialog
)

func confirm(question string, run func() tea.Cmd) dialog {
	return dialog{kind: confirmDialog, question: question + " (y/n)", run: func(string) tea.Cmd { return run() }}
}

func prompt(question, placeholder string, run func(string) tea.Cmd) dialog {
	in := textinput.New()
	in.Placeholder = placeholder
	in.CharLimit = 500
	in.Prompt = "> "
	in.Focus()
	return dialog{kind: promptDialog, question: question, run: run, input: in}
}

// key handles a key; the dialog is closed (kind noDialog) when it is done.
func (d dialog) key(k tea.KeyMsg) (dialog, tea.Cmd) {
	switch d.kind {
	case helpDialog:
		return dialog{}, nil
	case confirmDialog:
		switch k.String() {
		case "y", "Y":
			return dialog{}, d.run("")
		case "n", "N", "esc", "q", "ctrl+c":
			return dialog{}, nil
		}
		return d, nil
	case promptDialog:
		switch k.String() {
		case "esc", "ctrl+c":
			return dialog{}, nil
		case "enter":
			if v := d.input.Value(); v != "" {
				return dialog{}, d.run(v)
			}
			return d, nil
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(k)
		return d, cmd
	}
	return d, nil
}

// helpLines are the keys, all of them.
var helpLines = []string{
	"Keys",
	"",
	"  up/down, j/k   select a sandbox (or an event, in the activity)",
	"  tab            move between the sandboxes and their activity",
	"  enter          open the selected event: all of it, and its commit's diff",
	"                 (on the sandboxes: the selected one's newest event)",
	"  d              the selected sandbox's diff against its base, file by file",
	"  p / r          pause / resume it",
	"  m              merge it into the current branch, then delete it (asks first)",
	"  a              apply its changes to the working tree, uncommitted (asks first)",
	"  x / X          delete it (asks first); X also when its work is not merged",
	"  s              open a shell in it (the UI comes back when the shell exits)",
	"  n              record a milestone: squash its commits since the last one",
	"  w              its agent's requests for hosts; there a approves the selected",
	"                 one, A approves and saves it to .litterbox.local.toml, x refuses",
	"  R              ask the engine now (else every --refresh, and when a sandbox changes)",
	"  ?              this help",
	"  q, ctrl+c      quit",
	"",
	"In a diff or an event: up/down, pgup/pgdn, g/G scroll; ] and [ jump between",
	"files; esc goes back. In a diff, m and a land the commit it shows, or nothing.",
}
