// Package cli is the body of the litterbox command (the root main.go only
// calls Main): it parses the command line with kong, builds the logger and
// the engine, binds the service and maps errors to exit codes.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/log"
	kongcompletion "github.com/jotaen/kong-completion"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/commands"
	"github.com/litterbox-dev/litterbox/git"
	"github.com/litterbox-dev/litterbox/internal/buildinfo"
	"github.com/litterbox-dev/litterbox/internal/termtext"
	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/provider/kubernetes"
	"github.com/litterbox-dev/litterbox/provider/vm"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// Exit codes, documented in docs/cli.md.
const (
	exitOK          = 0
	exitFailed      = 1 // anything not below
	exitUsage       = 2 // bad flags or arguments, invalid name, not in a repository, a runtime the engine lacks
	exitNotFound    = 3 // no such sandbox
	exitExists      = 4 // the name is taken
	exitUnavailable = 5 // the engine (docker, podman) missing, not running or not answering; an engine or git command timed out
	exitSetup       = 6 // created, but the startup command failed (failed-setup)
	exitRefused     = 7 // refused to lose work, to conflict, or to run sandboxes that can reach each other: nothing changed
	exitState       = 8 // the sandbox is paused, stopped, incomplete or being created
)

type cli struct {
	LogLevel  string        `name:"log-level" default:"warn" enum:"debug,info,warn,error" env:"LITTERBOX_LOG_LEVEL" help:"Log level; debug logs every docker and git command (${enum})."`
	LogFormat string        `name:"log-format" default:"text" enum:"text,json,logfmt" env:"LITTERBOX_LOG_FORMAT" help:"Log format (${enum})."`
	Repo      string        `name:"repo" default:"." env:"LITTERBOX_REPO" help:"Repository to work on (any directory inside it)."`
	Engine    string        `name:"engine" default:"docker" enum:"docker,podman,kubernetes,vm" env:"LITTERBOX_ENGINE" help:"Engine that runs the sandboxes (${enum}): docker is whatever the docker CLI points at (DOCKER_HOST, DOCKER_CONTEXT); podman is Podman's Docker-compatible API at CONTAINER_HOST, else /run/podman/podman.sock, driven with the docker CLI; kubernetes is the cluster kubectl points at (KUBECONFIG, its current context), sandboxes being pods; vm is a VM of the repository's own (qemu, under KVM where it can) with a Docker engine inside, started on first use and suspended when idle (docs/kernels.md)."`
	VMIdle    time.Duration `name:"vm-idle" env:"LITTERBOX_VM_IDLE" help:"With --engine vm: how long the repository's VM runs unused before it is suspended (its memory saved; the next command resumes it). Default 30m."`

	Kubeconfig  string `name:"kubeconfig" env:"LITTERBOX_KUBECONFIG" help:"With --engine kubernetes: the kubeconfig file kubectl uses (else KUBECONFIG, else ~/.kube/config)."`
	KubeContext string `name:"kube-context" env:"LITTERBOX_KUBE_CONTEXT" help:"With --engine kubernetes: the kubeconfig context (else its current one)."`
	Namespace   string `name:"namespace" env:"LITTERBOX_NAMESPACE" help:"With --engine kubernetes: the namespace of the sandboxes' pods (else the context's)."`

	ControlTimeout  time.Duration `name:"control-timeout" default:"1m" env:"LITTERBOX_CONTROL_TIMEOUT" help:"How long a docker call that a healthy engine answers at once (ps, inspect, pause, rm, network) may take before litterbox stops it and reports the engine as not answering."`
	AllowUnisolated bool          `name:"allow-unisolated" env:"LITTERBOX_ALLOW_UNISOLATED" help:"Create sandboxes even on an engine where they can reach each other (one whose firewall does not separate their networks, e.g. dockerd --iptables=false); litterbox checks this once per engine start and refuses such an engine unless allowed. Also allow_unisolated = true in .litterbox.local.toml."`

	WorkTimeout time.Duration `name:"work-timeout" default:"10m" env:"LITTERBOX_WORK_TIMEOUT" help:"How long a git command, or a docker exec whose work is bounded (a snapshot's scan, a file operation, the copy into a new sandbox), may take before litterbox stops it."`

	PrintVersion kong.VersionFlag `name:"version" help:"Print the version and commit, then exit."`

	Create    commands.Create     `cmd:"" help:"Create a sandbox: branch litterbox/NAME from HEAD (or --from REF) and a container holding a copy of it."`
	List      commands.List       `cmd:"" aliases:"ls" help:"List sandboxes."`
	Pause     commands.Pause      `cmd:"" help:"Pause sandboxes, keeping their state."`
	Resume    commands.Resume     `cmd:"" help:"Resume paused sandboxes."`
	Delete    commands.Delete     `cmd:"" aliases:"rm" help:"Delete sandboxes: each one's container, network and branch."`
	Prune     commands.Prune      `cmd:"" help:"Remove the containers and networks of sandboxes whose repository no longer exists."`
	Shell     commands.Shell      `cmd:"" help:"Open an interactive shell in a sandbox, in /src."`
	Exec      commands.Exec       `cmd:"" help:"Run a command in a sandbox (litterbox exec NAME -- CMD ARGS...) and pass its exit code through."`
	Run       commands.Run        `cmd:"" help:"Run an agent harness (claude, codex, gemini, opencode, or --cmd PROG) inside a new sandbox, attached to the terminal: its build from the local cache, the model's API key held outside, its work committed to litterbox/NAME as it goes (docs/run.md)."`
	Log       commands.Log        `cmd:"" help:"List a sandbox's commits since its base, newest first."`
	Diff      commands.Diff       `cmd:"" help:"Show a sandbox's changes against its base."`
	Apply     commands.Apply      `cmd:"" help:"Put a sandbox's changes into the working tree, uncommitted; keep the sandbox."`
	Merge     commands.Merge      `cmd:"" help:"Merge a sandbox's branch into the current branch, then delete the sandbox."`
	Snapshot  commands.Snapshot   `cmd:"" help:"Commit what changed in a sandbox's /src to its branch now."`
	Fork      commands.Fork       `cmd:"" help:"Create a sandbox from another sandbox's branch tip (litterbox fork NAME NEW), snapshotting NAME first."`
	Rewind    commands.Rewind     `cmd:"" help:"Put a sandbox's /src back to one of its commits, recorded as a new commit; running services are restarted."`
	Pool      commands.Pool       `cmd:"" help:"Fill or show this repository's warm pool: sandboxes made ahead of time with HEAD copied in, which create takes in a fraction of the time."`
	Cp        commands.Cp         `cmd:"" help:"Copy files or folders between the host and a sandbox: litterbox cp SRC NAME:PATH, litterbox cp NAME:PATH DST (- is a tar stream on stdin or stdout)."`
	Milestone commands.Milestone  `cmd:"" help:"Squash a sandbox's commits since its last milestone into one."`
	Ports     commands.Ports      `cmd:"" help:"Show a sandbox's named ports and their host URLs."`
	Net       commands.Net        `cmd:"" help:"Show a sandbox's egress policy and recent connections, allow or deny a host for it (litterbox net NAME allow HOST[:PORT]), or print its log (litterbox net log NAME)."`
	Cache     commands.Cache      `cmd:"" help:"List, empty or fill this repository's shared package caches ([cache]: docs/config.md#shared-caches)."`
	Secrets   commands.Secrets    `cmd:"" help:"List the secrets you declared (names, sources, hosts: never a value) and the sandboxes bound to each (docs/secrets.md)."`
	Watch     commands.Watch      `cmd:"" help:"Follow what happens in sandboxes as it happens: each tool call, snapshot, milestone, pause, merge... one line each (--json for scripts)."`
	Audit     commands.Audit      `cmd:"" help:"Check the activity records: litterbox audit verify [NAME] names the first line of each that was changed, taken out or cut, or a rotated file gone missing (exit 1)."`
	UI        commands.UI         `cmd:"" name:"ui" help:"A terminal UI: the sandboxes live, each one's activity and diff, and the review actions (merge, apply, pause, delete, a shell...)."`
	Service   commands.ServiceCmd `cmd:"" help:"Start, stop or restart a sandbox's service, or show its status or logs."`
	MCP       commands.MCP        `cmd:"" name:"mcp" help:"Serve the agent tools over MCP on stdio (docs/mcp.md)."`
	Setup     commands.Setup      `cmd:"" help:"Set up a harness in this repository (claude, codex, gemini, opencode): litterbox as its MCP server, and its own shell and file-writing tools turned off on the host (docs/harnesses.md)."`
	Doctor    commands.Doctor     `cmd:"" help:"Check the engine, the image, git and disk space, one line each, with what to do about what fails."`
	VM        commands.VM         `cmd:"" name:"vm" help:"With --engine vm: show the repository's VM (running, suspended or stopped), or suspend or stop it."`
	Version   commands.Version    `cmd:"" help:"Print the version and commit."`

	Completion commands.Completion `cmd:"" help:"Print the code that turns on tab completion in bash, zsh or fish: source <(litterbox completion bash)."`
}

// Main runs litterbox with the process's arguments and standard streams and
// returns its exit code (docs/cli.md lists them).
func Main() int {
	if dir := os.Getenv(kubernetes.ProxyDaemonEnv); dir != "" {
		return kubernetes.ServeProxy(dir, os.Args[1:])
	}
	pauseGC()
	return run(os.Args[1:], os.Stdout, os.Stderr)
}

// The garbage collector is off while the command line is parsed, where
// all that is allocated stays live and a collection frees nothing, and
// for the brief commands below, whose process lives for a few tens of
// milliseconds: a collection (about 2 ms of CPU at the 4 MB heap of the
// start) would cost more than the memory it frees. A memory limit brings
// it back should one of them grow (a list of thousands of sandboxes).
// Every other command runs with the collector as Go sets it. A GOGC or
// GOMEMLIMIT of the user's is left alone.
const gcLimit = 256 << 20

// briefCommands are the commands that keep the collector off: only those
// whose heap stays far below gcLimit whatever the repository. A command
// whose live heap passes the limit collects again and again, each time
// over all of it (a 300 MiB heap: about 19 times the collections the
// collector as Go sets it makes, and twice the time): pause and resume
// are not brief, as on Kubernetes, or for a stopped sandbox on any
// engine, they carry a whole tree through memory (the snapshot before a
// pause, the branch's archive a resume copies into /src).
var briefCommands = map[string]bool{"list": true, "version": true, "ports": true}

// pauseGC turns the collector off (see gcLimit).
func pauseGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(gcLimit)
	}
}

// resumeGC gives the collector back to a command that is not brief.
func resumeGC(kctx *kong.Context) {
	if sel := kctx.Selected(); sel != nil && briefCommands[sel.Name] {
		return
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// Parser is litterbox's command line parser, for tests that check a
// document's commands and flags against the CLI's own.
func Parser(stdout, stderr io.Writer) (*kong.Kong, error) {
	return newParser(&cli{}, stdout, stderr)
}

// exitRequest is how kong's exit (after --help) unwinds out of Parse.
type exitRequest int

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			req, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(req)
		}
	}()
	var c cli
	kctx := parseOne(&c, args, stdout, stderr)
	if kctx == nil {
		c = cli{}
		parser, err := newParser(&c, stdout, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "litterbox:", err)
			return exitFailed
		}
		// A shell asking for completions (COMP_LINE set) is answered here, and
		// the program exits before parsing: see `litterbox completion`.
		kongcompletion.Register(parser, kongcompletion.WithPredictor(commands.SandboxPredictor, commands.SandboxNames{Env: completionEnv()}))
		if kctx, err = parser.Parse(args); err != nil {
			fmt.Fprintf(stderr, "Error: %v\nRun `litterbox --help` for usage.\n", err)
			return exitCode(err, exitUsage)
		}
	}
	resumeGC(kctx)

	logger := newLogger(stderr, c.LogLevel, c.LogFormat)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// What a command does is the user's doing in the activity record; the
	// MCP server and the UI say otherwise for what they run.
	ctx = activity.WithActor(ctx, activity.ByCLI)
	run := runner.Exec{Log: logger, Limits: runner.Limits{Control: c.ControlTimeout, Work: c.WorkTimeout}}
	// The MCP server serves an agent's calls until it exits.
	name, _, _ := strings.Cut(kctx.Command(), " ")
	longLived := name == "mcp"
	engine, machine, err := newEngine(ctx, engineOptions{Name: c.Engine, K: kubernetes.Options{Kubeconfig: c.Kubeconfig, Context: c.KubeContext, Namespace: c.Namespace, LongLived: longLived, Log: logger, Daemon: self()},
		RepoDir: c.Repo, VMIdle: c.VMIdle}, run)
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return exitUsage
	}
	opts := sandbox.EnvOptions()
	opts.AllowUnisolated = c.AllowUnisolated
	opts.LongLived = longLived
	sb := sandbox.New(engine, run, logger, opts)
	env := &commands.Env{
		Sandboxes: sb,
		VM:        machine,
		RepoDir:   c.Repo,
		Stdout:    stdout,
		Stderr:    stderr,
		Using:     namedSandboxes(kctx),
	}
	kctx.BindTo(ctx, (*context.Context)(nil))
	kctx.Bind(env)
	if err := kctx.Run(); err != nil {
		var ec *commands.ExitCodeError
		if errors.As(err, &ec) {
			return ec.Code
		}
		// An error can quote what an agent made (a file name, a message).
		fmt.Fprintf(stderr, "Error: %s\n", termtext.EscapeText(err.Error()))
		return exitCode(err, exitFailed)
	}
	return exitOK
}

// parseOne parses a command line that starts with a command's name (as
// `litterbox list` does) with a grammar of that command alone: building
// every command's grammar is about 2 ms of CPU, a tenth of a brief
// command's process. Any other command line (flags first, help, a shell's
// completion), or one that grammar refuses, gets nil, for the whole
// grammar to parse it and to word its errors and help.
func parseOne(c *cli, args []string, stdout, stderr io.Writer) *kong.Context {
	if len(args) == 0 || os.Getenv("COMP_LINE") != "" || slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" }) {
		return nil
	}
	others, ok := otherCommands(args[0])
	if !ok {
		return nil
	}
	parser, err := newParser(c, stdout, stderr, kong.IgnoreFields(`^cli\.(`+strings.Join(others, "|")+`)$`))
	if err != nil {
		return nil
	}
	kctx, err := parser.Parse(args)
	if err != nil || kctx.Selected() == nil {
		return nil
	}
	return kctx
}

// otherCommands are the fields of cli of every command but the one named
// name (or one of its aliases); ok says there is one.
func otherCommands(name string) (others []string, ok bool) {
	t := reflect.TypeFor[cli]()
	for i := range t.NumField() {
		f := t.Field(i)
		if _, cmd := f.Tag.Lookup("cmd"); !cmd {
			continue
		}
		if cmp.Or(f.Tag.Get("name"), strings.ToLower(f.Name)) == name || slices.Contains(strings.Split(f.Tag.Get("aliases"), ","), name) {
			ok = true
		} else {
			others = append(others, f.Name)
		}
	}
	return others, ok
}

// newParser builds the command line parser over c. Its exit (after --help,
// --version or a completion) panics with exitRequest, for run to recover.
func newParser(c *cli, stdout, stderr io.Writer, more ...kong.Option) (*kong.Kong, error) {
	return kong.New(c, append([]kong.Option{
		kong.Name("litterbox"),
		kong.Description("Disposable Docker (or Podman) sandboxes for coding agents, with every change kept on a git branch."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(commandHelp),
		kong.Vars{"version": buildinfo.String()},
		kong.KindMapper(reflect.String, rawString{}),
	}, more...)...)
}

// commandHelp prints a command's help with its own arguments and flags
// first, and the global flags, which every command takes, named after them
// on a line that says where they are described: as gh lists a command's
// inherited flags after its own, and docker leaves its global options to
// `docker --help`. The top level's help shows them in full.
func commandHelp(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		return kong.DefaultHelpPrinter(options, ctx)
	}
	var global []*kong.Flag
	for _, f := range ctx.Model.Flags {
		if !f.Hidden && f != ctx.Model.HelpFlag {
			global = append(global, f)
		}
	}
	for _, f := range global {
		f.Hidden = true
	}
	err := kong.DefaultHelpPrinter(options, ctx)
	for _, f := range global {
		f.Hidden = false
	}
	if err != nil || len(global) == 0 {
		return err
	}
	line := "\nGlobal flags (`" + ctx.Model.Name + " --help` describes them):\n "
	width := len(" ")
	for i, f := range global {
		name := "--" + f.Name
		if i < len(global)-1 {
			name += ","
		}
		if width+1+len(name) > 78 {
			line += "\n "
			width = len(" ")
		}
		line += " " + name
		width += 1 + len(name)
	}
	_, err = fmt.Fprintln(ctx.Stdout, line)
	return err
}

// rawString decodes a string argument, flag or env value as the bytes it
// was given. kong's own string decoder round-trips through JSON, which turns
// bytes that are not UTF-8 into U+FFFD: paths and messages are bytes.
type rawString struct{}

func (rawString) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	t, err := ctx.Scan.PopValue("string")
	if err != nil {
		return err
	}
	if v, ok := t.Value.(string); ok {
		target.SetString(v)
		return nil
	}
	target.SetString(fmt.Sprint(t.Value))
	return nil
}

// completionEnv is what sandbox names are completed with: the repository of
// LITTERBOX_REPO or the current directory, no log (stdout is the shell's list
// of words, stderr would garble the prompt), and short time limits, because a
// user pressing TAB waits for the answer.
func completionEnv() *commands.Env {
	quiet := log.New(io.Discard)
	dir := os.Getenv("LITTERBOX_REPO")
	if dir == "" {
		dir = "."
	}
	limits := runner.Limits{Control: 5 * time.Second, Work: 5 * time.Second}
	run := runner.Exec{Log: quiet, Limits: limits}
	// Flags are not parsed yet: the engine comes from the environment, as
	// --engine's would; an unknown one falls back to docker. A VM that
	// does not run is not started for a TAB: nothing is completed.
	var engine provider.Provider = noEngine{errors.New("the repository's VM does not run")}
	if name := os.Getenv("LITTERBOX_ENGINE"); name == vm.Engine {
		if m, err := vmMachine(context.Background(), engineOptions{RepoDir: dir}, run); err == nil && m.Status().State == vm.StateRunning {
			if p, err := vm.NewProvider(m, run); err == nil {
				engine = p
			}
		}
	} else if p, _, err := newEngine(context.Background(), engineOptions{Name: name, K: kubernetes.Options{
		Kubeconfig: os.Getenv("LITTERBOX_KUBECONFIG"), Context: os.Getenv("LITTERBOX_KUBE_CONTEXT"), Namespace: os.Getenv("LITTERBOX_NAMESPACE"),
	}}, run); err == nil {
		engine = p
	} else {
		engine, _ = docker.New(docker.Options{Runner: run})
	}
	return &commands.Env{
		Sandboxes: sandbox.New(engine, run, quiet, sandbox.EnvOptions()),
		RepoDir:   dir,
		Stdout:    io.Discard,
		Stderr:    io.Discard,
	}
}

// exitCode maps the outcomes callers branch on to documented exit codes.
func exitCode(err error, fallback int) int {
	switch {
	case errors.Is(err, api.ErrConfig), errors.Is(err, api.ErrNoService), errors.Is(err, api.ErrImage), errors.Is(err, api.ErrNoRuntime):
		return exitUsage
	case errors.Is(err, api.ErrInvalidName), errors.Is(err, api.ErrBadRef), errors.Is(err, git.ErrNotRepository), errors.Is(err, git.ErrNoCommits):
		return exitUsage
	case errors.Is(err, api.ErrBadArgument), errors.Is(err, api.ErrBadPath):
		return exitUsage
	case errors.Is(err, api.ErrNotFound):
		return exitNotFound
	case errors.Is(err, api.ErrExists):
		return exitExists
	case errors.Is(err, api.ErrUnavailable), errors.Is(err, runner.ErrTimeout):
		return exitUnavailable
	case errors.Is(err, api.ErrSetupFailed):
		return exitSetup
	case errors.Is(err, api.ErrUnmerged), errors.Is(err, api.ErrWouldLose), errors.Is(err, api.ErrConflict), errors.Is(err, api.ErrMoved), errors.Is(err, api.ErrBadArchive), errors.Is(err, api.ErrUnisolated), errors.Is(err, api.ErrPortRange):
		return exitRefused
	case errors.Is(err, api.ErrPaused), errors.Is(err, api.ErrStopped), errors.Is(err, api.ErrIncomplete):
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

// namedSandboxes are the slugs of the sandboxes the parsed command names:
// the values of its arguments completed as sandbox names
// (commands.SandboxPredictor).
func namedSandboxes(kctx *kong.Context) []string {
	var slugs []string
	for _, p := range kctx.Path {
		if p.Positional == nil || p.Positional.Tag.Get("predictor") != commands.SandboxPredictor {
			continue
		}
		var names []string
		switch v := p.Positional.Target.Interface().(type) {
		case string:
			names = []string{v}
		case []string:
			names = v
		}
		for _, n := range names {
			if slug, err := api.Slugify(n); err == nil {
				slugs = append(slugs, slug)
			}
		}
	}
	return slugs
}

// self is this program, which keeps the shared proxy of one-shot claims
// on Kubernetes (kubernetes.ProxyDaemonEnv); "" when it cannot be found.
func self() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
