package activity

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Follower follows the records of a repository as they are written: what
// `litterbox watch` and the UI read. It is told of writes by the file
// system (inotify, kqueue), so it costs nothing while nothing happens; where
// it cannot be told, it looks every Poll.
type Follower struct {
	Dir string // Dir(gitDir)
	// Names are the sandboxes to follow; none means every one, those whose
	// record appears later included.
	Names []string
	// Since skips the events recorded before it in what the records hold
	// when the follower starts; zero shows all of that. Whatever is
	// appended afterwards is shown.
	Since time.Time
	// Poll is how often to look when the file system cannot notify
	// (DefaultPoll when 0).
	Poll time.Duration
}

// notify turns file system notices on; tests turn them off to prove the
// polling.
var notify = true

// DefaultPoll is how often a Follower looks when it cannot be notified.
const DefaultPoll = 250 * time.Millisecond

// Run calls fn with each batch of new events, oldest first, until ctx ends
// (then it returns nil). fn runs on Run's goroutine.
//
// Every event appended after the follower started is in a batch once, or
// counted: a follower that falls behind (fn slow to return, a machine
// under load) while the record rotates twice loses the file between, and
// then a KindMissed event, in place of those lost, says exactly how many
// they were (their numbers, Seq, skip). Nothing else is ever skipped.
func (f *Follower) Run(ctx context.Context, fn func([]Event)) error {
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	poll := f.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	w, err := fsnotify.NewWatcher()
	if err == nil && !notify {
		w.Close()
		err = errors.New("notices turned off")
	}
	if err == nil {
		if err = w.Add(f.Dir); err != nil {
			w.Close()
		}
	}
	var events chan fsnotify.Event
	var errs chan error
	var tick <-chan time.Time
	if err == nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	} else {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	s := &follow{f: f, tails: map[string]*tail{}, since: f.Since}
	defer s.close()
	batch := s.scan(nil)
	// A record that appears from now on holds only what came after.
	s.since = time.Time{}
	if len(batch) > 0 {
		fn(batch)
	}
	for {
		dirty := map[string]bool{}
		rescan := false
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			rescan = true
		case err := <-errs:
			// The queue overflowed, or the watch broke: look at everything.
			_ = err
			rescan = true
		case ev := <-events:
			s.note(ev, dirty)
			// Take every notice already queued, so a burst of writes is
			// one read per record.
		drain:
			for {
				select {
				case ev := <-events:
					s.note(ev, dirty)
				default:
					break drain
				}
			}
		}
		var batch []Event
		if rescan {
			batch = s.scan(nil)
		} else {
			batch = s.scan(dirty)
		}
		if len(batch) > 0 {
			fn(batch)
		}
	}
}

// follow is a Follower's state while it runs.
type follow struct {
	f     *Follower
	tails map[string]*tail
	since time.Time // of the records not open yet
}

func (s *follow) wanted(slug string) bool {
	return len(s.f.Names) == 0 || slices.Contains(s.f.Names, slug)
}

// note marks the record a file system notice is about.
func (s *follow) note(ev fsnotify.Event, dirty map[string]bool) {
	name := filepath.Base(ev.Name)
	if slug, ok := recordName(name); ok && s.wanted(slug) {
		dirty[slug] = true
	} else if slug, ok := oldName(name); ok && s.wanted(slug) {
		dirty[slug] = true
	}
}

// scan reads what is new in the records of only (every record when only is
// nil, looking for new ones too).
func (s *follow) scan(only map[string]bool) []Event {
	var slugs []string
	if only == nil {
		all, _ := Sandboxes(s.f.Dir)
		for _, slug := range all {
			if s.wanted(slug) {
				slugs = append(slugs, slug)
			}
		}
	} else {
		for slug := range only {
			slugs = append(slugs, slug)
		}
	}
	var runs [][]Event
	for _, slug := range slugs {
		var out []Event
		t := s.tails[slug]
		if t == nil {
			var err error
			if t, out, err = s.open(slug, nil); err != nil {
				continue // not there (yet), or unreadable: the next notice retries
			}
			s.tails[slug] = t
		} else {
			out = t.follow(nil)
		}
		if len(out) > 0 {
			runs = append(runs, out)
		}
	}
	return mergeRuns(runs)
}

// mergeRuns merges records' runs of events by time, each run kept in its
// order (the order it was written: concurrent writers stamp times a little
// out of that order).
func mergeRuns(runs [][]Event) []Event {
	if len(runs) == 1 {
		return runs[0]
	}
	var out []Event
	for {
		best := -1
		for i, r := range runs {
			if len(r) > 0 && (best < 0 || r[0].Time.Before(runs[best][0].Time)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, runs[best][0])
		runs[best] = runs[best][1:]
	}
}

// open starts following a record: its kept events older than its older
// file, that file, then the newest from its start, from Since on.
func (s *follow) open(slug string, out []Event) (*tail, []Event, error) {
	r := Record{Dir: s.f.Dir, Sandbox: slug}
	for range 3 {
		f, err := os.Open(r.Path())
		if err != nil {
			return nil, out, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, out, err
		}
		t := &tail{path: r.Path(), old: r.OldPath(), slug: slug, f: f, fi: fi, since: s.since, link: linker{slug: slug}}
		var old []Event
		if data, err := os.ReadFile(r.OldPath()); err == nil {
			old = parseSeq(data, s.since, nil, &t.last, &t.link)
		}
		// A rotation between the two opens would show the same events
		// twice: then start again.
		if now, err := os.Stat(r.Path()); err != nil || !os.SameFile(now, fi) {
			f.Close()
			continue
		}
		// What was there: the kept events older than the record's
		// (keep.go), its older file, its newest.
		// Where numbers skip there, a note says how many are gone.
		out = append(out, Gaps(withKept(s.f.Dir, slug, t.read(old), s.since))...)
		t.since = time.Time{} // what is appended from now on is new
		return t, out, nil
	}
	return nil, out, errors.New("the record rotates too fast to open")
}

func (s *follow) close() {
	for _, t := range s.tails {
		t.f.Close()
	}
}

// tail is one record being followed: the file open and what of it was read.
type tail struct {
	path, old string
	slug      string
	f         *os.File
	fi        os.FileInfo // of f
	partial   []byte      // the start of a line not yet whole
	since     time.Time   // while reading what was there at the start
	last      int64       // the number (Seq) of the last line read
	link      linker      // the chain of the lines read (chain.go)
}

// take adds evs to out, noting how many were never read where their
// numbers skip. A number at or below the last one read starts a numbering
// anew (the record was removed and begun again, or a litterbox that did
// not number its lines wrote between): its events are shown, never taken
// for ones read before.
func (t *tail) take(out []Event, evs []Event) []Event {
	for _, e := range evs {
		if e.Kind == KindBroken {
			out = append(out, e) // its number is the next line's
			continue
		}
		if e.Seq > 0 && t.last > 0 && e.Seq > t.last+1 {
			out = append(out, Event{Time: e.Time, Sandbox: t.slug, Kind: KindMissed, Seq: t.last + 1, Missed: e.Seq - t.last - 1})
		}
		if e.Seq > 0 {
			t.last = e.Seq
		}
		out = append(out, e)
	}
	return out
}

// follow reads what was appended, then, when the record rotated, the rest
// of the file it had open and the new one.
func (t *tail) follow(out []Event) []Event {
	out = t.read(out)
	now, err := os.Stat(t.path)
	if err != nil || os.SameFile(now, t.fi) {
		return out
	}
	// Rotated: whatever was written to the old file was written before the
	// rename this Stat saw, so one more read has all of it.
	out = t.read(out)
	t.partial = nil
	if old, err := os.Stat(t.old); err == nil && !os.SameFile(old, t.fi) {
		// It rotated twice: the file between is the older one now, unless
		// it rotated a third time, which loses it.
		if f, err := os.Open(t.old); err == nil {
			if data, err := io.ReadAll(f); err == nil {
				out = t.take(out, parseSeq(data, t.since, nil, nil, &t.link))
			}
			f.Close()
		}
	}
	f, err := os.Open(t.path)
	if err != nil {
		return out
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return out
	}
	t.f.Close()
	t.f, t.fi = f, fi
	return t.read(out)
}

// readChunk is how much a tail reads at a time.
const readChunk = 256 << 10

// read decodes the whole lines appended since the last read.
func (t *tail) read(out []Event) []Event {
	buf := make([]byte, readChunk)
	for {
		n, err := t.f.Read(buf)
		if n > 0 {
			data := append(t.partial, buf[:n]...)
			end := len(data)
			for end > 0 && data[end-1] != '\n' {
				end--
			}
			if t.since.IsZero() {
				out = t.take(out, parseSeq(data[:end], t.since, nil, nil, &t.link))
			} else {
				// what was there at the start: numbers noted, nothing
				// before since shown
				out = parseSeq(data[:end], t.since, out, &t.last, &t.link)
			}
			t.partial = append([]byte(nil), data[end:]...)
			if len(t.partial) > maxLine {
				t.partial = nil // not a line Append wrote
			}
		}
		if err != nil || n < len(buf) {
			return out
		}
	}
}
