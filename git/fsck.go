package git

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/runner"
)

// FsckError is an object git's fsck rules refuse, with git's own words.
type FsckError struct {
	Msg string
}

func (e *FsckError) Error() string { return "git fsck refuses it: " + e.Msg }

// maxGitmodules bounds the .gitmodules files checked; a larger one is
// refused without asking git.
const maxGitmodules = 1 << 20

// CheckGitmodules asks git whether the blob id, as a .gitmodules file,
// passes `git fsck --strict`: submodule names that climb out with "..",
// URLs and paths that look like command-line options, update commands. The
// checks are git's own: a pack holding the blob and a tree that names it
// .gitmodules is indexed with `git index-pack --strict` in a temporary
// directory. Nothing is written to the repository: a tree there naming the
// blob .gitmodules, even unreachable, would itself fail fsck. A refusal is
// a *FsckError quoting git.
func (g *Repo) CheckGitmodules(ctx context.Context, id string) error {
	res, err := g.R.Run(ctx, g.Cmd("cat-file", "blob", id))
	if err != nil {
		return err
	}
	if len(res.Stdout) > maxGitmodules {
		return &FsckError{Msg: fmt.Sprintf("a .gitmodules of %d bytes is over %d", len(res.Stdout), maxGitmodules)}
	}
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 20 {
		return fmt.Errorf("check .gitmodules: bad blob id %q", id)
	}
	tree := append([]byte("100644 .gitmodules\x00"), raw...)
	dir, err := os.MkdirTemp("", "litterbox-fsck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pack := filepath.Join(dir, "check.pack")
	if err := os.WriteFile(pack, packOf([]packObject{{2, tree}, {3, res.Stdout}}), 0o600); err != nil {
		return err
	}
	_, err = g.R.Run(ctx, g.Cmd("index-pack", "--strict", "-o", filepath.Join(dir, "check.idx"), pack))
	if code := runner.ExitCode(err); code > 0 {
		msg := runner.Stderr(err)
		// The first line names the rule; the rest is git's summary.
		if i := bytes.IndexByte([]byte(msg), '\n'); i > 0 {
			msg = msg[:i]
		}
		return &FsckError{Msg: strings.TrimPrefix(strings.TrimSpace(msg), "error: ")}
	}
	return err
}

// packObject is one whole object of a pack: its type (2 tree, 3 blob) and
// content.
type packObject struct {
	typ  byte
	data []byte
}

// packOf writes a version 2 pack of whole (undeltified) objects.
func packOf(objs []packObject) []byte {
	var b bytes.Buffer
	b.WriteString("PACK")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, uint32(len(objs)))
	for _, o := range objs {
		size := len(o.data)
		c := o.typ<<4 | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		z := zlib.NewWriter(&b)
		z.Write(o.data)
		z.Close()
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}
