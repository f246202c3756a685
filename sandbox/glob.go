package sandbox

import (
	"errors"
	"path"
	"regexp"
	"strings"
)

// Glob is a compiled glob pattern: slash-separated segments where ** matches
// any number of folders, the others match one segment as path.Match does,
// and {a,b} alternates.
type Glob struct {
	alts [][]string // one segment list per brace alternative
}

// CompileGlob checks and compiles a glob pattern.
func CompileGlob(pattern string) (*Glob, error) {
	if pattern == "" {
		return nil, errors.New("empty pattern")
	}
	expanded, err := ExpandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &Glob{}
	for _, p := range expanded {
		segs := strings.Split(strings.Trim(p, "/"), "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, err
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// Match reports whether the slash-separated path p matches.
func (g *Glob) Match(p string) bool {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for _, segs := range g.alts {
		if matchSegs(segs, parts) {
			return true
		}
	}
	return false
}

func matchSegs(segs, parts []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			for len(segs) > 0 && segs[0] == "**" {
				segs = segs[1:]
			}
			if len(segs) == 0 {
				return true
			}
			for i := range parts {
				if matchSegs(segs, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(segs[0], parts[0]); !ok {
			return false
		}
		segs, parts = segs[1:], parts[1:]
	}
	return len(parts) == 0
}

// ExpandBraces expands every {a,b} group of a pattern, nested or not.
func ExpandBraces(p string) ([]string, error) {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		if strings.IndexByte(p, '}') >= 0 {
			return nil, errors.New("unbalanced '}'")
		}
		return []string{p}, nil
	}
	depth, close := 0, -1
	var commas []int
	for i := open; i < len(p) && close < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return nil, errors.New("unbalanced '{'")
	}
	var out []string
	start := open + 1
	for _, c := range append(commas, close) {
		alt := p[:open] + p[start:c] + p[close+1:]
		more, err := ExpandBraces(alt)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
		start = c + 1
	}
	return out, nil
}

// IncludeRegexp turns a glob over file names (*.go, *.{ts,tsx}) into a POSIX
// extended regular expression matching a whole path whose last segment
// matches, for filtering find's output in the container.
func IncludeRegexp(include string) (string, error) {
	alts, err := ExpandBraces(include)
	if err != nil {
		return "", err
	}
	var res []string
	for _, a := range alts {
		if strings.Contains(a, "/") {
			return "", errors.New("include matches file names; leave folders out (use path to narrow the search)")
		}
		if _, err := path.Match(a, ""); err != nil {
			return "", err
		}
		var b strings.Builder
		for i := 0; i < len(a); i++ {
			switch c := a[i]; c {
			case '*':
				b.WriteString("[^/]*")
			case '?':
				b.WriteString("[^/]")
			case '[':
				end := strings.IndexByte(a[i+1:], ']')
				class := a[i+1 : i+1+end]
				if strings.HasPrefix(class, "!") {
					class = "^" + class[1:]
				}
				b.WriteString("[" + class + "]")
				i += end + 1
			case '\\':
				if i+1 < len(a) {
					i++
					b.WriteString(regexp.QuoteMeta(a[i : i+1]))
				}
			default:
				b.WriteString(regexp.QuoteMeta(a[i : i+1]))
			}
		}
		res = append(res, b.String())
	}
	return "(^|/)(" + strings.Join(res, "|") + ")$", nil
}
