package wire

import (
	"fmt"
	"strings"
)

// Names that git treats specially are refused, with a reason, never
// written under another name and never silently dropped: what git's own
// verify_path refuses with core.protectNTFS and core.protectHFS on (the
// checks git applies before writing a path to an index or a work tree), and
// what `git fsck --strict` reports in a tree. The functions below are ports
// of git's is_ntfs_dotgit, is_ntfs_dot_generic (path.c), is_hfs_dot_generic
// and pick_one_utf8_char (utf8.c), and the name checks of verify_path
// (read-cache.c) and fsck_tree (fsck.c); names_git_test.go holds them to git
// itself.
//
// Everything else is stored as it is, byte for byte: names that differ only
// in case or Unicode normalization (README and readme, é as one code point
// or two) are distinct names to git and to Linux; only a case-insensitive
// or normalizing checkout sees them collide, and git reports that when it
// checks them out.

// RefusedName says why a name found in /src is never recorded, or "" when
// it may be. isLink tells a symlink.
func RefusedName(name string, isLink bool) string {
	switch {
	case name == "" || name == "." || name == "..":
		return "not a name git can store"
	case strings.EqualFold(name, ".git"):
		return "a .git entry is never committed"
	case isDotGit(name):
		return fmt.Sprintf("%q is .git to Windows or macOS (8.3 short names, trailing dots and spaces, ignored code points): git refuses it", name)
	case isLink && IsDotGitmodules(name):
		return ".gitmodules as a symbolic link: git refuses it (gitmodulesSymlink)"
	case isLink && isDotSpecial(name, "gitattributes", "gi7d29"):
		return ".gitattributes as a symbolic link: git does not follow it, and fsck flags it (gitattributesSymlink)"
	case isLink && isDotSpecial(name, "gitignore", "gi250a"):
		return ".gitignore as a symbolic link: git does not follow it, and fsck flags it (gitignoreSymlink)"
	case isLink && isDotSpecial(name, "mailmap", "maba30"):
		return ".mailmap as a symbolic link: git does not follow it, and fsck flags it (mailmapSymlink)"
	}
	return ""
}

// isDotGit reports whether git takes name for .git on some file system:
// HFS+ from its start, NTFS also from after any backslash (a directory
// separator on Windows, which git checks on every platform).
func isDotGit(name string) bool {
	return isHFSDot(name, "git") || anyNTFSPart(name, isNTFSDotGit)
}

// anyNTFSPart reports whether is holds for name or for a part of it that
// follows a backslash.
func anyNTFSPart(name string, is func(string) bool) bool {
	for {
		if is(name) {
			return true
		}
		i := strings.IndexByte(name, '\\')
		if i < 0 {
			return false
		}
		name = name[i+1:]
	}
}

// IsDotGitmodules reports whether name is .gitmodules to HFS+ or NTFS, also
// after a backslash, as verify_path and fsck check it.
func IsDotGitmodules(name string) bool {
	return isHFSDot(name, "gitmodules") || anyNTFSPart(name, func(s string) bool { return isNTFSDot(s, "gitmodules", "gi7eba") })
}

// isDotSpecial reports whether name is .<needle> to HFS+ or NTFS
// (shortPrefix starts its NTFS 8.3 short name), as fsck checks it.
func isDotSpecial(name, needle, shortPrefix string) bool {
	return isHFSDot(name, needle) || isNTFSDot(name, needle, shortPrefix)
}

// isNTFSDotGit is git's is_ntfs_dotgit: ".git" or "git~1", in any case,
// followed by nothing but spaces and dots up to the end, a separator or an
// NTFS stream (':').
func isNTFSDotGit(name string) bool {
	var rest string
	switch {
	case len(name) >= 4 && name[0] == '.' && strings.EqualFold(name[1:4], "git"):
		rest = name[4:]
	case len(name) >= 5 && strings.EqualFold(name[:3], "git") && name[3:5] == "~1":
		rest = name[5:]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '\\', '/', ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}

// isNTFSDot is git's is_ntfs_dot_generic.
func isNTFSDot(name, needle, shortPrefix string) bool {
	onlySpacesAndPeriods := func(i int) bool {
		for ; i < len(name); i++ {
			switch name[i] {
			case ':':
				return true
			case ' ', '.':
			default:
				return false
			}
		}
		return true
	}
	if len(name) > len(needle) && name[0] == '.' && strings.EqualFold(name[1:1+len(needle)], needle) {
		return onlySpacesAndPeriods(len(needle) + 1)
	}
	// A regular short name: the first six characters, then ~1 to ~4.
	if len(name) >= 8 && strings.EqualFold(name[:6], needle[:6]) && name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return onlySpacesAndPeriods(8)
	}
	// A fall-back short name: a prefix of shortPrefix, '~', digits.
	c := func(i int) byte { return ByteAt(name, i) }
	sawTilde := false
	for i := 0; i < 8; i++ {
		switch {
		case c(i) == 0:
			return false
		case sawTilde:
			if c(i) < '0' || c(i) > '9' {
				return false
			}
		case c(i) == '~':
			i++
			if c(i) < '1' || c(i) > '9' {
				return false
			}
			sawTilde = true
		case i >= 6:
			return false
		case c(i)&0x80 != 0:
			return false
		case asciiLower(c(i)) != shortPrefix[i]:
			return false
		}
	}
	return onlySpacesAndPeriods(8)
}

func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 0x20
	}
	return c
}

// isHFSDot is git's is_hfs_dot_generic: "." then needle, in any case, with
// the code points HFS+ ignores skipped anywhere, then nothing. A name that
// is not valid UTF-8 after the needle counts as nothing, as in git.
func isHFSDot(name, needle string) bool {
	pos := 0
	if nextHFSChar(name, &pos) != '.' {
		return false
	}
	for i := 0; i < len(needle); i++ {
		c := nextHFSChar(name, &pos)
		if c > 127 || asciiLower(byte(c)) != needle[i] {
			return false
		}
	}
	c := nextHFSChar(name, &pos)
	return c == 0 || c == '/'
}

// nextHFSChar is git's next_hfs_char: the next code point, skipping those
// HFS+ ignores; 0 at the end or at bytes that are not valid UTF-8 (and
// pos then stays put, so every later call is 0 too).
func nextHFSChar(s string, pos *int) rune {
	for {
		c, n := pickOneUTF8(s[*pos:])
		if n < 0 {
			*pos = len(s)
			return 0
		}
		*pos += n
		switch c {
		case 0x200c, 0x200d, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
			0x206a, 0x206b, 0x206c, 0x206d, 0x206e, 0x206f, 0xfeff:
			continue
		}
		return c
	}
}

// pickOneUTF8 is git's pick_one_utf8_char on a NUL-terminated string: the
// code point at the start of s and its length, 0 and 0 at the end, or n < 0
// when s does not start with valid UTF-8 by git's rules (which also refuse
// U+FFFE and U+FFFF).
func pickOneUTF8(s string) (rune, int) {
	b := func(i int) byte { return ByteAt(s, i) }
	s0 := b(0)
	switch {
	case len(s) == 0:
		return 0, 0
	case s0 < 0x80:
		return rune(s0), 1
	case s0&0xe0 == 0xc0:
		if b(1)&0xc0 != 0x80 || s0&0xfe == 0xc0 {
			return 0, -1
		}
		return rune(s0&0x1f)<<6 | rune(b(1)&0x3f), 2
	case s0&0xf0 == 0xe0:
		if b(1)&0xc0 != 0x80 || b(2)&0xc0 != 0x80 ||
			(s0 == 0xe0 && b(1)&0xe0 == 0x80) || // overlong
			(s0 == 0xed && b(1)&0xe0 == 0xa0) || // surrogate
			(s0 == 0xef && b(1) == 0xbf && b(2)&0xfe == 0xbe) { // U+FFFE, U+FFFF
			return 0, -1
		}
		return rune(s0&0x0f)<<12 | rune(b(1)&0x3f)<<6 | rune(b(2)&0x3f), 3
	case s0&0xf8 == 0xf0:
		if b(1)&0xc0 != 0x80 || b(2)&0xc0 != 0x80 || b(3)&0xc0 != 0x80 ||
			(s0 == 0xf0 && b(1)&0xf0 == 0x80) || // overlong
			(s0 == 0xf4 && b(1) > 0x8f) || s0 > 0xf4 { // past U+10FFFF
			return 0, -1
		}
		return rune(s0&0x07)<<18 | rune(b(1)&0x3f)<<12 | rune(b(2)&0x3f)<<6 | rune(b(3)&0x3f), 4
	}
	return 0, -1
}

// ByteAt is s[i], or 0 past its end: the C string's terminator, as git's
// code, which these checks follow, reads a name.
func ByteAt(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}
