package scanner

import (
	"strings"

	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// wildmatch is a port of git's wildmatch.c (the matcher behind .gitignore
// and pathspecs), kept line for line so that it decides as git does: the
// differential tests in ignore_git_test.go hold it to git itself. Character
// classes follow git's own ctype table (ASCII only, no locale): "space" is
// tab, newline, CR and space; bytes from 0x80 are in no class.

// Results of dowild, as in git.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// wmPathname makes '*' and '?' stop at '/', and gives "**/" its meaning.
const wmPathname = 1

// wildmatch reports whether text matches pattern. Neither holds a NUL: git
// reads both as C strings.
func wildmatch(pattern, text string, flags int) bool {
	return dowild(pattern, 0, text, 0, flags) == wmMatch
}

func dowild(pat string, p int, text string, t int, flags int) int {
	patternStart := p
	for ; wire.ByteAt(pat, p) != 0; t, p = t+1, p+1 {
		pCh := wire.ByteAt(pat, p)
		tCh := wire.ByteAt(text, t)
		if tCh == 0 && pCh != '*' {
			return wmAbortAll
		}
		switch pCh {
		case '\\':
			// Literal match with the next character; at the pattern's end
			// the test below fails, as in git.
			p++
			pCh = wire.ByteAt(pat, p)
			if tCh != pCh {
				return wmNoMatch
			}
			continue
		case '?':
			if flags&wmPathname != 0 && tCh == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if wire.ByteAt(pat, p) == '*' {
				prevP := p - 2
				for {
					p++
					if wire.ByteAt(pat, p) != '*' {
						break
					}
				}
				if flags&wmPathname == 0 {
					matchSlash = true
				} else if (prevP < patternStart || pat[prevP] == '/') &&
					(wire.ByteAt(pat, p) == 0 || wire.ByteAt(pat, p) == '/' || (wire.ByteAt(pat, p) == '\\' && wire.ByteAt(pat, p+1) == '/')) {
					// "**/" may match no directory at all: try the rest
					// of the pattern here first.
					if wire.ByteAt(pat, p) == '/' && dowild(pat, p+1, text, t, flags) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			} else {
				matchSlash = flags&wmPathname == 0
			}
			if wire.ByteAt(pat, p) == 0 {
				// A trailing "**" matches everything, a trailing "*"
				// only what holds no more slashes.
				if !matchSlash && strings.IndexByte(text[t:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && wire.ByteAt(pat, p) == '/' {
				// One asterisk then a slash matches the next directory.
				slash := strings.IndexByte(text[t:], '/')
				if slash < 0 {
					return wmNoMatch
				}
				t += slash
				// The slash is consumed by the loop.
				break
			}
			for {
				if tCh == 0 {
					break
				}
				// Advance faster when a literal follows the asterisk:
				// what comes before it belongs to the "*".
				if !isGlobSpecial(wire.ByteAt(pat, p)) {
					pCh = wire.ByteAt(pat, p)
					for {
						tCh = wire.ByteAt(text, t)
						if tCh == 0 || (!matchSlash && tCh == '/') {
							break
						}
						if tCh == pCh {
							break
						}
						t++
					}
					if tCh != pCh {
						return wmNoMatch
					}
				}
				if matched := dowild(pat, p, text, t, flags); matched != wmNoMatch {
					if !matchSlash || matched != wmAbortToStarStar {
						return matched
					}
				} else if !matchSlash && tCh == '/' {
					return wmAbortToStarStar
				}
				t++
				tCh = wire.ByteAt(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pCh = wire.ByteAt(pat, p)
			if pCh == '^' {
				pCh = '!'
			}
			negated := pCh == '!'
			if negated {
				p++
				pCh = wire.ByteAt(pat, p)
			}
			var prevCh byte
			matched := false
			// C's do { ... } while (prev_ch = p_ch, (p_ch = *++p) != ']').
			for first := true; ; first = false {
				if !first {
					prevCh = pCh
					p++
					if pCh = wire.ByteAt(pat, p); pCh == ']' {
						break
					}
				}
				if pCh == 0 {
					return wmAbortAll
				}
				if pCh == '\\' {
					p++
					pCh = wire.ByteAt(pat, p)
					if pCh == 0 {
						return wmAbortAll
					}
					if tCh == pCh {
						matched = true
					}
				} else if pCh == '-' && prevCh != 0 && wire.ByteAt(pat, p+1) != 0 && wire.ByteAt(pat, p+1) != ']' {
					p++
					pCh = wire.ByteAt(pat, p)
					if pCh == '\\' {
						p++
						pCh = wire.ByteAt(pat, p)
						if pCh == 0 {
							return wmAbortAll
						}
					}
					if tCh <= pCh && tCh >= prevCh {
						matched = true
					}
					pCh = 0 // so that prevCh becomes 0
				} else if pCh == '[' && wire.ByteAt(pat, p+1) == ':' {
					p += 2
					s := p
					for pCh = wire.ByteAt(pat, p); pCh != 0 && pCh != ']'; {
						p++
						pCh = wire.ByteAt(pat, p)
					}
					if pCh == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pat[p-1] != ':' {
						// No ":]": a plain '[' in the set.
						p = s - 2
						pCh = '['
						if tCh == pCh {
							matched = true
						}
						continue
					}
					in, ok := ctypeClass(pat[s:s+i], tCh)
					if !ok {
						return wmAbortAll // malformed [:class:]
					}
					if in {
						matched = true
					}
					pCh = 0
				} else if tCh == pCh {
					matched = true
				}
			}
			if matched == negated || (flags&wmPathname != 0 && tCh == '/') {
				return wmNoMatch
			}
			continue
		default:
			if tCh != pCh {
				return wmNoMatch
			}
			continue
		}
		// Reached by "break" out of the '*' case: the loop consumes the
		// slash.
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

func isGlobSpecial(c byte) bool { return c == '*' || c == '?' || c == '[' || c == '\\' }

// ctypeClass says whether c is in the named [:class:], by git's ctype.
func ctypeClass(name string, c byte) (in, ok bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	isGraph := c > 0x20 && c < 0x7f
	switch name {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return isGraph, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return isGraph && !isUpper && !isLower && !isDigit, true
	case "space":
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
