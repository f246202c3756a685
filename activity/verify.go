package activity

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/flock"
)

// ChainReport is what Verify found of one chain of a record (chain.go).
type ChainReport struct {
	Name  string `json:"name"`  // "record", "egress store"...
	Files int    `json:"files"` // of its files, those there
	Lines int    `json:"lines"` // lines read
	// Unlinked counts the lines written before litterbox linked its lines
	// that no line links to: not checked.
	Unlinked int `json:"unlinked,omitempty"`
	// First and Last are the numbers of its first and last lines read.
	First int64 `json:"first,omitempty"`
	Last  int64 `json:"last,omitempty"`
	// Notes say what is not a break: files Tidy removed, a head behind.
	Notes []string `json:"notes,omitempty"`
	// Broken names the first line that does not follow the one before it,
	// a gap, a cut, a file gone missing; "" when the chain is whole.
	Broken string `json:"broken,omitempty"`
}

// Report is what Verify found of a record.
type Report struct {
	Sandbox string        `json:"sandbox"`
	Chains  []ChainReport `json:"chains"`
}

// OK reports whether every chain of the record is whole.
func (r Report) OK() bool {
	for _, c := range r.Chains {
		if c.Broken != "" {
			return false
		}
	}
	return true
}

// Audited lists the sandboxes that have a record in dir, or had one whose
// heads are left (in its lock file), sorted.
func Audited(dir string) ([]string, error) {
	return listNames(dir, func(e os.DirEntry) (string, bool) {
		if slug, ok := strings.CutSuffix(e.Name(), ".lock"); ok && ValidName(slug) {
			fi, err := e.Info()
			return slug, err == nil && fi.Size() > 0
		}
		return recordName(e.Name())
	})
}

// chainFiles is what a chain's files and head held when read.
type chainFiles struct {
	data [][]byte // by file, nil when it is not there
	head head
}

// Verify walks each chain of the record of slug in dir (the record, its
// stores of kept events) from its first line to its head, and names, in
// each, the first line that does not follow the one before it: a line
// changed or taken out, numbers that skip, a cut at the end, a file gone
// that Tidy did not remove. It reads the files under the record's lock, so
// no append is seen half written.
func Verify(dir, slug string) (Report, error) {
	if !ValidName(slug) {
		return Report{}, fmt.Errorf("%q is not a sandbox name", slug)
	}
	r := Record{Dir: dir, Sandbox: slug}
	chains := r.chains()
	read := make([]chainFiles, len(chains))
	var notes []byte
	err := func() error {
		lf, unlock, err := flock.LockFile(r.lockPath())
		if err != nil {
			return err
		}
		defer unlock()
		heads := readHeads(lf, len(chains))
		for i, c := range chains {
			for _, p := range c.files {
				data, err := os.ReadFile(p)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				if err == nil && data == nil {
					data = []byte{}
				}
				read[i].data = append(read[i].data, data)
			}
			read[i].head = heads[c.slot]
		}
		notes, _ = os.ReadFile(r.prunedPath())
		return nil
	}()
	if err != nil {
		return Report{}, fmt.Errorf("verify the record of %s: %w", slug, err)
	}
	rep := Report{Sandbox: slug}
	for i, c := range chains {
		if cr := c.verify(read[i], notes); cr.Files > 0 || read[i].head.ok || c.name == "record" {
			rep.Chains = append(rep.Chains, cr)
		}
	}
	return rep, nil
}

// verify walks c as f holds it.
func (c chain) verify(f chainFiles, notes []byte) ChainReport {
	rep := ChainReport{Name: c.name}
	var lk linker
	var lastAt where     // where the last line read is
	var atHead string    // the hash of the line numbered as the head says
	var missing []string // files not there
	for i, data := range f.data {
		name := filepath.Base(c.files[i])
		if data == nil {
			missing = append(missing, name)
			continue
		}
		rep.Files++
		for n := 1; len(data) > 0; n++ {
			at := where{name, n}
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 {
				rep.Broken = at.String() + " is cut short (it has no end of line): the end of the file was cut"
				return rep
			}
			line := data[:nl]
			data = data[nl+1:]
			seq, prev := lineSeq(line), linePrev(line)
			if lk.hash == "" && prev != "" {
				// the first line read that carries a link
				switch {
				case lk.seq == 0 && rep.Lines == 0 && i > 0 && f.data[i-1] == nil:
					before := filepath.Base(c.files[i-1])
					when, ok := pruned(notes, before, prev)
					if !ok {
						rep.Broken = fmt.Sprintf("%s is missing, or lines were taken from the start: %s, the first line left, follows a line that is not there", before, at)
						return rep
					}
					rep.Notes = append(rep.Notes, fmt.Sprintf("%s was removed by litterbox at %s, the folder being over its bound", before, when))
				case rep.Lines == 0 && (c.whole || (c.numbered && seq == 1)):
					rep.Broken = fmt.Sprintf("%s follows a line that is not there: lines were taken from the start", at)
					return rep
				}
			} else if lk.hash != "" {
				switch {
				case prev == "" && lk.chained:
					rep.Broken = fmt.Sprintf("%s carries no link to %s, as every line after the first that did must", at, lastAt)
				case prev != "" && prev != lk.hash && c.numbered && seq > lk.seq+1:
					rep.Broken = fmt.Sprintf("%s (event %d) does not follow %s (event %d): %s taken out", at, seq, lastAt, lk.seq, events(lk.seq+1, seq-1))
				case prev != "" && prev != lk.hash:
					rep.Broken = fmt.Sprintf("%s does not follow %s (event %d): one of them was changed after it was written", at, lastAt, lk.seq)
				case c.numbered && lk.seq > 0 && seq != lk.seq+1:
					rep.Broken = fmt.Sprintf("%s is event %d, after event %d (%s)", at, seq, lk.seq, lastAt)
				case !c.numbered && seq <= lk.seq:
					rep.Broken = fmt.Sprintf("%s is event %d, after event %d (%s): out of order", at, seq, lk.seq, lastAt)
				}
				if rep.Broken != "" {
					return rep
				}
			}
			// (the first line of a chain follows nothing: the next one shows
			// whether it was linked)
			if prev == "" && !lk.chained && (rep.Lines > 0 || !(c.whole || seq == 1)) {
				rep.Unlinked++
			}
			lk.seq, lk.hash = seq, lineHash(line)
			lk.chained = lk.chained || prev != ""
			if rep.First == 0 {
				rep.First = seq
			}
			rep.Last, lastAt = seq, at
			if f.head.ok && seq == f.head.seq {
				atHead = lk.hash
			}
			rep.Lines++
		}
	}
	h := f.head
	newest := filepath.Base(c.newest())
	switch {
	case !f.head.ok && lk.chained:
		rep.Broken = "its head is missing from the record's lock file: a cut at its end would not show"
	case !f.head.ok:
		rep.Unlinked = rep.Lines
	case rep.Lines == 0:
		if when, ok := pruned(notes, newest, h.hash); ok {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s was removed by litterbox at %s, the folder being over its bound", newest, when))
		} else {
			rep.Broken = fmt.Sprintf("%s is gone: its head says it ended at event %d", strings.Join(missing, " and "), h.seq)
		}
	case lk.hash == h.hash:
	case atHead == h.hash:
		rep.Notes = append(rep.Notes, fmt.Sprintf("the lines after event %d were written by a litterbox stopped before it noted them in the head", h.seq))
	case f.data[len(f.data)-1] == nil:
		rep.Broken = fmt.Sprintf("%s is missing: the chain ends at %s (event %d), its head says event %d", newest, lastAt, lk.seq, h.seq)
	case h.seq > lk.seq:
		rep.Broken = fmt.Sprintf("it ends at %s (event %d), its head says event %d: its end was cut", lastAt, lk.seq, h.seq)
	default:
		rep.Broken = fmt.Sprintf("%s (event %d) is not the line its head names: it was changed after it was written", lastAt, lk.seq)
	}
	return rep
}

// where is a line of a file, as verify names it.
type where struct {
	file string
	line int
}

func (w where) String() string { return fmt.Sprintf("%s line %d", w.file, w.line) }

// events names the events from a to b.
func events(a, b int64) string {
	if a == b {
		return fmt.Sprintf("event %d was", a)
	}
	return fmt.Sprintf("events %d to %d were", a, b)
}
