package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/internal/textcap"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

type tool struct {
	tool    mcp.Tool
	handler server.ToolHandlerFunc
}

// result is what a tool returns. Its payload (a file's text, a command's
// output, a list) is in exported fields, so structuredContent holds all of
// it, and blocks renders the same payload, cut the same way, as the text of
// content: Claude Code, Codex and opencode show the model only
// structuredContent, other clients only content (see docs/mcp.md,
// "Results").
type result interface {
	// fit cuts the payload to at most budget bytes of JSON, and sets the
	// notes that say what was cut and how to read on. fit(math.MaxInt)
	// cuts nothing but sets the notes.
	fit(budget int)
	// weight is what the payload weighs in JSON as it is now.
	weight() int
	// blocks are the text: the payload first, then any notes on it.
	blocks() []string
}

// handler binds arguments, runs fn and shapes its outcome: a result of at
// most the server's cap, or a tool error an agent can act on. Progress
// notifications go out while fn runs, when the client asked for them. A
// call whose client cancelled it gets no response (the transport drops it).
func handler[A any, R result](s *Server, tool string, fn func(ctx context.Context, args A) (R, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args A
		if err := checkArgs[A](req.GetArguments()); err != nil {
			return s.errorResult(err.Error()), nil
		}
		if err := req.BindArguments(&args); err != nil {
			return s.errorResult(bindError(err)), nil
		}
		release := idle.begin()
		defer release()
		// What the service records of this call, it records as the
		// agent's doing.
		ctx = activity.WithActor(ctx, activity.ByMCP)
		ctx, woken := api.WithWoken(ctx)
		stop := s.progress(ctx, req, tool)
		start := time.Now()
		res, err := fn(ctx, args)
		stop()
		s.recordCall(ctx, tool, req.GetArguments(), res, err, start)
		notes := woken.Notes()
		if err != nil {
			return s.errorResult(strings.Join(append(notes, toolError(err)), "\n")), nil
		}
		out := s.shape(res)
		// After the payload, which clients take as the first block.
		for _, n := range notes {
			out.Content = append(out.Content, mcp.NewTextContent(n))
		}
		return out, nil
	}
}

// responseSlack covers the JSON-RPC envelope around a result.
const responseSlack = 512

// shape builds the tool result of res, cut once to fit the cap: the payload
// is sent twice (in structuredContent and in content), so each of its bytes
// counts twice against the cap, and both forms carry the same cut.
func (s *Server) shape(res result) *mcp.CallToolResult {
	limit := s.MaxOutput - responseSlack
	res.fit(math.MaxInt)
	if 2*res.weight() > limit {
		// Cut a payload far over the cap before the first build: the
		// JSON of a 16 MiB read cost the server 150 MiB to measure.
		res.fit(limit/2 - 1024)
	}
	out, size := build(res)
	// A cut adds notes, which the next round accounts for; three rounds
	// always settle, the last guard is for a bug.
	for range 3 {
		if size <= limit {
			return out
		}
		fixed := size - 2*res.weight()
		res.fit((limit-fixed)/2 - 256)
		out, size = build(res)
	}
	if size <= limit {
		return out
	}
	return s.errorResult(fmt.Sprintf("the result (%d bytes) does not fit in the response cap of %d bytes; narrow the request", size, s.MaxOutput))
}

// build makes the tool result of res and measures it as JSON.
func build(res result) (*mcp.CallToolResult, int) {
	out := &mcp.CallToolResult{StructuredContent: res}
	for _, b := range res.blocks() {
		out.Content = append(out.Content, mcp.NewTextContent(b))
	}
	data, _ := json.Marshal(out)
	return out, len(data)
}

// maxErrorBytes caps a tool error's message.
const maxErrorBytes = 8 << 10

// errorResult is a tool error with msg, cut to maxErrorBytes.
func (s *Server) errorResult(msg string) *mcp.CallToolResult {
	if textcap.Len(msg) > maxErrorBytes {
		keep := textcap.Prefix(msg, maxErrorBytes-100)
		msg = fmt.Sprintf("%s [... %d bytes of the message cut]", msg[:keep], len(msg)-keep)
	}
	return mcp.NewToolResultError(msg)
}

// checkArgs refuses unknown and missing arguments by the json tags of A
// (a field without omitempty is required), with messages an agent can act
// on; mcp-go's schema validation prints Go structs.
func checkArgs[A any](args map[string]any) error {
	t := reflect.TypeFor[A]()
	var all, missing []string
	known := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		all = append(all, name)
		known[name] = true
		if _, ok := args[name]; !ok && !strings.Contains(opts, "omitempty") {
			missing = append(missing, name)
		}
	}
	for k := range args {
		if !known[k] {
			return fmt.Errorf("unknown argument %q; this tool takes: %s", k, strings.Join(all, ", "))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required argument(s): %s; this tool takes: %s", strings.Join(missing, ", "), strings.Join(all, ", "))
	}
	return nil
}

// bindError says which argument has the wrong type, in JSON terms rather
// than Go's ("cannot unmarshal number into Go struct field ...").
func bindError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := map[reflect.Kind]string{reflect.String: "a string", reflect.Bool: "true or false",
			reflect.Int: "an integer", reflect.Float64: "a number"}[te.Type.Kind()]
		if want == "" {
			want = "a " + te.Type.String()
		}
		return fmt.Sprintf("bad arguments: %q must be %s, not a %s; see the tool's input schema", te.Field, want, te.Value)
	}
	return "bad arguments: " + err.Error() + "; see the tool's input schema"
}

func newTool[A, R any](name, title, desc string, readOnly bool, opts ...mcp.ToolOption) mcp.Tool {
	opts = append([]mcp.ToolOption{
		mcp.WithDescription(desc),
		mcp.WithTitleAnnotation(title),
		mcp.WithInputSchema[A](),
		mcp.WithOutputSchema[R](),
		mcp.WithReadOnlyHintAnnotation(readOnly),
		mcp.WithDestructiveHintAnnotation(!readOnly),
		mcp.WithOpenWorldHintAnnotation(false),
	}, opts...)
	return mcp.NewTool(name, opts...)
}

func (s *Server) tools() []tool {
	return []tool{
		{newTool[CreateArgs, CreateResult]("sandbox-create", "Create a sandbox", createDesc, false), handler(s, "sandbox-create", s.create)},
		{newTool[ReadArgs, ReadResult]("read", "Read a file", readDesc, true), handler(s, "read", s.read)},
		{newTool[WriteArgs, WriteResult]("write", "Write a file", writeDesc, false), handler(s, "write", s.write)},
		{newTool[PatchArgs, PatchResult]("patch", "Patch a file", patchDesc, false), handler(s, "patch", s.patch)},
		{newTool[BashArgs, BashResult]("bash", "Run a shell command", bashDesc, false), handler(s, "bash", s.bash)},
		{newTool[LsArgs, LsResult]("ls", "List a folder", lsDesc, true), handler(s, "ls", s.ls)},
		{newTool[GlobArgs, GlobResult]("glob", "Find files by name", globDesc, true), handler(s, "glob", s.glob)},
		{newTool[GrepArgs, GrepResult]("grep", "Search file contents", grepDesc, true), handler(s, "grep", s.grep)},
		{newTool[MilestoneArgs, MilestoneResult]("milestone", "Record a milestone", milestoneDesc, false), handler(s, "milestone", s.milestone)},
		{newTool[PortsArgs, PortsResult]("sandbox-ports", "List named ports", portsDesc, true), handler(s, "sandbox-ports", s.ports)},
		{newTool[ServiceArgs, ServiceResult]("sandbox-service", "Control a service", serviceDesc, false), handler(s, "sandbox-service", s.service)},
		{newTool[ForkArgs, CreateResult]("sandbox-fork", "Fork a sandbox", forkDesc, false), handler(s, "sandbox-fork", s.fork)},
		{newTool[RewindArgs, RewindResult]("rewind", "Rewind a sandbox", rewindDesc, false), handler(s, "rewind", s.rewind)},
		{newTool[NetworkRequestArgs, NetworkRequestResult]("network-request", "Ask the user for a host", networkRequestDesc, false), handler(s, "network-request", s.networkRequest)},
	}
}

// plain is a result with no payload to cut: its metadata is all of it.
type plain struct{}

func (plain) fit(int)     {}
func (plain) weight() int { return 0 }

// milestone

const milestoneDesc = `Mark a milestone in a sandbox: every write, patch and bash since the previous milestone (or since the sandbox was created) is squashed into one commit on its branch, with your message.
Call it when a coherent piece of work is done, with a message like a good commit message. With nothing to squash it says so and changes nothing.`

// MilestoneArgs are milestone's arguments.
type MilestoneArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Message string `json:"message" jsonschema:"Commit message for the milestone: what the work since the last milestone does"`
}

// MilestoneResult is milestone's result.
type MilestoneResult struct {
	plain
	api.MilestoneResult
}

func (r *MilestoneResult) blocks() []string {
	if r.Commit == "" {
		return []string{r.Note}
	}
	return []string{fmt.Sprintf("Squashed %d commit(s) into milestone %s", r.Squashed, r.Commit)}
}

func (s *Server) milestone(ctx context.Context, a MilestoneArgs) (*MilestoneResult, error) {
	// Once begun, a milestone completes: its response is dropped if the
	// client cancelled, but the branch is never left half done.
	ctx = context.WithoutCancel(ctx)
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*MilestoneResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		defer l.Unlock()
		r, err := s.sandboxes.Milestone(ctx, h, a.Message)
		if err != nil {
			return nil, err
		}
		return &MilestoneResult{MilestoneResult: *r}, nil
	})
}

// sandbox-create

const createDesc = `Create a sandbox: a new container holding a copy of the repository's HEAD in /src, and a git branch litterbox/<name> where every change you make is committed.
With base_ref (one of the user's branches, tags or remote-tracking branches, or a commit they hold) the sandbox starts from that commit instead of HEAD; it is the base the user's review (diff, merge) compares with. The stash, notes and other sandboxes' branches are refused (to build on a sandbox's work, use sandbox-fork), as is a base_ref that names no commit; a refused call creates nothing.
How sandboxes are made (image, limits, network, ports, services, setup) is the user's .litterbox.toml: editing that file in a sandbox changes none of it, for that sandbox or its forks.
The name is slugified (lowercase, runs of other characters become '-'); it must give 1-63 characters of [a-z0-9-]. A name that is taken is an error: pick another.
The sandbox runs the project's image; leave image out unless the user told you which of the images they allow to use.`

// CreateArgs are sandbox-create's arguments.
type CreateArgs struct {
	Name    string `json:"name" jsonschema:"Name of the new sandbox, e.g. fix-login-bug"`
	BaseRef string `json:"base_ref,omitempty" jsonschema:"The user's branch, tag or remote-tracking branch, or a commit they hold, to start from (default: HEAD)"`
	// Image is allowed only when the user's agent_images lists it.
	Image string `json:"image,omitempty" jsonschema:"Image to run the sandbox in; leave it out for the project's image. Only images the user allows (agent_images in .litterbox.local.toml) are accepted."`
}

// CreateResult is sandbox-create's result.
type CreateResult struct {
	Sandbox   string `json:"sandbox"`
	Branch    string `json:"branch"`
	Container string `json:"container"`
	Status    string `json:"status"`
	Image     string `json:"image"`
	Workdir   string `json:"workdir"`
	// Base is the commit the sandbox started from.
	Base string `json:"base"`
	// SetupOutputBytes is the size of the startup command's output.
	SetupOutputBytes int `json:"setupOutputBytes"`
	// SetupOutput is that output, cut (and saying so) when it does not fit.
	SetupOutput string `json:"setupOutput,omitempty" jsonschema:"The startup command's output"`
	// Ports and Services: see sandbox-ports and sandbox-service.
	Ports    []api.PortInfo      `json:"ports,omitempty"`
	Services []api.ServiceStatus `json:"services,omitempty"`
	// CopiedIn are the first copiedInShown of the user's ignored files
	// copied into /src beside the commit; CopiedInCount counts them all.
	CopiedIn      []string `json:"copiedIn,omitempty" jsonschema:"The user's files git ignores (a .env) copied into /src; changes to them are never committed"`
	CopiedInCount int      `json:"copiedInCount,omitempty"`
}

// copiedInShown is how many copied-in files a create's result names.
const copiedInShown = 20

func (r *CreateResult) fit(budget int) {
	r.SetupOutput = cutText(r.SetupOutput, budget, "the startup command's output")
}

func (r *CreateResult) weight() int { return textcap.Len(r.SetupOutput) }

func (r *CreateResult) blocks() []string {
	t := fmt.Sprintf("Created sandbox %s (status %s, image %s): files in %s, changes committed to branch %s. Use sandbox=%q with the other tools.",
		r.Sandbox, r.Status, r.Image, r.Workdir, r.Branch, r.Sandbox)
	if r.CopiedInCount > 0 {
		t += fmt.Sprintf("\nThe user's ignored files copied into %s (%d; changes to them are never committed): %s", r.Workdir, r.CopiedInCount, strings.Join(r.CopiedIn, ", "))
		if r.CopiedInCount > len(r.CopiedIn) {
			t += ", ..."
		}
	}
	if r.SetupOutput != "" {
		t += "\n--- startup command output\n" + r.SetupOutput
	}
	return []string{t}
}

func (s *Server) create(ctx context.Context, a CreateArgs) (*CreateResult, error) {
	if s.Creating != nil {
		defer s.Creating()()
	}
	c, err := s.sandboxes.Create(ctx, s.repo, a.Name, api.CreateOptions{From: a.BaseRef, Image: a.Image, ByAgent: true})
	if err != nil {
		return nil, err
	}
	if s.Created != nil {
		s.Created()
	}
	return createResult(c), nil
}

// createResult shapes a new sandbox (of sandbox-create or sandbox-fork).
func createResult(c *api.Created) *CreateResult {
	return &CreateResult{Sandbox: c.Name, Branch: c.Branch, Container: c.Container, Status: string(c.Status), Image: c.Image, Workdir: api.Workdir, Base: c.Base,
		SetupOutputBytes: len(c.SetupOutput), SetupOutput: c.SetupOutput, Ports: c.Ports, Services: c.Services,
		CopiedIn: c.Bootstrapped[:min(len(c.Bootstrapped), copiedInShown)], CopiedInCount: len(c.Bootstrapped)}
}

// read

const readDesc = `Read a text file in a sandbox. Returns its content (optionally a window of lines) and the file's total line count, so you can page with offset and limit.
Paths are absolute in the sandbox or relative to /src. Hidden files (any path component starting with '.') are refused. Binary files are refused: inspect them with bash (od, hexdump).`

// ReadArgs are read's arguments.
type ReadArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Path    string `json:"path" jsonschema:"File path: absolute in the sandbox or relative to /src"`
	Offset  int    `json:"offset,omitempty" jsonschema:"First line to return, 0-based (default 0)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"Most lines to return (default: all)"`
}

// ReadResult is read's result. The content is also the first text block,
// as it is in the file; the note, when there is one, the second.
type ReadResult struct {
	Path       string `json:"path"`
	Offset     int    `json:"offset"`
	Lines      int    `json:"lines"`      // lines returned
	TotalLines int    `json:"totalLines"` // lines in the file
	More       bool   `json:"more"`       // lines remain after these
	// Cut says the lines asked for did not fit in the response: fewer
	// were returned (a line too long for it, only its start).
	Cut     bool   `json:"cut,omitempty"`
	Content string `json:"content" jsonschema:"The lines read, exactly as they are in the file"`
	// Note says which lines these are and how to read on, when more remain.
	Note string `json:"note,omitempty" jsonschema:"Which lines these are and how to read on, when more remain"`
}

// fit keeps the whole lines that fit in budget.
func (r *ReadResult) fit(budget int) {
	if textcap.Len(r.Content) > budget {
		keep := textcap.Prefix(r.Content, max(budget, 0))
		if nl := strings.LastIndexByte(r.Content[:keep], '\n'); nl >= 0 {
			keep = nl + 1
			r.Lines = strings.Count(r.Content[:keep], "\n")
		} else {
			r.Lines = 0 // one line longer than the cap: its start only
		}
		r.Content, r.More, r.Cut = r.Content[:keep], true, true
	}
	switch {
	case r.Cut && r.Lines == 0:
		r.Note = fmt.Sprintf("[litterbox: line %d alone is longer than the response cap; this is its start. Read it in parts with bash, e.g. sed -n '%dp' %s | cut -c 1-100000]", r.Offset+1, r.Offset+1, r.Path)
	case r.Cut:
		r.Note = fmt.Sprintf("[litterbox: lines %d-%d of %d (cut at the response cap); read on with offset=%d]", r.Offset+1, r.Offset+r.Lines, r.TotalLines, r.Offset+r.Lines)
	case r.More:
		r.Note = fmt.Sprintf("[litterbox: lines %d-%d of %d; read on with offset=%d]", r.Offset+1, r.Offset+r.Lines, r.TotalLines, r.Offset+r.Lines)
	}
}

func (r *ReadResult) weight() int { return textcap.Len(r.Content) }

func (r *ReadResult) blocks() []string {
	if r.Note == "" {
		return []string{r.Content}
	}
	return []string{r.Content, r.Note}
}

func (s *Server) read(ctx context.Context, a ReadArgs) (*ReadResult, error) {
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.ReadResult, error) {
		return s.sandboxes.Read(ctx, h, a.Path, api.ReadOptions{Offset: a.Offset, Limit: a.Limit})
	}, func(r api.ReadResult) *ReadResult {
		return &ReadResult{Path: r.Path, Offset: r.Offset, Lines: r.Lines, TotalLines: r.TotalLines, More: r.More, Content: r.Content}
	})
}

// write

const writeDesc = `Create or overwrite a file in a sandbox with the given content, exactly as given (no newline is added). Parent folders are created.
The change is committed to the sandbox's branch. Paths are absolute in the sandbox or relative to /src; hidden paths are refused.`

// WriteArgs are write's arguments.
type WriteArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Path    string `json:"path" jsonschema:"File path: absolute in the sandbox or relative to /src"`
	Content string `json:"content" jsonschema:"The whole new content of the file"`
}

// WriteResult is write's result.
type WriteResult struct {
	plain
	api.WriteResult
	Snapshot SnapshotInfo `json:"snapshot"`
}

func (r *WriteResult) blocks() []string {
	verb := "Overwrote"
	if r.Created {
		verb = "Created"
	}
	return []string{fmt.Sprintf("%s %s (%d bytes); %s", verb, r.Path, r.Bytes, r.Snapshot.text())}
}

func (s *Server) write(ctx context.Context, a WriteArgs) (*WriteResult, error) {
	// A write is short and whole: once begun it completes and is committed
	// (a cancel drops only its response).
	ctx = context.WithoutCancel(ctx)
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*WriteResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		r, snap, err := s.sandboxes.Write(ctx, h, a.Path, []byte(a.Content))
		l.Unlock()
		if r == nil {
			return nil, err
		}
		return &WriteResult{WriteResult: *r, Snapshot: s.snapshotInfo(h, snap, err)}, nil
	})
}

// patch

const patchDesc = `Apply a unified diff (as produced by git diff or diff -u) to one file in a sandbox. The diff may create the file (--- /dev/null), modify it, or delete it (+++ /dev/null).
Each hunk must hold exactly the lines its header counts (@@ -a,b +c,d @@: b context and - lines, d context and + lines). Context and removed lines must match the file exactly; hunks may sit at other line numbers than their headers say. If any hunk cannot be read or does not apply, nothing changes and the error names the hunk: read the file and try again.
The change is committed to the sandbox's branch. Hidden paths are refused.`

// PatchArgs are patch's arguments.
type PatchArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Path    string `json:"path" jsonschema:"The file the diff applies to: absolute in the sandbox or relative to /src (file names inside the diff are ignored)"`
	Diff    string `json:"diff" jsonschema_description:"Unified diff of that one file, with @@ -a,b +c,d @@ hunks"`
}

// PatchResult is patch's result.
type PatchResult struct {
	plain
	api.PatchResult
	Snapshot SnapshotInfo `json:"snapshot"`
}

func (r *PatchResult) blocks() []string {
	return []string{fmt.Sprintf("Patched %s: %s (%d hunk(s)); %s", r.Path, r.Action, r.Hunks, r.Snapshot.text())}
}

func (s *Server) patch(ctx context.Context, a PatchArgs) (*PatchResult, error) {
	ctx = context.WithoutCancel(ctx) // as write
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*PatchResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		r, snap, err := s.sandboxes.Patch(ctx, h, a.Path, a.Diff)
		l.Unlock()
		if r == nil {
			return nil, err
		}
		return &PatchResult{PatchResult: *r, Snapshot: s.snapshotInfo(h, snap, err)}, nil
	})
}

// bash

const bashDesc = `Run a shell command (busybox sh) in a sandbox as an unprivileged user, in /src unless workdir says otherwise. Returns the exit code, stdout and stderr; a non-zero exit code is a normal result.
The command is killed, with every process it started, after timeout seconds (default 120, at most 3600); timedOut says so. Cancelling the call stops it the same way.
Output is shown up to the response cap: a stream too long is cut in the middle, with a note naming the file in /tmp that keeps all of it (page through it with bash: head -c, tail -c, sed -n).
The call returns when the command exits; processes it leaves in the background keep running, but their output is not captured. Changes to files are committed to the sandbox's branch.`

// BashArgs are bash's arguments.
type BashArgs struct {
	Sandbox string  `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Command string  `json:"command" jsonschema:"Shell command line, run with sh -c"`
	Workdir string  `json:"workdir,omitempty" jsonschema:"Folder to run in: absolute in the sandbox or relative to /src (default /src)"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"Seconds before the command is killed (default 120, at most 3600)"`
}

// BashResult is bash's result. In the text, each stream follows a
// "--- stdout" or "--- stderr" line.
type BashResult struct {
	ExitCode    int   `json:"exitCode"`
	TimedOut    bool  `json:"timedOut,omitempty"`
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
	// StdoutFile and StderrFile keep the whole of a stream that was cut
	// (or held bytes that are not UTF-8), in the sandbox's /tmp.
	StdoutFile string       `json:"stdoutFile,omitempty"`
	StderrFile string       `json:"stderrFile,omitempty"`
	Workdir    string       `json:"workdir"`
	DurationMs int64        `json:"durationMs"`
	Snapshot   SnapshotInfo `json:"snapshot"`
	// RefusedHosts are the connections the sandbox's gateway refused
	// during the command (docs/egress.md).
	RefusedHosts []string `json:"refusedHosts,omitempty" jsonschema:"Connections the sandbox's network gateway refused during the command, each host:port (why); only the user can allow a host"`
	// Stdout and Stderr are the output; a stream too long for the response
	// is cut in the middle, with a note there naming the file that keeps
	// all of it.
	Stdout string `json:"stdout" jsonschema:"The command's standard output (cut in the middle, with a note, when too long)"`
	Stderr string `json:"stderr" jsonschema:"The command's standard error (cut in the middle, with a note, when too long)"`
	// sandbox names the sandbox in the text's advice.
	sandbox string
}

// fit is a guard: the output was fitted in the sandbox, to the budget the
// server gave it.
func (r *BashResult) fit(budget int) {
	if r.weight() <= budget {
		return
	}
	half := max(budget/2, 0)
	r.Stdout = cutText(r.Stdout, half, "stdout")
	r.Stderr = cutText(r.Stderr, half, "stderr")
}

func (r *BashResult) weight() int { return textcap.Len(r.Stdout) + textcap.Len(r.Stderr) }

func (r *BashResult) blocks() []string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d", r.ExitCode)
	if r.TimedOut {
		b.WriteString(" (timed out, killed)")
	}
	fmt.Fprintf(&b, "; %s\n", r.Snapshot.text())
	if len(r.RefusedHosts) > 0 {
		fmt.Fprintf(&b, "network: the sandbox's gateway refused %s. You cannot change that; if the command needs it, ask the user with the network-request tool (the user can also allow a host with `litterbox net %s allow HOST`).\n", strings.Join(r.RefusedHosts, ", "), r.sandbox)
	}
	if r.Stdout != "" {
		b.WriteString("--- stdout\n" + r.Stdout)
		if !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Stderr != "" {
		b.WriteString("--- stderr\n" + r.Stderr)
	}
	return []string{b.String()}
}

// bashReserve is what a bash result needs besides its output.
const bashReserve = 8 << 10

// bashOutputCap is what a bash command's output may weigh in the response:
// it is sent twice (structuredContent and content), each under half the cap
// that remains.
func (s *Server) bashOutputCap() int { return (s.MaxOutput - bashReserve) / 2 }

func (s *Server) bash(ctx context.Context, a BashArgs) (*BashResult, error) {
	if a.Timeout < 0 || a.Timeout > api.MaxBashTimeout.Seconds() {
		return nil, fmt.Errorf("timeout must be between 0 and %d seconds", int(api.MaxBashTimeout.Seconds()))
	}
	return withSandbox(ctx, s, a.Sandbox, func(h *api.Handle) (*BashResult, error) {
		r, snap, err := s.sandboxes.Bash(ctx, h, a.Command, api.BashOptions{
			Workdir: a.Workdir, Timeout: time.Duration(a.Timeout * float64(time.Second)), Message: bashMessage(a.Command),
			OutputCap: s.bashOutputCap(),
		})
		if r == nil {
			return nil, err
		}
		// The command ran: a snapshot error is part of the result.
		return &BashResult{
			ExitCode: r.ExitCode, TimedOut: r.TimedOut, StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
			StdoutFile: r.StdoutFile, StderrFile: r.StderrFile, Workdir: r.Workdir, DurationMs: r.DurationMs,
			Snapshot: s.snapshotInfo(h, snap, err), Stdout: r.Stdout, Stderr: r.Stderr,
			RefusedHosts: r.RefusedHosts, sandbox: h.Slug,
		}, nil
	})
}

// ls

const lsDesc = `List a folder in a sandbox (default /src), recursively if asked. Folders end in '/'. Hidden entries are left out. At most 1000 entries; truncated says when there were more.`

// LsArgs are ls's arguments.
type LsArgs struct {
	Sandbox   string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Path      string `json:"path,omitempty" jsonschema:"Folder: absolute in the sandbox or relative to /src (default /src)"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"List the whole tree below the folder"`
}

// LsResult is ls's result; in the text, the entries one a line.
type LsResult struct {
	Path    string   `json:"path"`
	Entries []string `json:"entries" jsonschema:"The entries, relative to the folder listed; folders end in /"`
	list
}

func (s *Server) ls(ctx context.Context, a LsArgs) (*LsResult, error) {
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.LsResult, error) {
		return s.sandboxes.Ls(ctx, h, a.Path, a.Recursive)
	}, func(r api.LsResult) *LsResult {
		res := &LsResult{Path: r.Path, Entries: r.Entries}
		res.list = newList(&res.Entries, r.Truncated, "(empty folder)")
		return res
	})
}

// glob

const globDesc = `Find files in a sandbox whose path matches a glob pattern, relative to path (default /src): * and ? match within a folder name, ** matches any number of folders, [a-z] a class, {a,b} alternates (braces nest), e.g. "**/*.go" or "src/**/*.{ts,tsx}".
Hidden files and folders are left out. Paths are returned relative to /src. At most 1000; truncated says when there were more.`

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Pattern string `json:"pattern" jsonschema:"Glob pattern, e.g. **/*.go"`
	Path    string `json:"path,omitempty" jsonschema:"Folder to search: absolute in the sandbox or relative to /src (default /src)"`
}

// GlobResult is glob's result; in the text, the paths one a line.
type GlobResult struct {
	Pattern string   `json:"pattern"`
	Matches []string `json:"matches" jsonschema:"The files that match, paths relative to /src"`
	list
}

func (s *Server) glob(ctx context.Context, a GlobArgs) (*GlobResult, error) {
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.GlobResult, error) {
		return s.sandboxes.Glob(ctx, h, a.Pattern, a.Path)
	}, func(r api.GlobResult) *GlobResult {
		res := &GlobResult{Pattern: r.Pattern, Matches: r.Matches}
		res.list = newList(&res.Matches, r.Truncated, "(no files match)")
		return res
	})
}

// grep

const grepDesc = `Search the files under path in a sandbox (or the file path) for lines matching an extended regular expression (POSIX ERE, as grep -E). Returns "path:line:text" matches, paths relative to /src.
include narrows the files by name with a glob, e.g. "*.go" or "*.{ts,tsx}". Hidden files and folders are skipped. At most 200 matches; truncated says when there were more.`

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Pattern string `json:"pattern" jsonschema:"Extended regular expression, e.g. func [A-Z]"`
	Path    string `json:"path" jsonschema:"Folder or file to search: absolute in the sandbox or relative to /src (use . for all of /src)"`
	Include string `json:"include,omitempty" jsonschema:"Only files whose name matches this glob, e.g. *.go"`
}

// GrepResult is grep's result; in the text, the matches one a line.
type GrepResult struct {
	Pattern string   `json:"pattern"`
	Matches []string `json:"matches" jsonschema:"The matching lines, each path:line:text with the path relative to /src"`
	list
}

func (s *Server) grep(ctx context.Context, a GrepArgs) (*GrepResult, error) {
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.GrepResult, error) {
		return s.sandboxes.Grep(ctx, h, a.Pattern, a.Path, a.Include)
	}, func(r api.GrepResult) *GrepResult {
		res := &GrepResult{Pattern: r.Pattern, Matches: r.Matches}
		res.list = newList(&res.Matches, r.Truncated, "(no matches)")
		return res
	})
}

// query runs a read-only service call on a sandbox and wraps its result.
func query[T, R any](ctx context.Context, s *Server, name string, fn func(h *api.Handle) (*T, error), wrap func(T) R) (R, error) {
	return withSandbox(ctx, s, name, func(h *api.Handle) (R, error) {
		r, err := fn(h)
		if err != nil {
			var zero R
			return zero, err
		}
		return wrap(*r), nil
	})
}

// list is what the list results share: the metadata of the items in the
// result's own field (entries or matches), and how to render them.
type list struct {
	Count     int  `json:"count"`     // items in the result
	Truncated bool `json:"truncated"` // there were more than the tool's limit
	// Cut says the items did not all fit in the response: Count of them
	// are shown.
	Cut  bool   `json:"cut,omitempty"`
	Note string `json:"note,omitempty" jsonschema:"What was left out and how to narrow the search"`

	items *[]string
	empty string
}

// newList counts *items, never nil afterwards (the schema says an array).
func newList(items *[]string, truncated bool, empty string) list {
	if *items == nil {
		*items = []string{}
	}
	return list{Count: len(*items), Truncated: truncated, items: items, empty: empty}
}

// fit keeps the whole items that fit in budget.
func (l *list) fit(budget int) {
	n := 0
	for i, it := range *l.items {
		if n += textcap.Len(it) + 3; n > budget {
			*l.items, l.Count, l.Cut = (*l.items)[:i], i, true
			break
		}
	}
	switch {
	case l.Cut:
		l.Note = "[litterbox: the list was cut at the response cap; narrow the search]"
	case l.Truncated:
		l.Note = "[litterbox: truncated; narrow the search]"
	}
}

func (l *list) weight() int {
	n := 0
	for _, it := range *l.items {
		n += textcap.Len(it) + 3
	}
	return n
}

func (l *list) blocks() []string {
	if len(*l.items) == 0 && l.Note == "" {
		return []string{l.empty}
	}
	t := strings.Join(*l.items, "\n")
	if l.Note != "" {
		t += "\n" + l.Note
	}
	return []string{t}
}

// cutText cuts s to budget bytes of JSON, with a note naming what.
func cutText(s string, budget int, what string) string {
	if textcap.Len(s) <= budget {
		return s
	}
	keep := textcap.Prefix(s, max(budget-200, 0))
	return fmt.Sprintf("%s\n[litterbox: %s was cut at the response cap: %d of %d bytes shown]\n", s[:keep], what, keep, len(s))
}
