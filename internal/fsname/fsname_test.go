package fsname

import "testing"

// TestSame: the names a case- or normalisation-insensitive file system takes
// for one file are Same, and only those.
func TestSame(t *testing.T) {
	const local = ".litterbox.local.toml"
	same := []string{
		local,
		".LITTERBOX.LOCAL.TOML",
		".Litterbox.Local.Toml",
		".litterbox\u200c.local.toml", // zero-width non-joiner (HFS+ ignores it)
		".litterbox.local.toml\ufeff",
		"\u202e.litterbox.local.toml",
		".litterbox.local.toml. .", // Windows drops trailing dots and spaces
	}
	for _, n := range same {
		if !Same(n, local) {
			t.Errorf("Same(%q, %q) = false", n, local)
		}
	}
	for _, pair := range [][2]string{
		{"caf\u00e9", "CAFE\u0301"}, // NFC and NFD, cases apart
		{"stra\u00dfe", "STRASSE"},  // full folding
		{"\u212aelvin", "kelvin"},   // KELVIN SIGN
	} {
		if !Same(pair[0], pair[1]) {
			t.Errorf("Same(%q, %q) = false", pair[0], pair[1])
		}
	}
	for _, n := range []string{".litterbox.local.tom", ".litterbox.local.toml.bak", "litterbox.local.toml", ".litterbox.locaI.toml", ".litterbox.lo\u0441al.toml"} {
		if Same(n, local) {
			t.Errorf("Same(%q, %q) = true", n, local)
		}
	}
}
