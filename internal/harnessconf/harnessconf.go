// Package harnessconf writes an agent harness's project configuration for
// Litterbox: the MCP server (`litterbox mcp`), and the harness's own switch
// that turns off its built-in shell and file-writing tools, which would
// otherwise run on the host, beside the sandbox. It merges into the files
// the user has, keeping their entries, key order and (in TOML) comments,
// and changes nothing that is already so.
//
// What each harness is given was checked against its released build (the
// versions scripts/ensure-harnesses.sh pins); docs/harnesses.md says what
// each refuses and what it leaves open.
package harnessconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/atomicfile"
)

// Names are the harnesses setup knows, as the command line spells them.
var Names = []string{"claude", "codex", "gemini", "opencode"}

// ErrInvalidFile is returned when a file to merge into does not parse, or
// holds a value of another type where setup must write; nothing is written.
var ErrInvalidFile = errors.New("cannot merge into")

// how says what a setting does with a value the file already has.
type how int

const (
	// replace puts the setting's value in place of any other.
	replace how = iota
	// keep is for an object (the MCP server entry, which a user may have
	// written with --repo or an environment of their own): one that has
	// any of its keys is left as it is.
	keep
	// union adds the setting's items that the list lacks (JSON files
	// only: no TOML setting is a list to add to).
	union
)

// setting is one value a harness's file must hold.
type setting struct {
	// path is the keys from the document's root; in TOML the last is the
	// key and the rest its table.
	path []string
	// value is a string, a bool, a []string, or an *object of those.
	value any
	how   how
}

type format int

const (
	formatJSON format = iota
	formatTOML
)

// file is one configuration file of a harness, relative to the repository.
type file struct {
	path     string
	format   format
	settings []setting
}

// server is the MCP server entry, as the README's snippets have it.
func server(pairs ...any) *object {
	o := newObject()
	for i := 0; i < len(pairs); i += 2 {
		o.set(pairs[i].(string), pairs[i+1])
	}
	return o
}

// harnesses are the files of each harness. The tool names are those of the
// pinned builds; a name a build does not know is warned about (Claude
// Code) or ignored, so each list holds only names that exist.
var harnesses = map[string][]file{
	// Claude Code: the server in .mcp.json; in .claude/settings.json, deny
	// rules (they win over any allow rule and over
	// --dangerously-skip-permissions, and take the tool out of the model's
	// list) for the tools that run commands (Bash, and Monitor with it),
	// write files (Edit, Write, NotebookEdit), make git worktrees
	// (EnterWorktree) or fetch from the network (WebFetch) on the host; and
	// litterbox's tools allowed without asking.
	"claude": {
		{path: ".mcp.json", settings: []setting{
			{path: []string{"mcpServers", "litterbox"}, value: server("command", "litterbox", "args", []string{"mcp"}), how: keep},
		}},
		{path: filepath.Join(".claude", "settings.json"), settings: []setting{
			{path: []string{"permissions", "deny"}, value: []string{"Bash", "Edit", "Write", "NotebookEdit", "WebFetch", "EnterWorktree"}, how: union},
			{path: []string{"permissions", "allow"}, value: []string{"mcp__litterbox"}, how: union},
		}},
	},
	// Codex: its shell tools are features (shell_tool, and unified_exec's
	// exec_command), turned off; apply_patch has no switch, so the sandbox
	// is read-only and approval_policy "never" refuses it without asking
	// (and anything else that would write). "never" would refuse the MCP
	// tools too: the server's default_tools_approval_mode approves them.
	"codex": {
		{path: filepath.Join(".codex", "config.toml"), format: formatTOML, settings: []setting{
			{path: []string{"sandbox_mode"}, value: "read-only"},
			{path: []string{"approval_policy"}, value: "never"},
			{path: []string{"features", "shell_tool"}, value: false},
			{path: []string{"features", "unified_exec"}, value: false},
			{path: []string{"mcp_servers", "litterbox"}, value: server("command", "litterbox", "args", []string{"mcp"}), how: keep},
			{path: []string{"mcp_servers", "litterbox", "default_tools_approval_mode"}, value: "approve"},
		}},
	},
	// Gemini CLI: tools.exclude takes the tools out of its registry. (Its
	// policy engine's deny rules are the newer way, but a project's
	// policies are not read yet: gemini-cli issue #18186.)
	"gemini": {
		{path: filepath.Join(".gemini", "settings.json"), settings: []setting{
			{path: []string{"mcpServers", "litterbox"}, value: server("command", "litterbox", "args", []string{"mcp"}), how: keep},
			{path: []string{"tools", "exclude"}, value: []string{"run_shell_command", "write_file", "replace", "web_fetch"}, how: union},
		}},
	},
	// opencode: permission "deny" takes the tool out of the model's list;
	// "edit" covers edit, write and apply_patch.
	"opencode": {
		{path: "opencode.json", settings: []setting{
			{path: []string{"mcp", "litterbox"}, value: server("type", "local", "command", []string{"litterbox", "mcp"}, "enabled", true), how: keep},
			{path: []string{"permission", "bash"}, value: "deny"},
			{path: []string{"permission", "edit"}, value: "deny"},
			{path: []string{"permission", "webfetch"}, value: "deny"},
		}},
	},
}

// File is one file of a harness's configuration: what is there and what
// setup makes of it.
type File struct {
	// Path is relative to the repository's root.
	Path string
	// Existed is false for a file setup creates.
	Existed bool
	// Old and New are the file's contents before and after; equal when
	// nothing changes.
	Old, New []byte
	// Changes say what changed, one line each ("permissions.deny: added
	// Bash, Edit").
	Changes []string
}

// Plan reads harness's files under root and returns each with what setup
// would make of it; it writes nothing. An unknown harness, or a file that
// does not parse or holds another type where setup must write, is an
// error.
func Plan(root, harness string) ([]File, error) {
	files, ok := harnesses[harness]
	if !ok {
		return nil, fmt.Errorf("unknown harness %q: setup knows %s", harness, strings.Join(Names, ", "))
	}
	var out []File
	for _, f := range files {
		path := filepath.Join(root, f.path)
		old, err := os.ReadFile(path)
		existed := err == nil
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if target, lerr := os.Readlink(path); !existed && lerr == nil {
			// Write would put a file in the link's place.
			return nil, fmt.Errorf("%w %s: it is a link to %s, which does not exist: create that file (it may be {}) or remove the link; nothing was written", ErrInvalidFile, f.path, target)
		}
		edit := editJSON
		if f.format == formatTOML {
			edit = editTOML
		}
		updated, changes, err := edit(old, f.settings)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v; nothing was written", ErrInvalidFile, f.path, err)
		}
		out = append(out, File{Path: f.path, Existed: existed, Old: old, New: updated, Changes: changes})
	}
	return out, nil
}

// Write writes the files of plan that change, under root, each whole or not
// at all (a temporary file renamed into place); a file keeps its mode, and
// a symbolic link stays one: the file it points to is written.
func Write(root string, plan []File) error {
	for _, f := range plan {
		if len(f.Changes) == 0 {
			continue
		}
		path := filepath.Join(root, f.Path)
		mode := os.FileMode(0o644)
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
			// A settings file linked from elsewhere (a dotfiles checkout)
			// is written where it is, and stays a link.
			if path, err = filepath.EvalSymlinks(path); err != nil {
				return err
			}
		}
		if err := atomicfile.Write(path, f.New, mode); err != nil {
			return err
		}
	}
	return nil
}

// describe is a setting's value for a message: a list's items, a scalar's
// JSON, an object on one line.
func describe(v any) string {
	if l, ok := v.([]string); ok {
		return strings.Join(l, ", ")
	}
	return compactJSON(toJSON(v))
}
