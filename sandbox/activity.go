package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// The façade records each operation it hands over in the sandbox's
// activity record (package activity), whichever front end called: the
// event of a create, fork, delete, pause, resume, snapshot, milestone,
// rewind, merge, apply, service action and exec, with who acted
// (activity.Actor of the context: the front end sets it). Recording here,
// around the call to the concern, leaves no path of any front end out. The
// agents' file tools (read, write, patch, bash...) are recorded by the MCP
// server instead, as tool calls with their arguments and output.
//
// A record is written on the host, under the common git dir, by this
// process: nothing in a sandbox can reach it. Writing it costs a lock and
// one write(2) (about 50 µs); an event that cannot be written is a warning
// in the log, never the operation's error.

// note appends e to the activity record of sandbox slug of r, by the actor
// of ctx unless e.By is set, with err as its error and, when start is not
// zero, the time since start. A failed operation is noted only in a record
// that exists, and one that found no sandbox not at all: naming sandboxes
// that do not exist makes no records.
func (s *Sandboxes) note(ctx context.Context, r *api.Repo, slug string, e activity.Event, start time.Time, err error) {
	if r == nil || r.Git == nil {
		return
	}
	s.noteIn(ctx, r.Git.CommonDir, slug, e, start, err)
}

// noteIn is note for the repository whose common git dir is gitDir.
func (s *Sandboxes) noteIn(ctx context.Context, gitDir, slug string, e activity.Event, start time.Time, err error) {
	if gitDir == "" || !activity.ValidName(slug) {
		return
	}
	// A repository litterbox never made a sandbox in has no folder of
	// litterbox's; a git dir from an engine's label may be gone.
	if _, serr := os.Stat(filepath.Join(gitDir, "litterbox")); serr != nil {
		return
	}
	rec := activity.Record{Dir: activity.Dir(gitDir), Sandbox: slug}
	if err != nil {
		if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrInvalidName) {
			return
		}
		if _, serr := os.Stat(rec.Path()); serr != nil {
			return
		}
		e.Error = err.Error()
	}
	if e.By == "" {
		e.By = activity.Actor(ctx)
	}
	if !start.IsZero() && e.Ms == 0 {
		e.Ms = time.Since(start).Milliseconds()
	}
	if werr := rec.Append(e); werr != nil {
		s.c.Log.Warn("cannot write the activity record", "sandbox", slug, "err", werr)
	}
}

// changed is the files commit changed against its parent, for an event:
// one git call, made only when an operation made a commit.
func (s *Sandboxes) changed(ctx context.Context, r *api.Repo, commit string) []string {
	if commit == "" || r == nil || r.Git == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	files, err := r.Git.ChangedPaths(ctx, commit+"^", commit)
	if err != nil {
		return nil
	}
	return files
}

// slugOf is name's slug, or "" when it is not a valid name.
func slugOf(name string) string {
	slug, err := api.Slugify(name)
	if err != nil {
		return ""
	}
	return slug
}

// noteExit records that a service ended by itself, once, when litterbox
// learns of it: a service exits inside the sandbox, where no litterbox
// process watches, so its exit is known when a status comes back (any
// service action). The status comes from state files the agent can
// write (services.Status), so the event says where it comes from; it is
// about the agent's own sandbox and holds only checked fields.
func (s *Sandboxes) noteExit(ctx context.Context, h *api.Handle, st api.ServiceStatus) {
	if st.LastExitCode == nil || (st.State != "exited" && st.State != "backoff" && st.State != "dead") {
		return
	}
	run := fmt.Sprintf(" (restarts %d)", st.Restarts)
	if !st.StartedAt.IsZero() {
		run += ", started " + st.StartedAt.UTC().Format(time.RFC3339)
	}
	msg := st.State + ", as its supervisor in the sandbox reports" + run
	// Once per exit: the service's latest event in the record says
	// whether this run's exit is known, whatever state that report named
	// (a status read as the supervisor ends says "dead", the next one
	// "exited").
	evs, _ := activity.Last(activity.Dir(h.Repo.Git.CommonDir), h.Slug, 200)
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Kind != activity.KindService || e.Service != st.Name {
			continue
		}
		if e.Action == "exit" && strings.HasSuffix(e.Message, run) && e.Exit != nil && *e.Exit == *st.LastExitCode {
			return
		}
		break
	}
	code := *st.LastExitCode
	s.note(ctx, h.Repo, h.Slug, activity.Event{Kind: activity.KindService, By: activity.ByLitterbox, Service: st.Name, Action: "exit", Exit: &code, Message: msg}, time.Time{}, nil)
}
