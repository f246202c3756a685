package sandbox

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
)

// ignoreRule is one line of a .gitignore file.
type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool
	dirOnly bool
}

// ignoreSet is the rules of one .gitignore file, matched relative to base
// (the file's directory, "" for the root).
type ignoreSet struct {
	base  string
	rules []ignoreRule
}

// parseIgnore parses gitignore text (gitignore(5)): comments, blank lines,
// "!" negation, a trailing "/" for directories only, patterns anchored when
// they hold a "/" before their end, and the wildcards *, ?, [...] and **.
func parseIgnore(base string, data []byte) ignoreSet {
	set := ignoreSet{base: base}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		// Trailing spaces are dropped unless escaped with a backslash.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var r ignoreRule
		if strings.HasPrefix(line, "!") {
			r.negate, line = true, line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		anchored := strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		expr := globToRegexp(line)
		if !anchored {
			expr = "(?:.*/)?" + expr
		}
		re, err := regexp.Compile("^" + expr + "$")
		if err != nil {
			continue // git ignores patterns it cannot parse, too
		}
		r.re = re
		set.rules = append(set.rules, r)
	}
	return set
}

// globToRegexp translates one gitignore glob into a regular expression.
func globToRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				// "**/" matches any number of directories, "/**" everything
				// inside; other "**" act like "*".
				atStart := i == 0 || glob[i-1] == '/'
				if atStart && i+2 < len(glob) && glob[i+2] == '/' {
					b.WriteString("(?:.*/)?")
					i += 2
					continue
				}
				if atStart && i+2 == len(glob) {
					b.WriteString(".*")
					i++
					continue
				}
				i++
			}
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '[':
			end := strings.IndexByte(glob[i+1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : i+1+end]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteString(regexp.QuoteMeta(string(glob[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// match reports whether the set decides about path (relative to the
// repository root), and if so whether it is ignored. The last matching rule
// wins, as in git.
func (s ignoreSet) match(path string, isDir bool) (decided, ignored bool) {
	rel := path
	if s.base != "" {
		if !strings.HasPrefix(path, s.base+"/") {
			return false, false
		}
		rel = path[len(s.base)+1:]
	}
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := s.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
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

// ignored reports whether path is ignored. Callers walk from the root and
// never descend into an ignored directory, which gives git's rule that a file
// cannot be re-included when a parent directory is excluded.
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
