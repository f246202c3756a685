package git

import (
	"bytes"
	"errors"
	"slices"
)

// PatchLimits bound what a PatchCutter holds of a patch, and how much of
// it it reads: a screen shows a screenful, so a diff of gigabytes, or of
// one line of 34 MB, must cost neither the memory nor the time of all of it.
type PatchLimits struct {
	Files     int   // files listed at most (ListFiles)
	NameBytes int   // bytes of their names, at most
	Lines     int   // lines held, in all
	Bytes     int   // bytes held, in all
	LineBytes int   // bytes held of one line (at least 11: "diff --git "); the rest is counted, not held
	Read      int64 // bytes read at most: past them the cutter refuses more, which stops git
}

// DefaultPatchLimits are the UI's: 100,000 files and 16 MiB of names
// listed, 50,000 lines and 8 MiB held, 512 bytes of a line (wider than a
// terminal), 256 MiB read.
var DefaultPatchLimits = PatchLimits{Files: 100000, NameBytes: 16 << 20, Lines: 50000, Bytes: 8 << 20, LineBytes: 512, Read: 256 << 20}

// ErrPatchRead is what a PatchCutter answers a write past its read limit.
var ErrPatchRead = errors.New("the patch was read up to its limit")

// PatchLine is a line of a patch as held: its first bytes, without the
// newline, and how many bytes of it were not held.
type PatchLine struct {
	Text string
	Cut  int
}

// PatchFile is what a PatchCutter holds of one file's part of a patch.
type PatchFile struct {
	// Headers is how many `diff --git` lines git writes for the file: 2
	// when its type changes, else 1.
	Headers int
	Lines   []PatchLine
	Total   int  // lines of its part that were read, its header included
	Reached bool // its header was read
}

// Dropped is how many lines of the file's part were read but not held.
func (f PatchFile) Dropped() int { return f.Total - len(f.Lines) }

// CutLines is how many of the lines held were cut short, and the bytes
// they lost.
func (f PatchFile) CutLines() (lines, bytes int) {
	for _, l := range f.Lines {
		if l.Cut > 0 {
			lines++
			bytes += l.Cut
		}
	}
	return lines, bytes
}

// PatchCutter is an io.Writer that keeps a patch of a known list of files
// (PlainPatch's output, DiffFiles' list) within its limits, file by file:
// the `diff --git` lines start the list's files in its order, one each,
// but two for a file whose type changes (a file become a symlink: git
// writes its deletion and its creation), and no other line of a patch
// starts so (body lines start with ' ', '+', '-', '@' or '\', and git
// quotes a name holding a newline). The lines are shared out before
// reading, from the list's counts: a file that needs less than an
// even share gets what it needs, the rest is split evenly among the
// others, and what a file leaves unused passes to the next; so no file,
// however long, keeps the files after it from being shown. It never holds
// more than one line's LineBytes between writes.
type PatchCutter struct {
	Files []PatchFile
	// Stray counts lines outside any file of the list: before the first
	// header (a patch that does not match its list, which the caller must
	// say), or past the last file kept (Beyond, when the list was cut).
	Stray, Beyond int
	// Mismatch says a header named another file than the list's for its
	// place (checked where the name needs no quoting): the patch does not
	// match its list, which the caller must say.
	Mismatch bool
	// Read is the bytes read; Stopped says reading stopped at the limit,
	// so the files not Reached were never read.
	Read    int64
	Stopped bool

	lim     PatchLimits
	paths   []string // the list's names, for the check of headers
	shares  []int    // the lines each file may hold
	listCut bool     // the list holds the first files only

	cur     int    // the file being read, -1 before the first
	heads   int    // its headers read
	line    []byte // the current line's held bytes
	lineCut int    // and the bytes of it not held

	held, heldBytes       int // held in all
	allowLines, allowByte int // what the current file may still hold
}

// NewPatchCutter is a cutter for a patch of files: the first files of it
// when listCut says the list was cut.
func NewPatchCutter(files []FileChange, listCut bool, lim PatchLimits) *PatchCutter {
	needs := make([]int, len(files))
	for i, f := range files {
		// at most: its header, and each line changed in a hunk of its
		// own (@@, three lines of context each side); what a file leaves
		// unused passes on
		needs[i] = 8 + 8*(f.Added+f.Deleted)
	}
	c := &PatchCutter{Files: make([]PatchFile, len(files)), lim: lim, cur: -1, shares: shareOut(needs, lim.Lines), listCut: listCut}
	for i, f := range files {
		c.paths = append(c.paths, f.Path)
		c.Files[i].Headers = 1
		if f.TypeChanged() {
			c.Files[i].Headers = 2
		}
	}
	return c
}

// shareOut splits total among needs: each gets what it needs, or an even
// share of what the smaller needs left, whichever is less.
func shareOut(needs []int, total int) []int {
	order := make([]int, len(needs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return needs[a] - needs[b] })
	shares := make([]int, len(needs))
	left := total
	for k, i := range order {
		shares[i] = min(needs[i], left/(len(order)-k))
		left -= shares[i]
	}
	return shares
}

// Write takes the next bytes of the patch; past the read limit it takes
// what fits and answers ErrPatchRead.
func (c *PatchCutter) Write(p []byte) (int, error) {
	var stop bool
	if left := c.lim.Read - c.Read; int64(len(p)) > left {
		p, stop = p[:max(left, 0)], true
	}
	n := len(p)
	c.Read += int64(n)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if room := c.lim.LineBytes - len(c.line); room > 0 {
			k := min(room, len(part))
			c.line = append(c.line, part[:k]...)
			c.lineCut += len(part) - k
		} else {
			c.lineCut += len(part)
		}
		if i < 0 {
			break
		}
		c.endLine()
		p = p[i+1:]
		if c.listCut && c.cur >= len(c.Files) {
			stop = true // past the files listed: the rest is not read
			break
		}
	}
	if stop {
		c.Stopped = true
		return n, ErrPatchRead
	}
	return n, nil
}

// Close ends a last line that has no newline.
func (c *PatchCutter) Close() error {
	if len(c.line) > 0 || c.lineCut > 0 {
		c.endLine()
	}
	return nil
}

func (c *PatchCutter) endLine() {
	if bytes.HasPrefix(c.line, []byte("diff --git ")) && c.cur >= 0 && c.cur < len(c.Files) && c.heads < c.Files[c.cur].Headers {
		c.heads++ // the creation half of a type change
	} else if bytes.HasPrefix(c.line, []byte("diff --git ")) {
		c.heads = 1
		if c.cur >= 0 {
			// what the file left unused passes on
			c.allowLines, c.allowByte = max(c.allowLines, 0), max(c.allowByte, 0)
		}
		c.cur++
		if c.cur < len(c.Files) {
			if p := c.paths[c.cur]; plainName(p) && string(c.line) != "diff --git a/"+p+" b/"+p && len(c.line) < c.lim.LineBytes {
				c.Mismatch = true
			}
			c.Files[c.cur].Reached = true
			c.allowLines += c.shares[c.cur]
			c.allowByte += int(int64(c.lim.Bytes) * int64(c.shares[c.cur]) / int64(max(c.lim.Lines, 1)))
		}
	}
	if c.cur >= len(c.Files) && c.listCut {
		c.Beyond++
	} else if c.cur < 0 || c.cur >= len(c.Files) {
		c.Stray++
	} else {
		f := &c.Files[c.cur]
		f.Total++
		n := len(c.line)
		if c.allowLines > 0 && c.allowByte >= n && c.held < c.lim.Lines && c.heldBytes+n <= c.lim.Bytes {
			f.Lines = append(f.Lines, PatchLine{Text: string(c.line), Cut: c.lineCut})
			c.allowLines--
			c.allowByte -= n
			c.held++
			c.heldBytes += n
		}
	}
	c.line, c.lineCut = c.line[:0], 0
}

// plainName reports whether git writes path in a header as it is: no
// byte it quotes (controls, '"', '\\', anything not ASCII, which
// core.quotePath may quote).
func plainName(p string) bool {
	for i := 0; i < len(p); i++ {
		if b := p[i]; b < 0x20 || b >= 0x7f || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}
