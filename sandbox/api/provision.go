package api

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/config"
	"github.com/litterbox-dev/litterbox/secrets"
)

// CreateOptions tune Create. The zero value is the documented default.
type CreateOptions struct {
	// Setup is the startup command, as argv; nil means the configuration's
	// (see Config), which defaults to DefaultSetup.
	Setup []string
	// Config is the sandbox configuration; nil means LoadConfig's.
	Config *config.Config
	// Progress, when set, is told each step as it starts.
	Progress func(step string)
	// Note, when set, is told once of a wait whose cause the user cannot
	// see, as a sentence: a create of a name whose delete is still
	// ending in another process (its gateway and volume going) waits for
	// it. Unlike Progress's steps it is worth a line of its own.
	Note func(msg string)
	// Image is the image to make the sandbox from (`create --image`); ""
	// means the configuration's, else the service's default. An image
	// other than DefaultImage must be on the engine: it is never pulled.
	Image string
	// ByAgent says an agent asks (MCP): an Image it names must be one the
	// user lists in agent_images, and From must be a commit the user lets
	// agents start from (trust.go).
	ByAgent bool
	// FromBranch recreates a sandbox whose container is gone from its
	// existing branch: the container holds the branch tip, the branch is
	// kept (never made, never removed on rollback), and the base is the
	// merge base of HEAD and the branch.
	FromBranch bool
	// From, when set, is the branch, tag or commit the sandbox starts from
	// instead of HEAD: its commit is copied in and is the sandbox's base,
	// which diff, log, apply and merge compare with. A name that resolves
	// to no commit is ErrBadRef, before anything is made.
	From string
	// NoPool makes a new container even when the warm pool holds one
	// (pool.go).
	NoPool bool
	// FillCache makes the repository's shared caches writable in this
	// sandbox whatever [cache] mode says: the throwaway sandbox of
	// `litterbox cache fill`, whose setup fills them. Never pooled.
	FillCache bool
	// Runtime is the engine's runtime to run the sandbox under (`create
	// --runtime`: "gvisor", or a name the engine offers); "" means the
	// configuration's, else the engine's default. A sandbox made from
	// another's work without one runs under the runtime its source was
	// made with (trust.go). One the engine lacks is refused before
	// anything is made.
	Runtime string
	// Idle, when set, is how long the sandbox may go without activity
	// before it is paused (`create --idle`; 0: never), instead of idle in
	// the configuration.
	Idle *time.Duration
	// Binds are host directories mounted read-only (a harness's build,
	// `litterbox run`); a sandbox with any is not taken from the pool.
	Binds []provider.Bind
	// Secrets are declared for this sandbox beside the user's (the model's
	// API key of `litterbox run`, from the user's environment); one the
	// user declared of the same name wins. A sandbox that could not hold
	// them (no gateway) is refused.
	Secrets []secrets.Declaration
	// Allow are egress allowlist entries added to the configuration's
	// for this sandbox (the model API's host of `litterbox run`).
	Allow []string
	// CheckImage, when set, is asked whether the image (the one the
	// sandbox would be made from) can run what the caller will run in it,
	// before anything is made: `litterbox run`'s harness needs glibc or
	// node.
	CheckImage func(ctx context.Context, image string) error
	// ForkOf is the sandbox Fork makes this one from: its settings are
	// taken, and From (its branch tip) is not checked as an agent's. Fork
	// sets it; a caller leaves it empty.
	ForkOf string `json:"-"`
}

// Created is the result of Create.
type Created struct {
	Sandbox
	// Image is the image the sandbox runs.
	Image string `json:"image"`
	// SetupOutput is what the startup command printed (stdout then stderr).
	SetupOutput string `json:"setupOutput"`
	// Uncommitted is set when the working tree had uncommitted changes to
	// tracked files: the sandbox holds HEAD, so those changes are not in it.
	Uncommitted bool `json:"uncommittedChangesNotCopied,omitempty"`
	// Ports are the named ports with their host URLs.
	Ports []PortInfo `json:"ports,omitempty"`
	// Services are the services started because of autostart.
	Services []ServiceStatus `json:"services,omitempty"`
	// RemovedIncomplete: an incomplete sandbox of this name, left by an
	// interrupted create, was removed first.
	RemovedIncomplete bool `json:"removedIncomplete,omitempty"`
	// Pooled: the sandbox is a container of the warm pool, made ahead of
	// time with the commit already copied in.
	Pooled bool `json:"pooled,omitempty"`
	// Bootstrapped are the ignored files of the working tree copied in
	// beside the commit (.worktreeinclude, [bootstrap] include), which no
	// snapshot records.
	Bootstrapped []string `json:"bootstrapped,omitempty"`
}

// SetupError is a startup command that failed. The sandbox exists, marked
// failed-setup.
type SetupError struct {
	Slug     string
	Command  []string
	ExitCode int
	Output   string
}

// Forked is the result of Fork.
type Forked struct {
	Created
	// From is the sandbox forked; Snapshot what its snapshot before the
	// fork committed (nil when it was not running).
	From     string          `json:"from"`
	Snapshot *SnapshotResult `json:"snapshot,omitempty"`
}

func (e *SetupError) Error() string {
	return e.what() + fmt.Sprintf("\nInspect it with `litterbox shell %s`, or delete it with `litterbox delete %s`.", e.Slug, e.Slug)
}

// AgentMessage is the message for an agent, which has no shell or delete
// command but can use the sandbox with its tools.
func (e *SetupError) AgentMessage() string {
	return e.what() + fmt.Sprintf("\nThe sandbox exists and its tools work: investigate with bash (sandbox=%q), for example by running the setup command yourself, or tell the user.", e.Slug)
}

func (e *SetupError) what() string {
	msg := fmt.Sprintf("Sandbox '%s' was created, but its setup command `%s` failed with exit code %d; it is marked failed-setup.", e.Slug, runner.Quote(e.Command...), e.ExitCode)
	if out := strings.TrimSpace(e.Output); out != "" {
		msg += "\nsetup output:\n" + out
	}
	return msg
}

// Is makes errors.Is(err, ErrSetupFailed) hold.
func (e *SetupError) Is(target error) bool { return target == ErrSetupFailed }
