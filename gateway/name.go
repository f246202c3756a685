package gateway

import (
	"io"
	"os"
	"strings"
	"syscall"
)

// isSlug says n looks like a sandbox's name (a slug: lower-case letters,
// digits and inner dashes, at most 63): anything else in the name file is
// not repeated.
func isSlug(n string) bool {
	if n == "" || len(n) > 63 || n[0] == '-' {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// sandboxName is the sandbox's name for what a refusal tells it: the
// policy's, or when the policy names none (a gateway made for the warm
// pool, before its sandbox had a name) the name in NameFile, which the
// sandbox's setup or the engine's claim wrote; "NAME" when neither says.
//
// The sandbox can write that file, so it is read as the sandbox's word:
// not through a link (which could point at the gateway's own files), only
// a regular file, a few bytes, a slug or nothing; and the name goes only
// into the text the sandbox itself is answered with.
func (g *Gateway) sandboxName() string {
	if n := g.Policy().Sandbox; n != "" {
		return n
	}
	if n := readName(g.NameFile); n != "" {
		return n
	}
	return "NAME"
}

// readName is the slug in the file at path; "" when there is none.
func readName(path string) string {
	if path == "" {
		return ""
	}
	// O_NONBLOCK: a FIFO in its place must not hold the refusal up.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 80))
	if err != nil {
		return ""
	}
	n := strings.TrimSpace(string(b))
	if !isSlug(n) {
		return ""
	}
	return n
}
