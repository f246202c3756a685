// Command litterbox gives coding agents disposable Docker sandboxes holding a
// copy of the repository, and keeps their work on git branches litterbox/<name>.
//
// This file only wires things up: it parses the command line with kong, builds
// the logger, binds the service and maps errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"

	"github.com/litterbox-dev/litterbox/commands"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailed      = 1 // anything not below
	exitUsage       = 2 // bad flags or arguments, invalid name, not in a repository
	exitNotFound    = 3 // no such sandbox
	exitExists      = 4 // the name is taken
	exitUnavailable = 5 // docker missing or not running
	exitSetup       = 6 // created, but the startup command failed (failed-setup)
	exitRefused     = 7 // refused to lose work or to conflict: nothing changed
	exitState       = 8 // the sandbox is paused or stopped
)

type cli struct {
	LogLevel  string `name:"log-level" default:"warn" enum:"debug,info,warn,error" env:"LITTERBOX_LOG_LEVEL" help:"Log level; debug logs every docker and git command (${enum})."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json,logfmt" env:"LITTERBOX_LOG_FORMAT" help:"Log format (${enum})."`
	Repo      string `name:"repo" default:"." env:"LITTERBOX_REPO" help:"Repository to work on (any directory inside it)."`

	Create    commands.Create     `cmd:"" help:"Create a sandbox: branch litterbox/NAME from HEAD and a container holding a copy of it."`
	List      commands.List       `cmd:"" aliases:"ls" help:"List sandboxes."`
	Pause     commands.Pause      `cmd:"" help:"Pause sandboxes, keeping their state."`
	Resume    commands.Resume     `cmd:"" help:"Resume paused sandboxes."`
	Delete    commands.Delete     `cmd:"" aliases:"rm" help:"Delete a sandbox: its container, network and branch."`
	Shell     commands.Shell      `cmd:"" help:"Open an interactive shell in a sandbox, in /src."`
	Exec      commands.Exec       `cmd:"" help:"Run a command in a sandbox (litterbox exec NAME -- CMD ARGS...) and pass its exit code through."`
	Log       commands.Log        `cmd:"" help:"List a sandbox's commits since its base, newest first."`
	Diff      commands.Diff       `cmd:"" help:"Show a sandbox's changes against its base."`
	Apply     commands.Apply      `cmd:"" help:"Put a sandbox's changes into the working tree, uncommitted; keep the sandbox."`
	Merge     commands.Merge      `cmd:"" help:"Merge a sandbox's branch into the current branch, then delete the sandbox."`
	Snapshot  commands.Snapshot   `cmd:"" help:"Commit what changed in a sandbox's /src to its branch now."`
	Milestone commands.Milestone  `cmd:"" help:"Squash a sandbox's commits since its last milestone into one."`
	Ports     commands.Ports      `cmd:"" help:"Show a sandbox's named ports and their host URLs."`
	Service   commands.ServiceCmd `cmd:"" help:"Start, stop or restart a sandbox's service, or show its status or logs."`
	MCP       commands.MCP        `cmd:"" name:"mcp" help:"Serve the agent tools over MCP on stdio (docs/mcp.md)."`
	Version   commands.Version    `cmd:"" help:"Print the version."`

	ScanInternal commands.ScanInternal `cmd:"" name:"scan-internal" hidden:"" help:"Runs inside a sandbox for snapshots."`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitRequest is how kong's exit (after --help) unwinds out of Parse.
type exitRequest int

func run(args []string, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("litterbox"),
		kong.Description("Disposable Docker sandboxes for coding agents, with every change kept on a git branch."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintln(stderr, "litterbox:", err)
		return exitFailed
	}
	defer func() {
		if r := recover(); r != nil {
			req, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(req)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\nRun `litterbox --help` for usage.\n", err)
		return exitCode(err, exitUsage)
	}

	logger := newLogger(stderr, c.LogLevel, c.LogFormat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &commands.Env{
		Service: sandbox.New(runner.Exec{Log: logger}, logger),
		RepoDir: c.Repo,
		Stdout:  stdout,
		Stderr:  stderr,
	}
	kctx.BindTo(ctx, (*context.Context)(nil))
	kctx.Bind(env)
	if err := kctx.Run(); err != nil {
		var ec *commands.ExitCodeError
		if errors.As(err, &ec) {
			return ec.Code
		}
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return exitCode(err, exitFailed)
	}
	return exitOK
}

// exitCode maps the outcomes callers branch on to documented exit codes.
func exitCode(err error, fallback int) int {
	switch {
	case errors.Is(err, sandbox.ErrConfig), errors.Is(err, sandbox.ErrNoService):
		return exitUsage
	case errors.Is(err, sandbox.ErrInvalidName), errors.Is(err, git.ErrNotRepository), errors.Is(err, git.ErrNoCommits):
		return exitUsage
	case errors.Is(err, sandbox.ErrNotFound):
		return exitNotFound
	case errors.Is(err, sandbox.ErrExists):
		return exitExists
	case errors.Is(err, sandbox.ErrUnavailable):
		return exitUnavailable
	case errors.Is(err, sandbox.ErrSetupFailed):
		return exitSetup
	case errors.Is(err, sandbox.ErrUnmerged), errors.Is(err, sandbox.ErrConflict):
		return exitRefused
	case errors.Is(err, sandbox.ErrPaused), errors.Is(err, sandbox.ErrStopped):
		return exitState
	}
	return fallback
}

func newLogger(w io.Writer, level, format string) *log.Logger {
	l := log.NewWithOptions(w, log.Options{Prefix: "litterbox", TimeFormat: time.RFC3339Nano})
	if lvl, err := log.ParseLevel(level); err == nil {
		l.SetLevel(lvl)
	}
	switch format {
	case "json":
		l.SetFormatter(log.JSONFormatter)
		l.SetReportTimestamp(true)
	case "logfmt":
		l.SetFormatter(log.LogfmtFormatter)
		l.SetReportTimestamp(true)
	}
	return l
}
