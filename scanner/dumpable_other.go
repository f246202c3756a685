//go:build !linux

package scanner

// undumpable does nothing where the scanner never runs (it runs in Linux
// containers); see dumpable_linux.go.
func undumpable() {}
