package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/atomicfile"
)

// Lines of a TOML file SaveLocalAllow looks for: a table's header, the
// [network] table's, its allow key.
var (
	tableRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[`) })
	networkRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\[\s*network\s*\]\s*(#.*)?$`) })
	allowRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*allow\s*=`) })
)

// SaveLocalAllow adds entry to the allow list of [network] in LocalFile of
// g's working tree (made if missing), so the sandboxes made from now on
// may reach it (the UI's approve-and-save of an agent's request). The
// rest of the file is left as it was, comments too. LocalFile's allow
// replaces the committed file's (key by key), so a LocalFile without one
// gets the committed entries (File at HEAD) with entry: the policy only
// grows. The result is parsed and checked before it is written; a file
// this cannot edit is left as it was, and the error says what to add.
// note says what was done.
func SaveLocalAllow(ctx context.Context, g *git.Repo, entry string) (note string, err error) {
	if strings.ContainsAny(entry, "\"\\\n\r\t #[]=,") || entry == "" {
		return "", fmt.Errorf("%q is not an entry to save", entry)
	}
	path := filepath.Join(g.Root, LocalFile)
	if name, tracked, err := g.Tracked(ctx, LocalFile); err != nil {
		return "", fmt.Errorf("ask git whether it tracks %s: %w", LocalFile, err)
	} else if tracked {
		return "", errors.New(TrackedLocalWarning(name))
	}
	committed, ok, err := g.FileAt(ctx, "HEAD", File)
	if err != nil || !ok {
		committed = nil
	}
	local, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	localCfg, err := Parse(nil, local)
	if err != nil {
		return "", err
	}
	if slices.Contains(localCfg.Egress.Allow, entry) {
		return fmt.Sprintf("%s allows %s already.", LocalFile, entry), nil
	}
	// What the allow list must hold after: the local one, or the
	// committed one when the local file sets none.
	want := localCfg.Egress.Allow
	seed := []string{entry}
	if want == nil {
		if base, err := Parse(committed, nil); err == nil {
			want = base.Egress.Allow
			seed = append(slices.Clone(want), entry)
		}
	}
	edited, ok := addAllow(string(local), seed, entry)
	manual := fmt.Errorf("cannot add it to %s here: add %q to allow in its [network] table yourself", LocalFile, entry)
	if !ok {
		return "", manual
	}
	cfg, err := Parse(committed, []byte(edited))
	if err != nil || !slices.Contains(cfg.Egress.Allow, entry) || len(cfg.Egress.Allow) != len(want)+1 {
		return "", manual
	}
	if err := atomicfile.Write(path, []byte(edited), mode); err != nil {
		return "", err
	}
	return fmt.Sprintf("Saved to %s: [network] allow holds %s.", LocalFile, entry), nil
}

// addAllow is text with entry added to [network]'s allow: in the array
// there, or as a new key holding seed, or a new table; false when the
// file says network otherwise (a dotted key, an inline table).
func addAllow(text string, seed []string, entry string) (string, bool) {
	quoted := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	lines := strings.Split(text, "\n")
	header := -1
	for i, l := range lines {
		if networkRE().MatchString(l) {
			header = i
			break
		}
	}
	if header < 0 {
		for _, l := range lines {
			if regexp.MustCompile(`^\s*network\s*[.=]`).MatchString(l) {
				return "", false
			}
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		if text != "" {
			text += "\n"
		}
		return text + "[network]\nallow = " + quoted(seed) + "\n", true
	}
	for i := header + 1; i < len(lines) && !tableRE().MatchString(lines[i]); i++ {
		if !allowRE().MatchString(lines[i]) {
			continue
		}
		l := lines[i]
		open := strings.Index(l, "[")
		if open < 0 {
			return "", false
		}
		if end := strings.LastIndex(l, "]"); end > open {
			// allow = [...] on one line
			inner := strings.TrimSpace(l[open+1 : end])
			sep := ", "
			if inner == "" {
				sep = ""
			}
			lines[i] = l[:end] + sep + strconv.Quote(entry) + l[end:]
			if inner != "" && strings.HasSuffix(inner, ",") {
				lines[i] = l[:end] + " " + strconv.Quote(entry) + l[end:]
			}
			return strings.Join(lines, "\n"), true
		}
		// over several lines: the entry first, a comma after it
		lines = slices.Insert(lines, i+1, "  "+strconv.Quote(entry)+",")
		return strings.Join(lines, "\n"), true
	}
	lines = slices.Insert(lines, header+1, "allow = "+quoted(seed))
	return strings.Join(lines, "\n"), true
}
