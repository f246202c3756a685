//go:build !linux

package docker

// socketNetns is Linux's only: elsewhere an engine's network namespace is
// not ours to see, and nothing is claimed.
func socketNetns(string) string { return "" }
