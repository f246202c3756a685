package git

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// TreeArchive writes a tar of commit's tree exactly as stored. git archive
// is not used because it honours export-ignore and export-subst in
// .gitattributes: a sandbox filled by it would lack or alter those files,
// and its first snapshot would record that as the agent's change.
//
// One ls-tree lists the entries and one cat-file --batch streams the blobs,
// in the same order, straight into the tar. The extra files follow the
// tree's, in the same tar (one stream, one extraction).
func (g *Repo) TreeArchive(ctx context.Context, commit string, w io.Writer, extra ...ArchiveFile) error {
	ls, err := g.R.Run(ctx, g.Cmd("ls-tree", "-r", "-t", "-z", "--full-tree", "--end-of-options", commit))
	if err != nil {
		return err
	}
	entries, err := ParseLsTree(ls.Stdout)
	if err != nil {
		return err
	}
	var ids bytes.Buffer
	for _, e := range entries {
		if e.Type == "blob" {
			ids.WriteString(e.ID + "\n")
		}
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- writeTar(pr, entries, w, time.Now(), extra)
		pr.Close()
	}()
	_, err = g.R.Run(ctx, g.Cmd("cat-file", "--batch").WithStdin(&ids).WithStdout(pw))
	pw.CloseWithError(err)
	if terr := <-done; terr != nil && err == nil {
		err = terr
	}
	return err
}

// LsEntry is one line of ls-tree -r -t.
type LsEntry struct {
	Mode, Type, ID, Path string
}

// ParseLsTree parses NUL-terminated `git ls-tree -z` output.
func ParseLsTree(out []byte) ([]LsEntry, error) {
	var list []LsEntry
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 {
			return nil, fmt.Errorf("ls-tree: bad entry %q", rec)
		}
		list = append(list, LsEntry{Mode: f[0], Type: f[1], ID: f[2], Path: path})
	}
	return list, nil
}

// ArchiveFile is a regular file TreeArchive adds after the tree's: its
// path (relative, clean), whether it is executable, and its content.
type ArchiveFile struct {
	Path       string
	Executable bool
	Data       []byte
}

// writeTar reads blobs in entries' order from a cat-file --batch stream and
// writes the tar, then extra. Trees and submodules become directories.
func writeTar(batch io.Reader, entries []LsEntry, w io.Writer, when time.Time, extra []ArchiveFile) error {
	br := bufio.NewReaderSize(batch, 1<<16)
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.Path, ModTime: when, Mode: 0o644, Typeflag: tar.TypeReg}
		if e.Type != "blob" {
			h.Name, h.Typeflag, h.Mode = e.Path+"/", tar.TypeDir, 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("cat-file: %w", err)
		}
		oid, _, size, err := ParseBatchHeader(strings.TrimSuffix(line, "\n"))
		if err != nil || oid != e.ID {
			return fmt.Errorf("cat-file: unexpected header %q for %q", line, e.Path)
		}
		switch e.Mode {
		case "120000":
			target := make([]byte, size)
			if _, err := io.ReadFull(br, target); err != nil {
				return err
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, string(target), 0o777
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		default:
			if e.Mode == "100755" {
				h.Mode = 0o755
			}
			h.Size = size
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, br, size); err != nil {
				return err
			}
		}
		if _, err := br.Discard(1); err != nil { // the newline after each object
			return err
		}
	}
	if err := addFiles(tw, extra, when); err != nil {
		return err
	}
	return tw.Close()
}

// WriteFiles writes a tar of files alone.
func WriteFiles(w io.Writer, files []ArchiveFile) error {
	tw := tar.NewWriter(w)
	if err := addFiles(tw, files, time.Now()); err != nil {
		return err
	}
	return tw.Close()
}

func addFiles(tw *tar.Writer, files []ArchiveFile, when time.Time) error {
	for _, f := range files {
		h := &tar.Header{Name: f.Path, ModTime: when, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		if f.Executable {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	return nil
}
