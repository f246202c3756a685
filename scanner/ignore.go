package scanner

import (
	"bytes"
	"strings"
)

// The ignore rules are git's, ported from dir.c (add_patterns_from_buffer,
// parse_path_pattern, match_basename, match_pathname,
// last_matching_pattern_from_list) over a port of wildmatch.c, and held to
// git itself by the differential tests in ignore_git_test.go. Names are
// bytes: nothing here splits on anything but '/' and '\n'.

// ignoreRule is one pattern of a .gitignore file, parsed as git does.
type ignoreRule struct {
	pattern    string // without a leading "!" and a trailing "/"
	noWildLen  int    // length of its leading part without wildcards
	negate     bool   // "!": re-include
	mustBeDir  bool   // trailing "/": directories only
	noDir      bool   // no "/" in it: matched against the base name
	endsWith   bool   // "*" then a literal: a suffix compare
	patternLen int
}

// ignoreSet is the rules of one .gitignore file, matched relative to base
// (the file's directory, "" for the root).
type ignoreSet struct {
	base  string
	rules []ignoreRule
}

// parseIgnore parses gitignore text as git's add_patterns_from_buffer: a
// UTF-8 byte order mark is skipped, lines end at '\n' (a CR before it is
// dropped), empty lines and lines starting with '#' are skipped, trailing
// spaces are trimmed unless escaped, and a NUL ends a line's pattern (git
// reads patterns as C strings).
func parseIgnore(base string, data []byte) ignoreSet {
	set := ignoreSet{base: base}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data[:len(data):len(data)], '\n')
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if j := bytes.IndexByte(line, 0); j >= 0 {
			line = line[:j]
		}
		if r, ok := parseRule(trimTrailingSpaces(string(line))); ok {
			set.rules = append(set.rules, r)
		}
	}
	return set
}

// trimTrailingSpaces drops trailing spaces, but not one escaped with a
// backslash (git's trim_trailing_spaces).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i == len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// parseRule is git's parse_path_pattern.
func parseRule(p string) (ignoreRule, bool) {
	var r ignoreRule
	if strings.HasPrefix(p, "!") {
		r.negate, p = true, p[1:]
	}
	n := len(p)
	if n > 0 && p[n-1] == '/' {
		n--
		r.mustBeDir = true
	}
	r.noDir = strings.IndexByte(p[:n], '/') < 0
	r.noWildLen = min(simpleLength(p), n)
	if strings.HasPrefix(p, "*") && simpleLength(p[1:]) == len(p[1:]) {
		r.endsWith = true
	}
	r.pattern, r.patternLen = p[:n], n
	return r, true
}

// simpleLength is the length of s before its first wildcard character.
func simpleLength(s string) int {
	for i := 0; i < len(s); i++ {
		if isGlobSpecial(s[i]) {
			return i
		}
	}
	return len(s)
}

// matchBasename is git's match_basename.
func (r ignoreRule) matchBasename(name string) bool {
	if r.noWildLen == r.patternLen {
		return r.pattern == name
	}
	if r.endsWith {
		return len(r.pattern)-1 <= len(name) && strings.HasSuffix(name, r.pattern[1:])
	}
	return wildmatch(r.pattern, name, 0)
}

// matchPathname is git's match_pathname: rel is the path relative to the
// rule's .gitignore directory.
func (r ignoreRule) matchPathname(rel string) bool {
	pattern, prefix := r.pattern, r.noWildLen
	if strings.HasPrefix(pattern, "/") {
		pattern, prefix = pattern[1:], prefix-1
	}
	name := rel
	if prefix > 0 {
		if prefix > len(name) || pattern[:prefix] != name[:prefix] {
			return false
		}
		pattern, name = pattern[prefix:], name[prefix:]
		// No wildcard at all: the prefix was the whole pattern.
		if pattern == "" && name == "" {
			return true
		}
	}
	return wildmatch(pattern, name, wmPathname)
}

// match reports whether the set decides about path (relative to the
// repository root), and if so whether it is ignored. The last matching
// rule wins, as in git (last_matching_pattern_from_list).
func (s ignoreSet) match(path string, isDir bool) (decided, ignored bool) {
	rel := path
	if s.base != "" {
		if !strings.HasPrefix(path, s.base+"/") {
			return false, false
		}
		rel = path[len(s.base)+1:]
	}
	base := path[strings.LastIndexByte(path, '/')+1:]
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := s.rules[i]
		if r.mustBeDir && !isDir {
			continue
		}
		var m bool
		if r.noDir {
			m = r.matchBasename(base)
		} else {
			m = r.matchPathname(rel)
		}
		if m {
			return true, !r.negate
		}
	}
	return false, false
}

// ignorer is the stack of ignore sets in force at one point of a walk: the
// global excludes first, then each .gitignore from the root down. Deeper
// sets take precedence.
type ignorer struct {
	sets []ignoreSet
}

// ignored reports whether path is ignored by the rules in force in its
// directory. Callers walk from the root and never treat a path under an
// ignored directory as untracked-and-wanted, which gives git's rule that a
// file cannot be re-included when a parent directory is excluded.
func (ig *ignorer) ignored(path string, isDir bool) bool {
	for i := len(ig.sets) - 1; i >= 0; i-- {
		if decided, ignored := ig.sets[i].match(path, isDir); decided {
			return ignored
		}
	}
	return false
}

// with returns an ignorer with set added on top.
func (ig *ignorer) with(set ignoreSet) *ignorer {
	if len(set.rules) == 0 {
		return ig
	}
	sets := make([]ignoreSet, len(ig.sets), len(ig.sets)+1)
	copy(sets, ig.sets)
	return &ignorer{sets: append(sets, set)}
}
