package gateway

import (
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
)

// nameRE is what a sandbox's name looks like (a slug): anything else in
// the name file is not repeated.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// sandboxName is the sandbox's name for what a refusal tells it: the
// policy's, or when the policy names none (a gateway made for the warm
// pool, before its sandbox had a name) the name the sandbox's setup wrote
// to NameFile; "NAME" when neither says.
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
	if !nameRE.MatchString(n) {
		return ""
	}
	return n
}
