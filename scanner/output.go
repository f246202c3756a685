package scanner

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/textcap"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// A command's output reaches the agent inside a response of bounded size.
// The scanner (this code, run in the container) keeps the head and the tail
// of each stream in memory, writes the whole stream to a file in the
// sandbox's /tmp once it outgrows what can be shown, and fits what it shows
// into the budget by its JSON weight: 2 MB of NUL bytes weighs 12 MB as
// JSON. The result says where each stream was cut and which file holds it.

// Limits of command output.
const (
	// OutputDir is where the whole output of a cut stream is kept.
	OutputDir = "/tmp/litterbox-output"
	// MaxOutputFile is the most of a stream its file keeps.
	MaxOutputFile = 16 << 20
	// keepOutputFiles is how many output files OutputDir keeps; older ones
	// are removed, since /tmp is memory (a quarter of the sandbox's).
	keepOutputFiles = 10
)

// capture keeps the first and last max bytes written to it, counts all of
// them, and, once they outgrow max, copies everything to a file (up to
// MaxOutputFile).
type capture struct {
	max   int
	path  string // "" keeps no file
	head  []byte
	tail  []byte // the last bytes past head, up to 2*max before trimming
	total int64
	file  *os.File
	fileN int64
	err   error // the file could not be written
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	rest := p
	if room := c.max - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	c.tail = append(c.tail, rest...)
	if len(c.tail) > 2*c.max {
		c.tail = append(c.tail[:0:0], c.tail[len(c.tail)-c.max:]...)
	}
	if c.total > int64(c.max) && c.path != "" && c.err == nil {
		if c.file == nil {
			c.open(p)
		} else {
			c.toFile(p)
		}
	}
	return len(p), nil
}

// open creates the file with what came before p, then p.
func (c *capture) open(p []byte) {
	if c.err = os.MkdirAll(filepath.Dir(c.path), 0o700); c.err != nil {
		return
	}
	if c.file, c.err = os.OpenFile(c.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600); c.err != nil {
		return
	}
	before := c.total - int64(len(p))
	// Everything before p is in head: the file opens on the first write
	// past max.
	c.toFile(c.head[:before])
	c.toFile(p)
}

func (c *capture) toFile(p []byte) {
	p = p[:min(int64(len(p)), MaxOutputFile-c.fileN)]
	if len(p) == 0 || c.err != nil {
		return
	}
	n, err := c.file.Write(p)
	c.fileN += int64(n)
	c.err = err
}

// whole reports whether head holds every byte written.
func (c *capture) whole() bool { return c.total <= int64(len(c.head)) }

// shown is what fit made of one stream.
type shown struct {
	text string // valid UTF-8, cut with a note where needed
	cut  bool   // not all of the stream is in text (or not as it was)
}

// finish fits the two streams into budget bytes of JSON, keeps the files of
// those cut or altered (writing a file now for a stream that was small but
// not UTF-8), removes the others, and fills res.
func finish(res *wire.RunResult, stdout, stderr *capture, budget int) {
	// A stream shown whole but not as it was (not UTF-8), or cut only to
	// make room for the other, gets its file now; a file that could not be
	// written is not named, so the fit runs again without it.
	out, errOut := fitStreams(stdout, stderr, budget)
	for _, c := range []struct {
		c   *capture
		cut bool
	}{{stdout, out.cut}, {stderr, errOut.cut}} {
		if c.cut && c.c.path != "" && c.c.file == nil && c.c.err == nil {
			c.c.open(nil)
		}
		if c.c.err != nil {
			c.c.path = ""
		}
	}
	out, errOut = fitStreams(stdout, stderr, budget)
	for _, s := range []struct {
		c    *capture
		sh   shown
		text *string
		file *string
		n    *int64
		cut  *bool
	}{{stdout, out, &res.Stdout, &res.StdoutFile, &res.StdoutBytes, &res.StdoutTruncated},
		{stderr, errOut, &res.Stderr, &res.StderrFile, &res.StderrBytes, &res.StderrTruncated}} {
		*s.text, *s.n, *s.cut = s.sh.text, s.c.total, s.sh.cut
		if s.c.file != nil {
			s.c.file.Close()
			if s.sh.cut && s.c.path != "" {
				*s.file = s.c.path
			} else {
				os.Remove(s.c.file.Name())
			}
		}
	}
	if stdout.path != "" || stderr.path != "" || res.StdoutFile != "" || res.StderrFile != "" {
		pruneOutputs(OutputDir)
	}
}

// fitStreams decides what of each stream is shown: both whole when they
// fit, else each gets half the budget (a stream that needs less leaves the
// rest to the other), shown as its head and tail around a note.
func fitStreams(stdout, stderr *capture, budget int) (shown, shown) {
	cost := func(c *capture) int {
		if !c.whole() {
			return budget + 1
		}
		return textcap.Len(string(c.head))
	}
	co, ce := cost(stdout), cost(stderr)
	switch {
	case co+ce <= budget:
		return fitStream(stdout, "stdout", co), fitStream(stderr, "stderr", ce)
	case co <= budget/2:
		return fitStream(stdout, "stdout", co), fitStream(stderr, "stderr", budget-co)
	case ce <= budget/2:
		return fitStream(stdout, "stdout", budget-ce), fitStream(stderr, "stderr", ce)
	}
	return fitStream(stdout, "stdout", budget/2), fitStream(stderr, "stderr", budget-budget/2)
}

// fitStream shows one stream in at most budget bytes of JSON.
func fitStream(c *capture, name string, budget int) shown {
	if c.whole() && textcap.Len(string(c.head)) <= budget {
		text, altered := textcap.Valid(string(c.head))
		if altered {
			text += noteAltered(c, name)
		}
		return shown{text: text, cut: altered}
	}
	note := func(cut int64) string {
		where := "it was not kept"
		switch {
		case c.path != "" && c.total > MaxOutputFile:
			where = fmt.Sprintf("the first %d MiB of the %s are in %s", MaxOutputFile>>20, name, c.path)
		case c.path != "":
			where = "the whole " + name + " is in " + c.path
		}
		return fmt.Sprintf("\n[litterbox: %d bytes cut here; %s (%d bytes in all): read it with bash (head -c, tail -c, sed -n 'A,Bp', od -c for binary)]\n", cut, where, c.total)
	}
	room := max(budget-textcap.Len(note(c.total)), 0)
	head, tail := string(c.head), string(c.tail)
	if c.whole() {
		tail = head
	}
	h := textcap.Prefix(head, room/2)
	t := textcap.Suffix(tail, room-textcap.Len(head[:h]))
	if c.whole() && t < h {
		t = h
	}
	headText, _ := textcap.Valid(head[:h])
	tailText, _ := textcap.Valid(tail[t:])
	cut := c.total - int64(h) - int64(len(tail)-t)
	return shown{text: headText + note(cut) + tailText, cut: true}
}

func noteAltered(c *capture, name string) string {
	if c.path == "" {
		return "\n[litterbox: bytes that are not UTF-8 are shown as \uFFFD]\n"
	}
	return fmt.Sprintf("\n[litterbox: bytes that are not UTF-8 are shown as \uFFFD; the %s as it was is in %s]\n", name, c.path)
}

// pruneOutputs keeps the newest keepOutputFiles files of dir.
func pruneOutputs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= keepOutputFiles {
		return
	}
	// Names start with a sortable time.
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-stdout") || strings.HasSuffix(e.Name(), "-stderr") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names[:max(len(names)-keepOutputFiles, 0)] {
		os.Remove(filepath.Join(dir, n))
	}
}
