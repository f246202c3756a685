package files

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// Globs have doublestar's syntax and meaning (github.com/bmatcuk/doublestar):
// * and ? within a path segment, ** across segments when it is a whole
// segment, [classes], and {a,b} alternatives, nested or not. Braces are
// never expanded: 30 groups would be 2^30 patterns (24 took the server down
// when they were). doublestar's own matcher does not expand them either, but
// it backtracks: 30 groups of alternatives that overlap ({a,a}) make it try
// 2^30 paths for one name. So a pattern is checked by doublestar and
// translated to a Go regular expression, whose matching time is linear in
// the name; FuzzGlob holds the two to the same answers.

// MaxPatternBytes bounds glob patterns, grep's include and grep's regular
// expression: an agent's pattern is a line, not a document.
const MaxPatternBytes = 1024

// Glob is a compiled glob pattern.
type Glob struct {
	re *regexp.Regexp
}

// errAmbiguousGlobstar refuses the few patterns whose ** means different
// things in different brace alternatives.
var errAmbiguousGlobstar = errors.New("** next to a brace group is ambiguous here: put it outside the braces ({a,b}/**/*.go) or repeat it in each alternative")

// CompileGlob checks and compiles a glob pattern.
func CompileGlob(pattern string) (*Glob, error) {
	if err := checkPattern("pattern", pattern); err != nil {
		return nil, err
	}
	if !doublestar.ValidatePattern(pattern) {
		return nil, errors.New("not a valid glob: a [class] or {group} is not closed, a class is empty, or a '\\' ends it")
	}
	t := &globTranslator{p: pattern, match: matchingBraces(pattern)}
	expr, err := t.translate()
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(`(?s)^` + expr + `$`)
	if err != nil {
		return nil, fmt.Errorf("cannot compile: %v", err)
	}
	return &Glob{re: re}, nil
}

// checkPattern refuses an empty or oversized pattern, naming it what.
func checkPattern(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("the %s is empty", what)
	case len(p) > MaxPatternBytes:
		return fmt.Errorf("the %s is %d bytes, over the limit of %d", what, len(p), MaxPatternBytes)
	}
	return nil
}

// Match reports whether the slash-separated path p matches.
func (g *Glob) Match(p string) bool { return g.re.MatchString(p) }

// IncludeMatcher compiles grep's include: a glob over file names (*.go,
// *.{ts,tsx}) that a path matches when its last segment does.
type IncludeMatcher struct{ g *Glob }

// CompileInclude checks and compiles an include pattern.
func CompileInclude(include string) (*IncludeMatcher, error) {
	if err := checkPattern("include", include); err != nil {
		return nil, err
	}
	if strings.Contains(include, "/") {
		return nil, errors.New("include matches file names; leave folders out (use path to narrow the search)")
	}
	g, err := CompileGlob(include)
	if err != nil {
		return nil, err
	}
	return &IncludeMatcher{g}, nil
}

// Match reports whether the last segment of p matches.
func (m *IncludeMatcher) Match(p string) bool { return m.g.Match(path.Base(p)) }

// matchingBraces maps the index of every '{' to its '}' and back, and every
// ',' of a group to the group's '{', skipping escapes and classes as
// doublestar does.
func matchingBraces(p string) map[int]int {
	m := map[int]int{}
	var stack []int
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			i = classEnd(p, i)
		case '{':
			stack = append(stack, i)
		case ',':
			if len(stack) > 0 {
				m[i] = stack[len(stack)-1]
			}
		case '}':
			if len(stack) > 0 {
				open := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				m[open], m[i] = i, open
			}
		}
	}
	return m
}

// classEnd returns the index of the ']' closing the class opened at i (a
// class is never empty, so a ']' right after "[" or "[!" is inside it).
func classEnd(p string, i int) int {
	i++
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	for first := true; i < len(p); i, first = i+1, false {
		if p[i] == '\\' {
			i++
		} else if p[i] == ']' && !first {
			return i
		}
	}
	return len(p)
}

type globTranslator struct {
	p     string
	match map[int]int
	b     strings.Builder
}

// Kinds of what is next to a position, once brace syntax is looked through.
const (
	atEnd = iota
	atSlash
	atOther
	atBrace // a '{' or '}' that makes the neighbour depend on the alternative
)

// next says what follows position i (the index after a token) in every
// expansion, and where: brace syntax is looked through, and jumped says so.
func (t *globTranslator) next(i int) (kind, at int, jumped bool) {
	for i < len(t.p) {
		switch t.p[i] {
		case ',':
			open, ok := t.match[i]
			if !ok {
				return atOther, i, jumped
			}
			i = t.match[open] + 1 // past the group's '}'
			jumped = true
		case '}':
			i++
			jumped = true
		case '{':
			return atBrace, i, jumped
		case '/':
			return atSlash, i, jumped
		default:
			return atOther, i, jumped
		}
	}
	return atEnd, i, jumped
}

// prev finds what precedes position i in every expansion, looking back
// through brace syntax: the byte (0 at the pattern's start), and whether
// brace syntax was crossed. A '}' before it means it depends on the
// alternative: that is an error.
func (t *globTranslator) prev(i int) (c byte, jumped bool, err error) {
	for i > 0 {
		switch c := t.p[i-1]; {
		case c == '{' && !t.escaped(i-1):
			i--
			jumped = true
		case c == ',' && !t.escaped(i-1):
			open, ok := t.match[i-1]
			if !ok {
				return c, jumped, nil
			}
			i = open
			jumped = true
		case c == '}' && !t.escaped(i-1):
			return c, jumped, errAmbiguousGlobstar
		default:
			return c, jumped, nil
		}
	}
	return 0, jumped, nil
}

// escaped reports whether the byte at i is escaped by a backslash.
func (t *globTranslator) escaped(i int) bool {
	n := 0
	for j := i - 1; j >= 0 && t.p[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func (t *globTranslator) translate() (string, error) {
	p := t.p
	for i := 0; i < len(p); {
		switch c := p[i]; c {
		case '\\':
			if strings.HasPrefix(p[i+1:], "/") {
				// an escaped '/' is a '/', with the meaning of a final "/**"
				n, err := t.slash(i + 1)
				if err != nil {
					return "", err
				}
				i += 1 + n
				continue
			}
			i += 1 + t.literal(i+1)
		case '/':
			n, err := t.slash(i)
			if err != nil {
				return "", err
			}
			i += n
		case '*':
			n, err := t.star(i)
			if err != nil {
				return "", err
			}
			i += n
		case '?':
			t.b.WriteString(`[^/]`)
			i++
		case '[':
			end := classEnd(p, i)
			t.class(p[i+1 : end])
			i = end + 1
		case '{':
			t.b.WriteString(`(?:`)
			i++
		case ',':
			if _, ok := t.match[i]; ok {
				t.b.WriteString(`|`)
			} else {
				t.b.WriteString(`,`)
			}
			i++
		case '}':
			t.b.WriteString(`)`)
			i++
		default:
			i += t.literal(i)
		}
	}
	return t.b.String(), nil
}

// literal translates the rune at i, matched as itself, and returns its
// length. A byte that is not UTF-8 matches any such byte, as in doublestar.
func (t *globTranslator) literal(i int) int {
	r, n := utf8.DecodeRuneInString(t.p[i:])
	if r == utf8.RuneError && n == 1 {
		t.b.WriteString(`\x{fffd}`)
	} else {
		t.b.WriteString(regexp.QuoteMeta(t.p[i : i+n]))
	}
	return n
}

// slash translates the '/' at i and returns how many bytes it used. A
// final "/**", or a run of them ("a/**/**"), also matches the folder itself
// ("a/**" matches "a"), as in doublestar.
func (t *globTranslator) slash(i int) (int, error) {
	n := 0
	for strings.HasPrefix(t.p[i+n:], "/**") {
		n += 3
		if kind, _, _ := t.next(i + n); kind == atEnd {
			t.b.WriteString(`(?:/.*)?`)
			return n, nil
		}
	}
	t.b.WriteString(`/`)
	return 1, nil
}

// star translates the * or ** at i and returns how many bytes it used.
// doublestar reads "**" as a globstar (any number of folders) when it is a
// whole segment, and as * otherwise; a run of stars split by brace syntax
// ("*{*,a}") would be read differently per alternative, so it is refused.
func (t *globTranslator) star(i int) (int, error) {
	p := t.p
	n := 1
	if strings.HasPrefix(p[i:], "***") {
		return 0, errors.New("*** means nothing more than * or **: write one of those")
	}
	if strings.HasPrefix(p[i:], "**") {
		n = 2
	}
	before, prevJumped, err := t.prev(i)
	if err != nil {
		return 0, err
	}
	kind, at, jumped := t.next(i + n)
	if kind == atBrace || (jumped && kind == atOther && p[at] == '*') || (prevJumped && before == '*') {
		return 0, errAmbiguousGlobstar
	}
	if n == 1 {
		t.b.WriteString(`[^/]*`)
		return 1, nil
	}
	start := before == 0 || before == '/'
	switch {
	case start && kind == atEnd:
		if prevJumped && before != 0 {
			return 0, errAmbiguousGlobstar // "a/{**}": the '/' is outside
		}
		t.b.WriteString(`.*`)
		return 2, nil
	case start && kind == atSlash && jumped:
		return 0, errAmbiguousGlobstar // "{**,x}/y": the '/' is outside
	case start && kind == atSlash:
		t.b.WriteString(`(?:.*/)?`)
		return 3, nil
	}
	t.b.WriteString(`[^/]*`)
	return 2, nil
}

// class translates the inside of a [class] as doublestar reads it: an
// optional ! or ^, runes, \-escapes and lo-hi ranges (an empty or reversed
// range matches nothing).
func (t *globTranslator) class(body string) {
	negate := false
	if body != "" && (body[0] == '!' || body[0] == '^') {
		negate, body = true, body[1:]
	}
	var b strings.Builder
	last := rune(-1)
	for i := 0; i < len(body); {
		r, n := decodeClassRune(body[i:])
		if body[i] == '\\' && i+1 < len(body) {
			r, n = decodeClassRune(body[i+1:])
			n++
		}
		i += n
		if last >= 0 && r == '-' && body[i-n] == '-' && i < len(body) {
			hi, m := decodeClassRune(body[i:])
			if body[i] == '\\' && i+1 < len(body) {
				hi, m = decodeClassRune(body[i+1:])
				m++
			}
			i += m
			if last <= hi {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, last, hi)
			}
			last = -1
			continue
		}
		fmt.Fprintf(&b, `\x{%x}`, r)
		last = r
	}
	switch {
	case b.Len() == 0 && negate:
		t.b.WriteString(`[\x00-\x{10ffff}]`)
	case b.Len() == 0:
		t.b.WriteString(`[^\x00-\x{10ffff}]`)
	case negate:
		t.b.WriteString(`[^` + b.String() + `]`)
	default:
		t.b.WriteString(`[` + b.String() + `]`)
	}
}

// decodeClassRune reads one rune; a byte that is not UTF-8 reads as U+FFFD,
// as doublestar (and Go's regexp) read it.
func decodeClassRune(s string) (rune, int) {
	return utf8.DecodeRuneInString(s)
}
