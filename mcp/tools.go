package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/litterbox-dev/litterbox/sandbox"
)

type tool struct {
	tool    mcp.Tool
	handler server.ToolHandlerFunc
}

// texter is a result with a text fallback for clients that do not read
// structuredContent.
type texter interface{ Text() string }

// handler binds arguments, runs fn and shapes its outcome: a structured
// result with a text fallback, or a tool error an agent can act on.
func handler[A any, R texter](fn func(ctx context.Context, args A) (R, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args A
		if err := checkArgs[A](req.GetArguments()); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		if err := req.BindArguments(&args); err != nil {
			return mcp.NewToolResultError(bindError(err)), nil
		}
		release := idle.begin()
		res, err := fn(ctx, args)
		release()
		if err != nil {
			return mcp.NewToolResultError(toolError(err)), nil
		}
		return mcp.NewToolResultStructured(res, res.Text()), nil
	}
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
		{newTool[CreateArgs, CreateResult]("sandbox-create", "Create a sandbox", createDesc, false), handler(s.create)},
		{newTool[ReadArgs, ReadResult]("read", "Read a file", readDesc, true), handler(s.read)},
		{newTool[WriteArgs, WriteResult]("write", "Write a file", writeDesc, false), handler(s.write)},
		{newTool[PatchArgs, PatchResult]("patch", "Patch a file", patchDesc, false), handler(s.patch)},
		{newTool[BashArgs, BashResult]("bash", "Run a shell command", bashDesc, false), handler(s.bash)},
		{newTool[LsArgs, LsResult]("ls", "List a folder", lsDesc, true), handler(s.ls)},
		{newTool[GlobArgs, GlobResult]("glob", "Find files by name", globDesc, true), handler(s.glob)},
		{newTool[GrepArgs, GrepResult]("grep", "Search file contents", grepDesc, true), handler(s.grep)},
		{newTool[MilestoneArgs, MilestoneResult]("milestone", "Record a milestone", milestoneDesc, false), handler(s.milestone)},
		{newTool[PortsArgs, PortsResult]("sandbox-ports", "List named ports", portsDesc, true), handler(s.ports)},
		{newTool[ServiceArgs, ServiceResult]("sandbox-service", "Control a service", serviceDesc, false), handler(s.service)},
	}
}

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
	sandbox.MilestoneResult
}

// Text implements texter.
func (r MilestoneResult) Text() string {
	if r.Commit == "" {
		return r.Note
	}
	return fmt.Sprintf("Squashed %d commit(s) into milestone %s", r.Squashed, r.Commit)
}

func (s *Server) milestone(ctx context.Context, a MilestoneArgs) (MilestoneResult, error) {
	return withSandbox(ctx, s, a.Sandbox, func(h *sandbox.Handle) (MilestoneResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		defer l.Unlock()
		r, err := s.svc.Milestone(ctx, h, a.Message)
		if err != nil {
			return MilestoneResult{}, err
		}
		return MilestoneResult{*r}, nil
	})
}

// sandbox-create

const createDesc = `Create a sandbox: a new container holding a copy of the repository's HEAD in /src, and a git branch litterbox/<name> where every change you make is committed.
The name is slugified (lowercase, runs of other characters become '-'); it must give 1-63 characters of [a-z0-9-]. A name that is taken is an error: pick another.`

// CreateArgs are sandbox-create's arguments.
type CreateArgs struct {
	Name string `json:"name" jsonschema:"Name of the new sandbox, e.g. fix-login-bug"`
}

// CreateResult is sandbox-create's result.
type CreateResult struct {
	Sandbox     string `json:"sandbox"`
	Branch      string `json:"branch"`
	Container   string `json:"container"`
	Status      string `json:"status"`
	Workdir     string `json:"workdir"`
	SetupOutput string `json:"setupOutput"`
	// Ports and Services: see sandbox-ports and sandbox-service.
	Ports    []sandbox.PortInfo      `json:"ports,omitempty"`
	Services []sandbox.ServiceStatus `json:"services,omitempty"`
}

// Text implements texter.
func (r CreateResult) Text() string {
	return fmt.Sprintf("Created sandbox %s (status %s): files in %s, changes committed to branch %s. Use sandbox=%q with the other tools.",
		r.Sandbox, r.Status, r.Workdir, r.Branch, r.Sandbox)
}

func (s *Server) create(ctx context.Context, a CreateArgs) (CreateResult, error) {
	c, err := s.svc.Create(ctx, s.repo, a.Name, sandbox.CreateOptions{})
	if err != nil {
		return CreateResult{}, err
	}
	return CreateResult{Sandbox: c.Name, Branch: c.Branch, Container: c.Container, Status: string(c.Status), Workdir: sandbox.Workdir, SetupOutput: c.SetupOutput,
		Ports: c.Ports, Services: c.Services}, nil
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

// ReadResult is read's result.
type ReadResult struct {
	sandbox.ReadResult
}

// Text implements texter: the content itself, with a note when more lines
// remain.
func (r ReadResult) Text() string {
	if r.More {
		return r.Content + fmt.Sprintf("\n[litterbox: lines %d-%d of %d; read on with offset=%d]", r.Offset+1, r.Offset+r.Lines, r.TotalLines, r.Offset+r.Lines)
	}
	return r.Content
}

func (s *Server) read(ctx context.Context, a ReadArgs) (ReadResult, error) {
	return query(ctx, s, a.Sandbox, func(h *sandbox.Handle) (*sandbox.ReadResult, error) {
		return s.svc.Read(ctx, h, a.Path, sandbox.ReadOptions{Offset: a.Offset, Limit: a.Limit})
	}, func(r sandbox.ReadResult) ReadResult { return ReadResult{r} })
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
	sandbox.WriteResult
	Snapshot SnapshotInfo `json:"snapshot"`
}

// Text implements texter.
func (r WriteResult) Text() string {
	verb := "Overwrote"
	if r.Created {
		verb = "Created"
	}
	return fmt.Sprintf("%s %s (%d bytes); %s", verb, r.Path, r.Bytes, r.Snapshot.text())
}

func (s *Server) write(ctx context.Context, a WriteArgs) (WriteResult, error) {
	return withSandbox(ctx, s, a.Sandbox, func(h *sandbox.Handle) (WriteResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		r, snap, err := s.svc.Write(ctx, h, a.Path, []byte(a.Content))
		l.Unlock()
		if r == nil {
			return WriteResult{}, err
		}
		return WriteResult{WriteResult: *r, Snapshot: s.snapshotInfo(h, snap, err)}, nil
	})
}

// patch

const patchDesc = `Apply a unified diff (as produced by git diff or diff -u) to one file in a sandbox. The diff may create the file (--- /dev/null), modify it, or delete it (+++ /dev/null).
Context and removed lines must match the file exactly; hunks may sit at other line numbers than their headers say. If any hunk does not apply, nothing changes and the error names the hunk: read the file and try again.
The change is committed to the sandbox's branch. Hidden paths are refused.`

// PatchArgs are patch's arguments.
type PatchArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Path    string `json:"path" jsonschema:"The file the diff applies to: absolute in the sandbox or relative to /src (file names inside the diff are ignored)"`
	Diff    string `json:"diff" jsonschema_description:"Unified diff of that one file, with @@ -a,b +c,d @@ hunks"`
}

// PatchResult is patch's result.
type PatchResult struct {
	sandbox.PatchResult
	Snapshot SnapshotInfo `json:"snapshot"`
}

// Text implements texter.
func (r PatchResult) Text() string {
	return fmt.Sprintf("Patched %s: %s (%d hunk(s)); %s", r.Path, r.Action, r.Hunks, r.Snapshot.text())
}

func (s *Server) patch(ctx context.Context, a PatchArgs) (PatchResult, error) {
	return withSandbox(ctx, s, a.Sandbox, func(h *sandbox.Handle) (PatchResult, error) {
		l := s.lock(h.Slug)
		l.Lock()
		r, snap, err := s.svc.Patch(ctx, h, a.Path, a.Diff)
		l.Unlock()
		if r == nil {
			return PatchResult{}, err
		}
		return PatchResult{PatchResult: *r, Snapshot: s.snapshotInfo(h, snap, err)}, nil
	})
}

// bash

const bashDesc = `Run a shell command (busybox sh) in a sandbox as an unprivileged user, in /src unless workdir says otherwise. Returns stdout, stderr and exitCode; a non-zero exit code is a normal result.
The command is killed (its whole process group) after timeout seconds (default 120, at most 3600); timedOut says so. Each stream keeps its first 1 MiB, with a truncation marker after.
The call returns when the command exits; processes it leaves in the background keep running, but their output is not captured. Changes to files are committed to the sandbox's branch.`

// BashArgs are bash's arguments.
type BashArgs struct {
	Sandbox string  `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Command string  `json:"command" jsonschema:"Shell command line, run with sh -c"`
	Workdir string  `json:"workdir,omitempty" jsonschema:"Folder to run in: absolute in the sandbox or relative to /src (default /src)"`
	Timeout float64 `json:"timeout,omitempty" jsonschema:"Seconds before the command is killed (default 120, at most 3600)"`
}

// BashResult is bash's result.
type BashResult struct {
	sandbox.BashResult
	Snapshot SnapshotInfo `json:"snapshot"`
}

// Text implements texter.
func (r BashResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code %d", r.ExitCode)
	if r.TimedOut {
		b.WriteString(" (timed out, killed)")
	}
	fmt.Fprintf(&b, "; %s\n", r.Snapshot.text())
	if r.Stdout != "" {
		b.WriteString("--- stdout\n" + r.Stdout)
		if !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Stderr != "" {
		b.WriteString("--- stderr\n" + r.Stderr)
	}
	return b.String()
}

func (s *Server) bash(ctx context.Context, a BashArgs) (BashResult, error) {
	if a.Timeout < 0 || a.Timeout > sandbox.MaxBashTimeout.Seconds() {
		return BashResult{}, fmt.Errorf("timeout must be between 0 and %d seconds", int(sandbox.MaxBashTimeout.Seconds()))
	}
	return withSandbox(ctx, s, a.Sandbox, func(h *sandbox.Handle) (BashResult, error) {
		r, snap, err := s.svc.Bash(ctx, h, a.Command, sandbox.BashOptions{
			Workdir: a.Workdir, Timeout: time.Duration(a.Timeout * float64(time.Second)), Message: bashMessage(a.Command),
		})
		if r == nil {
			return BashResult{}, err
		}
		// The command ran: a snapshot error is part of the result.
		return BashResult{BashResult: *r, Snapshot: s.snapshotInfo(h, snap, err)}, nil
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

// LsResult is ls's result.
type LsResult struct {
	sandbox.LsResult
}

// Text implements texter.
func (r LsResult) Text() string {
	return listText(r.Entries, r.Truncated, "(empty folder)")
}

func (s *Server) ls(ctx context.Context, a LsArgs) (LsResult, error) {
	return query(ctx, s, a.Sandbox, func(h *sandbox.Handle) (*sandbox.LsResult, error) {
		return s.svc.Ls(ctx, h, a.Path, a.Recursive)
	}, func(r sandbox.LsResult) LsResult { return LsResult{r} })
}

// glob

const globDesc = `Find files in a sandbox whose path matches a glob pattern, relative to path (default /src): * and ? match within a folder name, ** matches any number of folders, {a,b} alternates, e.g. "**/*.go" or "src/**/*.{ts,tsx}".
Hidden files and folders are left out. Paths are returned relative to /src. At most 1000; truncated says when there were more.`

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Pattern string `json:"pattern" jsonschema:"Glob pattern, e.g. **/*.go"`
	Path    string `json:"path,omitempty" jsonschema:"Folder to search: absolute in the sandbox or relative to /src (default /src)"`
}

// GlobResult is glob's result.
type GlobResult struct {
	sandbox.GlobResult
}

// Text implements texter.
func (r GlobResult) Text() string {
	return listText(r.Matches, r.Truncated, "(no files match)")
}

func (s *Server) glob(ctx context.Context, a GlobArgs) (GlobResult, error) {
	return query(ctx, s, a.Sandbox, func(h *sandbox.Handle) (*sandbox.GlobResult, error) {
		return s.svc.Glob(ctx, h, a.Pattern, a.Path)
	}, func(r sandbox.GlobResult) GlobResult { return GlobResult{r} })
}

// grep

const grepDesc = `Search the files under path in a sandbox (or the file path) for lines matching an extended regular expression (POSIX ERE, as grep -E). Returns "path:line:text" matches, paths relative to /src.
include narrows the files by name, e.g. "*.go" or "*.{ts,tsx}". Hidden files and folders are skipped. At most 200 matches; truncated says when there were more.`

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Pattern string `json:"pattern" jsonschema:"Extended regular expression, e.g. func [A-Z]"`
	Path    string `json:"path" jsonschema:"Folder or file to search: absolute in the sandbox or relative to /src (use . for all of /src)"`
	Include string `json:"include,omitempty" jsonschema:"Only files whose name matches this glob, e.g. *.go"`
}

// GrepResult is grep's result.
type GrepResult struct {
	sandbox.GrepResult
}

// Text implements texter.
func (r GrepResult) Text() string {
	return listText(r.Matches, r.Truncated, "(no matches)")
}

func (s *Server) grep(ctx context.Context, a GrepArgs) (GrepResult, error) {
	return query(ctx, s, a.Sandbox, func(h *sandbox.Handle) (*sandbox.GrepResult, error) {
		return s.svc.Grep(ctx, h, a.Pattern, a.Path, a.Include)
	}, func(r sandbox.GrepResult) GrepResult { return GrepResult{r} })
}

// query runs a read-only service call on a sandbox and wraps its result.
func query[T, R any](ctx context.Context, s *Server, name string, fn func(h *sandbox.Handle) (*T, error), wrap func(T) R) (R, error) {
	return withSandbox(ctx, s, name, func(h *sandbox.Handle) (R, error) {
		r, err := fn(h)
		if err != nil {
			var zero R
			return zero, err
		}
		return wrap(*r), nil
	})
}

func listText(items []string, truncated bool, empty string) string {
	if len(items) == 0 {
		return empty
	}
	t := strings.Join(items, "\n")
	if truncated {
		t += "\n[litterbox: truncated; narrow the search]"
	}
	return t
}
