package scanner

import (
	"testing"
)

// FuzzIgnore: any .gitignore text and name are matched without panicking
// or running away (git's wildmatch is exponential only in patterns it
// also accepts; lengths here are bounded).
func FuzzIgnore(f *testing.F) {
	f.Add("*.o\n[!a]\n**/b/**\n\\!x \n", "a/b/c.o", true)
	f.Fuzz(func(t *testing.T, text, name string, dir bool) {
		if len(text) > 1000 || len(name) > 200 {
			return
		}
		ig := (&ignorer{}).with(parseIgnore("", []byte(text)))
		ig.ignored(name, dir)
	})
}
