// Package mcp is Litterbox's MCP server: the tools an agent uses to work in
// sandboxes (sandbox-create, read, write, patch, bash, ls, glob, grep,
// milestone, sandbox-ports, sandbox-service). The handlers are thin: they
// resolve the sandbox, call the sandbox service and shape its result. Every
// failure an agent can act on is a tool result with isError and a message
// saying what to do next, never a protocol error.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/log"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Sandboxes is what the server needs of the sandbox service.
type Sandboxes interface {
	Create(ctx context.Context, r *api.Repo, name string, opts api.CreateOptions) (*api.Created, error)
	Handle(ctx context.Context, r *api.Repo, name string) (*api.Handle, error)
	Milestone(ctx context.Context, h *api.Handle, message string) (*api.MilestoneResult, error)
	Read(ctx context.Context, h *api.Handle, p string, o api.ReadOptions) (*api.ReadResult, error)
	Write(ctx context.Context, h *api.Handle, p string, content []byte) (*api.WriteResult, *api.SnapshotResult, error)
	Patch(ctx context.Context, h *api.Handle, p, diff string) (*api.PatchResult, *api.SnapshotResult, error)
	Bash(ctx context.Context, h *api.Handle, command string, o api.BashOptions) (*api.BashResult, *api.SnapshotResult, error)
	Ls(ctx context.Context, h *api.Handle, p string, recursive bool) (*api.LsResult, error)
	Glob(ctx context.Context, h *api.Handle, pattern, p string) (*api.GlobResult, error)
	Grep(ctx context.Context, h *api.Handle, pattern, p, include string) (*api.GrepResult, error)
	Ports(ctx context.Context, h *api.Handle) (*api.PortsResult, error)
	ServiceAction(ctx context.Context, h *api.Handle, name, action string, lines int) (*api.ServiceResult, error)
	Fork(ctx context.Context, r *api.Repo, name, newName string, opts api.CreateOptions) (*api.Forked, error)
	Rewind(ctx context.Context, h *api.Handle, rev string) (*api.RewindResult, error)
	AskNet(ctx context.Context, r *api.Repo, name, host, reason string) (sandbox.NetRequest, error)
	Wake(ctx context.Context, h *api.Handle) (bool, error)
}

// Server serves the tools for one repository.
type Server struct {
	sandboxes Sandboxes
	repo      *api.Repo
	log       *log.Logger

	// MaxOutput caps every response, in bytes of JSON (DefaultMaxOutput;
	// at least MinMaxOutput).
	MaxOutput int
	// ProgressInterval is how often a call sends a progress notification
	// when its client asked for them (DefaultProgressInterval; 0 sends none).
	ProgressInterval time.Duration
	// Created, when set, is called after each sandbox-create that made a
	// sandbox (the warm pool's refill; a fork never takes a pooled one).
	Created func()
	// Creating, when set, is called as each sandbox-create starts, and
	// what it returns as it ends: the warm pool's refill yields to it
	// meanwhile (runner.Gate).
	Creating func() (done func())

	// maxRequest and maxHeld are MaxRequestBytes and MaxHeldBytes, smaller
	// in tests.
	maxRequest, maxHeld int

	mu      sync.Mutex
	handles map[string]*api.Handle // by slug
	locks   map[string]*sync.Mutex // by slug: one file mutation at a time
}

// New builds a server over sandboxes for the repository r.
func New(sandboxes Sandboxes, r *api.Repo, logger *log.Logger) *Server {
	if logger == nil {
		logger = log.Default()
	}
	return &Server{sandboxes: sandboxes, repo: r, log: logger, MaxOutput: DefaultMaxOutput, ProgressInterval: DefaultProgressInterval,
		maxRequest: MaxRequestBytes, maxHeld: MaxHeldBytes,
		handles: map[string]*api.Handle{}, locks: map[string]*sync.Mutex{}}
}

// Defaults and bounds of the server's settings.
const (
	DefaultMaxOutput        = 256 << 10
	MinMaxOutput            = 16 << 10
	DefaultProgressInterval = 15 * time.Second
)

// Instructions tell the agent how the tools fit together.
const Instructions = `Litterbox gives you disposable sandboxes: Linux (busybox) containers holding a copy of this git repository in /src.
Create one with sandbox-create, then work in it with read, write, patch, bash, ls, glob and grep, passing its name as "sandbox".
Paths are absolute in the sandbox or relative to /src. Hidden files and folders (names starting with ".") are not available to you: read, write and patch refuse them, and ls, glob and grep leave them out.
Every write, patch and bash is committed to the git branch litterbox/<name> for the user to review; you never need git.
When a piece of work is done, call milestone with a message that says what it does: it squashes the commits since the last milestone into one.
The sandbox has no network access to other sandboxes and no git; it has busybox tools (sh, grep, find, sed, awk, diff, patch).
Servers defined in the repository's .litterbox.toml run as services: control them with sandbox-service, and find the host URLs of the named ports with sandbox-ports.
bash kills a command after 120 seconds unless you pass a longer timeout (at most 3600).
You cannot delete, pause or resume sandboxes: when a tool says a sandbox is paused or stopped, ask the user to run the command it names.`

// MCPServer builds the mcp-go server with every tool registered.
func (s *Server) MCPServer(version string) *server.MCPServer {
	if s.MaxOutput < MinMaxOutput {
		s.MaxOutput = MinMaxOutput
	}
	ms := server.NewMCPServer("litterbox", version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithInstructions(Instructions),
		server.WithLogger(slog.New(s.log)),
	)
	for _, t := range s.tools() {
		ms.AddTool(t.tool, t.handler)
	}
	return ms
}

// progress sends progress notifications for a call while it runs, every
// ProgressInterval, when the client asked for them with a progress token
// (the TypeScript SDK times a request out after 60 s unless progress resets
// it). The returned func stops them, before the call's response goes out.
func (s *Server) progress(ctx context.Context, req mcp.CallToolRequest, tool string) func() {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil || s.ProgressInterval <= 0 {
		return func() {}
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return func() {}
	}
	token := req.Params.Meta.ProgressToken
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(s.ProgressInterval)
		defer t.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				elapsed := time.Since(start).Round(time.Second)
				err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token,
					"progress":      n,
					"message":       fmt.Sprintf("%s still running after %s", tool, elapsed),
				})
				if err != nil {
					s.log.Debug("progress notification not sent", "err", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// handle resolves a sandbox name to a running sandbox, once per slug.
func (s *Server) handle(ctx context.Context, name string) (*api.Handle, error) {
	slug, err := api.Slugify(name)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	h := s.handles[slug]
	s.mu.Unlock()
	if h != nil {
		return h, nil
	}
	h, err = s.sandboxes.Handle(ctx, s.repo, slug)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.handles[slug] = h
	s.mu.Unlock()
	return h, nil
}

// forget drops a cached handle whose container docker no longer knows.
func (s *Server) forget(h *api.Handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handles[h.Slug] == h {
		delete(s.handles, h.Slug)
	}
}

// lock is the per-sandbox lock that keeps two file mutations on one sandbox
// from interleaving (patch reads, then writes).
func (s *Server) lock(slug string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[slug]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[slug] = l
	}
	return l
}

// withSandbox resolves name and runs fn with its handle. When docker says the
// container is gone, the cached handle is dropped and the sandbox resolved
// again once: it may have been recreated under the same name.
//
// Each call is activity on the sandbox, and resumes one paused for being
// idle first (Wake).
func withSandbox[R any](ctx context.Context, s *Server, name string, fn func(h *api.Handle) (R, error)) (R, error) {
	h, err := s.handle(ctx, name)
	if err == nil {
		_, err = s.sandboxes.Wake(ctx, h)
	}
	if err != nil {
		var zero R
		return zero, err
	}
	r, err := fn(h)
	if errors.Is(err, api.ErrNotFound) {
		s.forget(h)
		if h, err = s.handle(ctx, name); err != nil {
			return r, err
		}
		return fn(h)
	}
	return r, err
}

// snapshotInfo shapes a mutation's snapshot outcome for its result. A failed
// snapshot does not fail the tool: the mutation happened.
func (s *Server) snapshotInfo(h *api.Handle, res *api.SnapshotResult, err error) SnapshotInfo {
	if err == nil && res == nil {
		err = errors.New("no snapshot result")
	}
	if err != nil {
		s.log.Warn("snapshot failed", "sandbox", h.Slug, "err", err)
		return SnapshotInfo{Error: clip(err.Error(), 2048)}
	}
	info := SnapshotInfo{Committed: res.Committed, Commit: res.Commit, Skipped: res.Skipped, Ms: res.Ms, files: res.Files}
	// A result names at most maxSkipped files: thousands of fifos must not
	// fill a response.
	if n := len(info.Skipped); n > maxSkipped {
		info.Skipped, info.SkippedMore = info.Skipped[:maxSkipped], n-maxSkipped
	}
	for i, sk := range info.Skipped {
		info.Skipped[i] = api.Skipped{Path: clip(sk.Path, 512), Reason: clip(sk.Reason, 512)}
	}
	return info
}

// maxSkipped is the most skipped files a result names.
const maxSkipped = 10

// clip cuts s to at most n bytes, at a rune, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// SnapshotInfo is the snapshot part of a mutation's result.
type SnapshotInfo struct {
	Committed bool          `json:"committed"`
	Commit    string        `json:"commit,omitempty"`
	Skipped   []api.Skipped `json:"skipped,omitempty"`
	// SkippedMore counts skipped files past those named.
	SkippedMore int    `json:"skippedMore,omitempty"`
	Error       string `json:"error,omitempty"`
	// Ms is what the snapshot took, in milliseconds.
	Ms float64 `json:"ms,omitempty"`
	// files are the paths the commit changed, for the activity record.
	files []string
}

func (i SnapshotInfo) text() string {
	switch {
	case i.Error != "":
		return "snapshot failed: " + i.Error
	case i.Committed:
		t := "committed " + shortID(i.Commit)
		for _, sk := range i.Skipped {
			t += fmt.Sprintf("; skipped %s (%s)", sk.Path, sk.Reason)
		}
		if i.SkippedMore > 0 {
			t += fmt.Sprintf("; skipped %d more", i.SkippedMore)
		}
		return t
	}
	return "nothing to commit"
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// bashMessage is the snapshot message of a bash call: its first line,
// shortened.
func bashMessage(command string) string {
	line, _, multi := strings.Cut(strings.TrimSpace(command), "\n")
	line = strings.TrimSpace(line)
	const max = 72
	if len(line) > max {
		cut := max
		for cut > 0 && line[cut]&0xC0 == 0x80 {
			cut--
		}
		line, multi = line[:cut], true
	}
	if multi {
		line += " ..."
	}
	return "bash: " + line
}

// toolError is the message an agent sees for err.
func toolError(err error) string {
	var se *api.Error
	var setup *api.SetupError
	switch {
	case errors.As(err, &setup):
		return setup.AgentMessage()
	case errors.As(err, &se):
		switch {
		case se.Agent != "":
			return se.Agent
		case errors.Is(err, api.ErrPaused), errors.Is(err, api.ErrStopped):
			return se.Msg + " You cannot do this yourself: ask the user to run that command."
		case errors.Is(err, api.ErrNotFound):
			return se.Msg + " Check the name, or create it with sandbox-create."
		}
		return se.Msg
	case errors.Is(err, api.ErrUnavailable):
		return err.Error() + " (you cannot fix this from the sandbox: ask the user to get the engine answering)"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "the call was cancelled or ran out of time: " + err.Error()
	}
	return err.Error()
}
