// Package oplog does the operations of the sandbox service that the
// sandbox's activity record notes: each one is handed to the concern that
// does it, then noted.
//
// The service records each operation a front end asks of it in the sandbox's
// activity record (package activity), whichever front end called: the
// event of a create, fork, delete, pause, resume, snapshot, milestone,
// rewind, merge, apply, service action and exec, with who acted
// (activity.Actor of the context: the front end sets it). Recording here,
// around the call to the concern, where the façade sends every one of
// those operations, leaves no path of any front end out. The
// agents' file tools (read, write, patch, bash...) are recorded by the MCP
// server instead, as tool calls with their arguments and output.
//
// A record is written on the host, under the common git dir, by this
// process: nothing in a sandbox can reach it. Writing it costs a lock and
// one write(2) (about 50 µs); an event that cannot be written is a warning
// in the log, never the operation's error.
package oplog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/files"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pause"
	"github.com/litterbox-dev/litterbox/sandbox/internal/provision"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/review"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
)

// Ops are the noted operations, over the concerns that do them.
type Ops struct {
	c        *core.Common
	inv      *inventory.Inventory
	services *services.Supervisor
	rec      *recording.Recorder
	files    *files.Files
	prov     *provision.Provisioner
	review   *review.Reviewer
	pause    *pause.Pauser
}

// New is the operations done by these concerns, noted.
func New(c *core.Common, inv *inventory.Inventory, sv *services.Supervisor, rec *recording.Recorder, fl *files.Files, prov *provision.Provisioner, rv *review.Reviewer, pz *pause.Pauser) *Ops {
	return &Ops{c: c, inv: inv, services: sv, rec: rec, files: fl, prov: prov, review: rv, pause: pz}
}

// Delete removes a sandbox's container, networks, branch and host-side
// state, refusing to lose unmerged work unless force; detach, when not
// nil, may hand the end of it to another process (see inventory.Delete).
func (op *Ops) Delete(ctx context.Context, r *api.Repo, name string, force bool, detach api.Detach) (*api.DeleteReport, error) {
	start := time.Now()
	rep, err := op.inv.Delete(ctx, r, name, force, detach)
	if err == nil {
		op.rec.Forget(r, slugOf(name))
	}
	e := activity.Event{Kind: activity.KindDelete}
	if force {
		e.Message = "forced"
	}
	op.Note(ctx, r, slugOf(name), e, start, err)
	return rep, err
}

// ServiceAction runs one action on a service of a running sandbox: start,
// stop, restart, status or logs (see services.Do).
func (op *Ops) ServiceAction(ctx context.Context, h *api.Handle, name, action string, lines int) (*api.ServiceResult, error) {
	start := time.Now()
	res, err := op.services.Do(ctx, h, name, action, lines)
	if action == api.ActionStart || action == api.ActionStop || action == api.ActionRestart {
		e := activity.Event{Kind: activity.KindService, Service: name, Action: action}
		if res != nil {
			e.Message = res.Message
		}
		op.Note(ctx, h.Repo, h.Slug, e, start, err)
	}
	if res != nil {
		op.NoteExit(ctx, h, res.Status)
	}
	return res, err
}

// Snapshot commits whatever changed in the sandbox's /src since the last
// snapshot to its branch, with message, when something changed.
func (op *Ops) Snapshot(ctx context.Context, h *api.Handle, message string) (*api.SnapshotResult, error) {
	start := time.Now()
	res, err := op.rec.Snapshot(ctx, h, message)
	op.noteSnapshot(ctx, h, message, res, start, err)
	return res, err
}

// noteSnapshot records a snapshot made outside an agent's tool call, when
// it committed or failed.
func (op *Ops) noteSnapshot(ctx context.Context, h *api.Handle, message string, res *api.SnapshotResult, start time.Time, err error) {
	e := activity.Event{Kind: activity.KindSnapshot, Message: message}
	if err == nil && (res == nil || !res.Committed) {
		return
	}
	if res != nil && res.Committed {
		e.Commit, e.Files = res.Commit, res.Files
	}
	op.Note(ctx, h.Repo, h.Slug, e, start, err)
}

// Milestone snapshots pending changes, then squashes the commits since the
// previous milestone (or the base) into one commit with message.
func (op *Ops) Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error) {
	start := time.Now()
	res, err := op.rec.Milestone(ctx, h, message)
	if err != nil || (res != nil && res.Commit != "") {
		e := activity.Event{Kind: activity.KindMilestone, Message: message}
		if res != nil {
			e.Commit, e.Files = res.Commit, op.changed(ctx, h.Repo, res.Commit)
		}
		op.Note(ctx, h.Repo, h.Slug, e, start, err)
	}
	return res, err
}

// Rewind puts the sandbox's /src back to rev, a commit of its branch, and
// records that as a new commit (see recording.Rewind).
func (op *Ops) Rewind(ctx context.Context, h *api.Handle, rev string) (*api.RewindResult, error) {
	start := time.Now()
	res, err := op.rec.Rewind(ctx, h, rev)
	e := activity.Event{Kind: activity.KindRewind, Target: rev}
	if res != nil {
		e.Commit, e.Files = res.Commit, op.changed(ctx, h.Repo, res.Commit)
		if res.Unchanged {
			e.Message = "unchanged: /src already held it"
		}
	}
	op.Note(ctx, h.Repo, h.Slug, e, start, err)
	if res != nil {
		// The services running are restarted on the files put back:
		// litterbox's doing, not the caller'op.
		for _, name := range res.Restarted {
			op.Note(ctx, h.Repo, h.Slug, activity.Event{Kind: activity.KindService, By: activity.ByLitterbox, Service: name, Action: api.ActionRestart, Message: "after the rewind"}, time.Time{}, nil)
		}
	}
	return res, err
}

// Bash runs a shell command for an agent and snapshots what it changed, in
// one exec.
func (op *Ops) Bash(ctx context.Context, h *api.Handle, command string, o api.BashOptions) (*api.BashResult, *api.SnapshotResult, error) {
	res, snap, err := op.files.Bash(ctx, h, command, o)
	if res != nil {
		// What the command tried to reach and the gateway refused: its
		// own events, counted by the UI, each with the command that tried
		// (the call is the MCP server's; the refusal is kept aside from
		// the record's rotation, the call only when it failed).
		for _, host := range res.RefusedHosts {
			op.Note(ctx, h.Repo, h.Slug, activity.Event{Kind: activity.KindEgress, Target: host, Tool: "bash", Args: command}, time.Time{}, nil)
		}
	}
	return res, snap, err
}

// CopyIn copies src, a host file or folder (or a tar stream on in when src
// is "-"), to dst in the sandbox, and snapshots it.
func (op *Ops) CopyIn(ctx context.Context, h *api.Handle, src string, in io.Reader, dst string) (*api.CopyResult, *api.SnapshotResult, error) {
	start := time.Now()
	res, snap, err := op.files.CopyIn(ctx, h, src, in, dst)
	if res != nil {
		op.noteSnapshot(ctx, h, "cp: "+res.Path, snap, start, nil)
	}
	return res, snap, err
}

// Create makes a sandbox: branch litterbox/<slug> at HEAD (or opts.From)
// and a hardened container holding a copy of it, set up (see
// provision.Create).
func (op *Ops) Create(ctx context.Context, r *api.Repo, name string, opts api.CreateOptions) (*api.Created, error) {
	start := time.Now()
	created, err := op.prov.Create(ctx, r, name, opts)
	if created != nil {
		var how []string
		switch {
		case opts.FromBranch:
			how = append(how, "recreated from its branch")
		case opts.From != "":
			how = append(how, "from "+opts.From)
		}
		op.noteCreated(ctx, r, created, how, start, err)
	}
	return created, err
}

// noteCreated records a sandbox made (how says from what), then the
// services its configuration started: litterbox's doing.
func (op *Ops) noteCreated(ctx context.Context, r *api.Repo, c *api.Created, how []string, start time.Time, err error) {
	if c.Pooled {
		how = append(how, "taken from the warm pool")
	}
	if c.Image != "" {
		how = append(how, "image "+c.Image)
	}
	e := activity.Event{Kind: activity.KindCreate, Message: strings.Join(how, ", ")}
	op.Note(ctx, r, c.Name, e, start, nil)
	if err != nil {
		// The sandbox is there (its setup failed): the failure goes in
		// its record.
		op.Note(ctx, r, c.Name, activity.Event{Kind: activity.KindCreate, Message: "setup"}, time.Time{}, err)
	}
	for _, st := range c.Services {
		op.Note(ctx, r, c.Name, activity.Event{Kind: activity.KindService, By: activity.ByLitterbox, Service: st.Name, Action: api.ActionStart, Message: "autostart"}, time.Time{}, nil)
	}
}

// Fork creates the sandbox newName from the tip of name's branch.
func (op *Ops) Fork(ctx context.Context, r *api.Repo, name, newName string, opts api.CreateOptions) (*api.Forked, error) {
	start := time.Now()
	f, err := op.prov.Fork(ctx, r, name, newName, opts)
	from := slugOf(name)
	if f == nil {
		op.Note(ctx, r, from, activity.Event{Kind: activity.KindFork, Target: newName}, start, err)
		return f, err
	}
	e := activity.Event{Kind: activity.KindFork, Target: f.Name}
	if f.Snapshot != nil && f.Snapshot.Committed {
		e.Commit = f.Snapshot.Commit
	}
	op.Note(ctx, r, from, e, start, nil)
	op.noteCreated(ctx, r, &f.Created, []string{"forked from " + from + " at " + core.Short(f.Base)}, start, err)
	return f, err
}

// Apply puts the sandbox's changes into the working tree, uncommitted, and
// keeps the sandbox (see review.Apply); at, when set, is the commit a
// review showed, which it applies or refuses.
func (op *Ops) Apply(ctx context.Context, r *api.Repo, name, at string) (*api.ApplyResult, error) {
	start := time.Now()
	res, err := op.review.Apply(ctx, r, name, at)
	e := activity.Event{Kind: activity.KindApply}
	if res != nil {
		e.Files = res.Files
		// Its commit is in the message: in Commit, the UI would show that
		// commit's own diff, not base..commit, which is what was applied.
		switch {
		case res.Already:
			e.Message = "already applied"
		case res.Empty:
			e.Message = "nothing to apply"
		default:
			e.Message = "its commit " + core.Short(res.Tip)
		}
	}
	op.Note(ctx, r, slugOf(name), e, start, err)
	return res, err
}

// Merge merges a sandbox's branch into the current branch, then deletes the
// sandbox (see review.Merge); at, when set, is the commit a review showed,
// which it merges or refuses.
func (op *Ops) Merge(ctx context.Context, r *api.Repo, name, at string) (*api.MergeResult, error) {
	start := time.Now()
	res, err := op.review.Merge(ctx, r, name, at)
	if err == nil && res != nil && res.Deleted != nil {
		// A merge deletes the sandbox: what its snapshots kept goes too,
		// as after a delete.
		op.rec.Forget(r, slugOf(name))
	}
	e := activity.Event{Kind: activity.KindMerge}
	if res != nil {
		// Commit is Target's new tip, whose diff the UI shows: the whole
		// merge for a merge commit. The sandbox's commit that landed is
		// named beside it when it is another (not a fast-forward).
		e.Target, e.Commit, e.Files = res.Into, res.Commit, res.Files
		switch {
		case res.NothingToMerge:
			e.Message = "nothing to merge: its commits were all there"
		case res.Commit != res.Tip:
			e.Message = "its commit " + core.Short(res.Tip)
		}
	}
	op.Note(ctx, r, slugOf(name), e, start, err)
	return res, err
}

// Pause freezes a sandbox's processes, keeping all its state (see
// pause.Pause).
func (op *Ops) Pause(ctx context.Context, r *api.Repo, name string, force bool) (api.Outcome, error) {
	start := time.Now()
	o, err := op.pause.Pause(ctx, r, name, force)
	op.notePause(ctx, r, slugOf(name), activity.KindPause, o, start, err)
	return o, err
}

// Resume thaws a paused sandbox.
func (op *Ops) Resume(ctx context.Context, r *api.Repo, name string) (api.Outcome, error) {
	start := time.Now()
	o, err := op.pause.Resume(ctx, r, name)
	op.notePause(ctx, r, slugOf(name), activity.KindResume, o, start, err)
	return o, err
}

// PauseAll pauses every sandbox of r, or of every repository when r is nil.
func (op *Ops) PauseAll(ctx context.Context, r *api.Repo, force bool) ([]api.Outcome, error) {
	start := time.Now()
	outs, err := op.pause.PauseAll(ctx, r, force)
	op.notePauseAll(ctx, r, activity.KindPause, outs, start)
	return outs, err
}

// ResumeAll resumes every sandbox of r, or of every repository when r is
// nil.
func (op *Ops) ResumeAll(ctx context.Context, r *api.Repo) ([]api.Outcome, error) {
	start := time.Now()
	outs, err := op.pause.ResumeAll(ctx, r)
	op.notePauseAll(ctx, r, activity.KindResume, outs, start)
	return outs, err
}

// notePause records a pause or resume that changed something, or failed.
func (op *Ops) notePause(ctx context.Context, r *api.Repo, slug string, kind activity.Kind, o api.Outcome, start time.Time, err error) {
	if err == nil && (o.Already || o.Skipped != "") {
		return
	}
	e := activity.Event{Kind: kind}
	if len(o.Lost) > 0 {
		e.Message = fmt.Sprintf("forced: %d file(s) its branch does not hold were lost", len(o.Lost))
	}
	op.Note(ctx, r, slug, e, start, err)
}

// notePauseAll records each sandbox that PauseAll or ResumeAll paused or
// resumed, in its own repository's record (the one its labels name when
// r is nil).
func (op *Ops) notePauseAll(ctx context.Context, r *api.Repo, kind activity.Kind, outs []api.Outcome, start time.Time) {
	for _, o := range outs {
		if o.Name == "" {
			continue // not done: its error is among those returned
		}
		if r != nil {
			op.notePause(ctx, r, o.Name, kind, o, start, nil)
		} else if o.GitDir != "" && !o.Already && o.Skipped == "" {
			op.noteIn(ctx, o.GitDir, o.Name, activity.Event{Kind: kind}, start, nil)
		}
	}
}

// Note appends e to the activity record of sandbox slug of r, by the actor
// of ctx unless e.By is set, with err as its error and, when start is not
// zero, the time since start. A failed operation is noted only in a record
// that exists, and one that found no sandbox not at all: naming sandboxes
// that do not exist makes no records.
func (op *Ops) Note(ctx context.Context, r *api.Repo, slug string, e activity.Event, start time.Time, err error) {
	if r == nil || r.Git == nil {
		return
	}
	op.noteIn(ctx, r.Git.CommonDir, slug, e, start, err)
}

// noteIn is note for the repository whose common git dir is gitDir.
func (op *Ops) noteIn(ctx context.Context, gitDir, slug string, e activity.Event, start time.Time, err error) {
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
		op.c.Log.Warn("cannot write the activity record", "sandbox", slug, "err", werr)
	}
}

// changed is the files commit changed against its parent, for an event:
// one git call, made only when an operation made a commit.
func (op *Ops) changed(ctx context.Context, r *api.Repo, commit string) []string {
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

// NoteExit records that a service ended by itself, once, when litterbox
// learns of it: a service exits inside the sandbox, where no litterbox
// process watches, so its exit is known when a status comes back (any
// service action). The status comes from state files the agent can
// write (api.ServiceStatus), so the event says where it comes from; it is
// about the agent's own sandbox and holds only checked fields.
func (op *Ops) NoteExit(ctx context.Context, h *api.Handle, st api.ServiceStatus) {
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
	op.Note(ctx, h.Repo, h.Slug, activity.Event{Kind: activity.KindService, By: activity.ByLitterbox, Service: st.Name, Action: "exit", Exit: &code, Message: msg}, time.Time{}, nil)
}

// Exec runs a command in a running sandbox, in /src, as the sandbox user, and
// returns its exit code. Only failures to run it at all are errors.
func (op *Ops) Exec(ctx context.Context, r *api.Repo, name string, o api.ExecOptions) (int, error) {
	f, err := op.inv.Running(ctx, r, name)
	if err != nil {
		return 0, err
	}
	return op.ExecIn(ctx, r, f.Slug, f.Container.Ref, o)
}

// ExecIn is Exec in sandbox slug, found running as ref.
func (op *Ops) ExecIn(ctx context.Context, r *api.Repo, slug string, ref provider.Ref, o api.ExecOptions) (int, error) {
	// A session can last hours (a shell): its start is an event of its
	// own, so the feed shows someone is in the sandbox meanwhile.
	start := time.Now()
	e := activity.Event{Kind: activity.KindExec, Args: runner.Quote(o.Cmd...)}
	e.Action = "start"
	op.Note(ctx, r, slug, e, time.Time{}, nil)
	e.Action, e.Start = "end", start
	cmd, named := netgate.NameFirst(r, slug, o.Cmd)
	res, err := op.c.Provider.Exec(ctx, provider.ExecRequest{
		Kind: runner.Stream, // the user's command: it runs until done or Ctrl-C
		Ref:  ref, Cmd: cmd, Workdir: api.Workdir, Env: append(core.SandboxEnv(slug), o.Env...),
		TTY: o.TTY, Interactive: o.Interactive, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr,
	})
	if serr := core.StateError(slug, err); serr != nil {
		err = serr
	}
	if err != nil {
		op.Note(ctx, r, slug, e, start, err)
		return 0, err
	}
	named()
	e.Exit = &res.ExitCode
	op.Note(ctx, r, slug, e, start, nil)
	return res.ExitCode, nil
}
