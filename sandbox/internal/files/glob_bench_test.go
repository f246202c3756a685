package files

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkGlobBraces compiles a glob of n {a,b} groups and matches it
// against 1000 paths, as one glob call does: the cost must not grow with
// 2^n. go test -run XXX -bench GlobBraces -benchmem ./sandbox/
func BenchmarkGlobBraces(b *testing.B) {
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = fmt.Sprintf("src/pkg%d/%s.txt", i%10, strings.Repeat("ab", 9+i%7))
	}
	for _, n := range []int{18, 30} {
		pattern := "**/" + strings.Repeat("{a,b}", n) + ".txt"
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			for b.Loop() {
				g, err := CompileGlob(pattern)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range paths {
					g.Match(p)
				}
			}
		})
	}
}
