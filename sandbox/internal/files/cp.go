package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
)

// cp copies files between the host and a sandbox, both ways, as docker cp
// does, through the provider's Exec of tar: the
// sandbox's tar runs as the sandbox user, the host's side is archive/tar
// (tarsafe.go). A copy in is a mutation and is snapshotted like a write.

// decodeSh sets $v to the path its argument encodes: arguments cross the
// engine's API as JSON strings, which would rewrite bytes that are not
// UTF-8, so paths travel as printf %b escapes (encodePath).
const decodeSh = `dec() { v=$(printf '%bx' "$1"); v=${v%x}; }
`

// cpInSh: $1 destination, $2 "into" (the archive's entries go into the
// folder $1) or "as" ($3, the archive's one top entry, becomes $1, or goes
// into $1 when that is a folder), $4 "dir" when $1 must be a folder; the
// archive on stdin. Prints "into" or "as".
const cpInSh = decodeSh + `dec "$1"; dst=$v; dec "$3"; top=$v
if [ "$2" = into ] || [ -d "$dst" ]; then
  [ -d "$dst" ] || { echo "$dst" >&2; exit 70; }
  tar -x -o -f - -C "$dst" || exit 1
  echo into; exit 0
fi
[ "$4" = dir ] && { echo "$dst" >&2; exit 70; }
par=${dst%/*}; [ -n "$par" ] || par=/
[ -d "$par" ] || { echo "$par" >&2; exit 70; }
t=$(mktemp -d "$par/.litterbox-cp.XXXXXX") || exit 1
tar -x -o -f - -C "$t" && mv -f "$t/$top" "$dst"; rc=$?
rm -rf "$t"; [ $rc -eq 0 ] && echo as; exit $rc`

// cpOutSh: $1 path. Writes a tar archive of it (a link as a link) whose
// entries all start with ./ and its last name.
const cpOutSh = decodeSh + `dec "$1"; p=$v
[ -e "$p" ] || [ -L "$p" ] || { echo "$p" >&2; exit 70; }
par=${p%/*}; [ -n "$par" ] || par=/
cd "$par" || exit 1
exec tar -c -f - "./${p##*/}"`

// encodePath escapes every byte of p that is not printable ASCII, and the
// backslash, as printf %b reads them.
func encodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c > 0x7e || c == '\\' {
			fmt.Fprintf(&b, `\0%03o`, c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// cpPath is a sandbox path for cp: like ContainerPath, but any name a file
// can have (a newline too), and hidden paths are the user's to copy.
func cpPath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", core.NewError(api.ErrBadPath, "Path %q holds a NUL character.", p)
	}
	if p == "" || p == "." {
		return api.Workdir, nil
	}
	abs := p
	if !path.IsAbs(p) {
		abs = path.Join(api.Workdir, p)
		if abs != api.Workdir && !strings.HasPrefix(abs, api.Workdir+"/") {
			return "", core.NewError(api.ErrBadPath, "Path %q climbs out of %s; give a path inside it, or an absolute path in the sandbox.", p, api.Workdir)
		}
	}
	return path.Clean(abs), nil
}

// CopyIn copies src, a host file or folder, to dst in the sandbox, as
// docker cp does: into dst when it is a folder, else as dst (its folder must
// exist). With src "-", in is a tar stream whose entries are extracted into
// the folder dst; an entry that could write outside it (an absolute name,
// "..", a path through a link the archive made, a device) refuses the whole
// stream before anything is copied. Modes are kept, links are copied as
// links. Then /src is snapshotted with the message "cp: PATH". A snapshot
// error comes with the result: the copy happened.
func (f *Files) CopyIn(ctx context.Context, h *api.Handle, src string, in io.Reader, dst string) (*api.CopyResult, *api.SnapshotResult, error) {
	abs, err := cpPath(dst)
	if err != nil {
		return nil, nil, err
	}
	spool, err := os.CreateTemp("", "litterbox-cp-*.tar")
	if err != nil {
		return nil, nil, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	res := &api.CopyResult{}
	mode, top := "into", ""
	if src == "-" {
		if res.Entries, err = cleanArchive(in, spool); err != nil {
			return nil, nil, err
		}
	} else {
		clean := filepath.Clean(src)
		if _, err := os.Lstat(clean); err != nil {
			return nil, nil, core.NewError(api.ErrNoFile, "%s: %v; nothing was copied.", src, err)
		}
		mode, top = "as", filepath.Base(clean)
		if top == string(filepath.Separator) || top == "." {
			return nil, nil, core.NewError(api.ErrBadPath, "copy a folder by its name, not %q", src)
		}
		if res.Entries, res.Skipped, err = archiveHost(clean, top, spool); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w; nothing was copied", src, err)
		}
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, nil, err
	}
	mustDir := ""
	if strings.HasSuffix(dst, "/") {
		mustDir = "dir"
	}
	var out, errOut bytes.Buffer
	_, err = f.Common.Exec(ctx, provider.ExecRequest{Ref: h.Ref, Kind: runner.Stream, Stdin: spool, Stdout: &out, Stderr: &errOut,
		Cmd: []string{"sh", "-c", cpInSh, "sh", encodePath(abs), mode, encodePath(top), mustDir}})
	if err != nil {
		if runner.ExitCode(err) == codeMissing {
			return nil, nil, core.NewError(api.ErrNoFile, "the folder %q does not exist in sandbox '%s'; make it first (litterbox exec %s -- mkdir -p DIR), or give an existing one. Nothing was copied.", strings.TrimSpace(errOut.String()), h.Slug, h.Slug)
		}
		return nil, nil, core.ExecError(h, "copy into the sandbox", core.WithStderr(err, errOut.String()))
	}
	landed := abs
	if mode == "as" && strings.TrimSpace(out.String()) == "into" {
		landed = path.Join(abs, filepath.ToSlash(top))
	}
	res.Path = core.DisplayPath(landed)
	snap, err := f.rec.Snapshot(ctx, h, "cp: "+res.Path)
	return res, snap, err
}

// CopyOut copies src, a file or folder in the sandbox, to the host as
// docker cp does: into dst when it is a folder, else as dst (its folder must
// exist). With dst "-" the tar stream goes to w as the sandbox's tar wrote
// it. Nothing is ever written outside the target: the archive is read on
// the host, each entry checked (see extract), links made as links and never
// followed, a hard link only to a file the copy made. It is staged beside
// the target and put in place only when the whole stream was read and the
// sandbox's side ended well: a copy that fails leaves nothing. Entries left
// out are in the result's Skipped, and the error is then ErrBadArchive.
func (f *Files) CopyOut(ctx context.Context, h *api.Handle, src, dst string, w io.Writer) (*api.CopyResult, error) {
	abs, err := cpPath(src)
	if err != nil {
		return nil, err
	}
	if abs == "/" {
		return nil, core.NewError(api.ErrBadPath, "copy a folder by its name, not /")
	}
	run := func(out io.Writer) error {
		var errOut bytes.Buffer
		_, err := f.Common.Exec(ctx, provider.ExecRequest{Ref: h.Ref, Kind: runner.Stream, Stdout: out, Stderr: &errOut,
			Cmd: []string{"sh", "-c", cpOutSh, "sh", encodePath(abs)}})
		if runner.ExitCode(err) == codeMissing {
			return core.NewError(api.ErrNoFile, "%s does not exist in sandbox '%s'; nothing was copied. List it with `litterbox exec %s -- ls -la DIR`.", core.DisplayPath(abs), h.Slug, h.Slug)
		}
		if err != nil {
			return core.ExecError(h, "copy out of the sandbox", core.WithStderr(err, errOut.String()))
		}
		return nil
	}
	if dst == "-" {
		return &api.CopyResult{Path: "-"}, run(w)
	}
	dir, name := dst, path.Base(abs)
	st, err := os.Stat(dst)
	switch {
	case err == nil && st.IsDir():
	case err == nil || errors.Is(err, fs.ErrNotExist):
		dir, name = filepath.Dir(dst), filepath.Base(dst)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, core.NewError(api.ErrNoFile, "the folder %s does not exist; make it first, or give an existing one. Nothing was copied.", dir)
		}
	default:
		return nil, err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(pw)
		pw.CloseWithError(err)
		done <- err
	}()
	// Staged, then put in place only once the sandbox's side ended well:
	// an abandoned copy leaves nothing behind.
	x, xerr := extract(pr, path.Base(abs), dir, name)
	pr.CloseWithError(errors.New("copy abandoned"))
	rerr := <-done
	if x != nil {
		defer x.discard()
	}
	if rerr != nil {
		return nil, rerr
	}
	if xerr == nil {
		xerr = x.commit()
	}
	if xerr != nil {
		return nil, fmt.Errorf("copy %s out of sandbox '%s': %w", core.DisplayPath(abs), h.Slug, xerr)
	}
	xr := x.res
	res := &api.CopyResult{Path: filepath.Join(dir, name), Entries: xr.Entries, Bytes: xr.Bytes, Skipped: xr.Skipped}
	if len(res.Skipped) > 0 {
		return res, core.NewError(api.ErrBadArchive, "%d entries of %s were not copied, since they could have written outside %s:\n%s", len(res.Skipped), core.DisplayPath(abs), res.Path, skippedList(res.Skipped))
	}
	return res, nil
}
