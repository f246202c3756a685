// Package fsname compares file names as a file system that ignores case or
// Unicode normalisation does: macOS's APFS and HFS+ by default, Windows'
// NTFS (which also drops a name's trailing dots and spaces), ext4 and F2FS
// folders made case-insensitive. There, two names git
// holds as different files are one file: a branch that adds
// .LITTERBOX.LOCAL.TOML writes the user's .litterbox.local.toml.
package fsname

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Fold is name as such a file system compares it: without the code points
// HFS+ ignores, nor the trailing dots and spaces Windows drops, decomposed
// (NFD), case-folded in full (ß is ss), composed again (NFC).
func Fold(name string) string {
	name = strings.Map(func(r rune) rune {
		if ignorable(r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimRight(name, ". ")
	return norm.NFC.String(cases.Fold().String(norm.NFD.String(name)))
}

// Same reports whether a and b are one file on such a file system.
func Same(a, b string) bool { return a == b || Fold(a) == Fold(b) }

// ignorable reports whether HFS+ ignores r in names (git's is_hfs_dot_git
// skips the same ones): zero-width joiners and marks, bidirectional
// embeddings and overrides, deprecated format characters, the BOM.
func ignorable(r rune) bool {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return true
	}
	return false
}
