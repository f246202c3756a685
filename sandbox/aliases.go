package sandbox

import (
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/doctor"
	"github.com/litterbox-dev/litterbox/sandbox/internal/files"
	"github.com/litterbox-dev/litterbox/sandbox/internal/inventory"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pause"
	"github.com/litterbox-dev/litterbox/sandbox/internal/pool"
	"github.com/litterbox-dev/litterbox/sandbox/internal/provision"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
	"github.com/litterbox-dev/litterbox/sandbox/internal/review"
	"github.com/litterbox-dev/litterbox/sandbox/internal/services"
)

// The vocabulary the CLI and the MCP server share with the service.
type (
	// Repo is the repository sandboxes are made from.
	Repo = core.Repo
	// Handle is a sandbox resolved once for repeated tool calls.
	Handle = core.Handle
	// Error is an outcome with the message a user should read.
	Error = core.Error
	// InvalidNameError is a name whose slug is empty or too long.
	InvalidNameError = core.InvalidNameError
	// PoolEntry is one pooled container, as `litterbox pool` and `list`
	// show it.
	PoolEntry = pool.Entry
	// Sandbox is one sandbox as list and create report it.
	Sandbox = inventory.Sandbox
	// Status is what list shows for a sandbox.
	Status = inventory.Status
	// DeleteReport says what Delete removed.
	DeleteReport = inventory.DeleteReport
	// Pruned is a container or network Prune removed.
	Pruned = inventory.Pruned
	// ServiceStatus is what the supervisor knows about one service.
	ServiceStatus = services.Status
	// ServiceResult is the outcome of one service action.
	ServiceResult = services.Result
	// PortInfo is one named port of a sandbox and where the host reaches it.
	PortInfo = services.PortInfo
	// PortsResult lists a sandbox's named ports.
	PortsResult = services.PortsResult
	// SnapshotResult says what a snapshot committed to the sandbox's branch.
	SnapshotResult = recording.SnapshotResult
	// Skipped is a file a snapshot could not commit, with the reason.
	Skipped = recording.Skipped
	// RunResult is what the command did.
	RunResult = recording.RunResult
	// MilestoneResult says what a milestone squashed.
	MilestoneResult = recording.MilestoneResult
	// RewindResult is the result of Rewind.
	RewindResult = recording.RewindResult
	// ReadOptions select lines of a file.
	ReadOptions = files.ReadOptions
	// ReadResult is a slice of a text file.
	ReadResult = files.ReadResult
	// WriteResult says what a write did.
	WriteResult = files.WriteResult
	// PatchResult says what a patch did.
	PatchResult = files.PatchResult
	// LsResult lists a folder.
	LsResult = files.LsResult
	// GlobResult is the files matching a pattern.
	GlobResult = files.GlobResult
	// GrepResult is the lines matching a pattern.
	GrepResult = files.GrepResult
	// BashOptions tune Bash.
	BashOptions = files.BashOptions
	// BashResult is what a command did.
	BashResult = files.BashResult
	// CopyResult says what a copy did.
	CopyResult = files.CopyResult
	// SkippedEntry is an entry of an archive cp left out, with the reason.
	SkippedEntry = files.SkippedEntry
	// CreateOptions tune Create.
	CreateOptions = provision.CreateOptions
	// Created is the result of Create.
	Created = provision.Created
	// Forked is the result of Fork.
	Forked = provision.Forked
	// SetupError is a startup command that failed; the sandbox exists,
	// marked failed-setup.
	SetupError = provision.SetupError
	// History is a sandbox's branch since its base.
	History = review.History
	// DiffResult says what Diff compared.
	DiffResult = review.DiffResult
	// ApplyResult says what Apply did.
	ApplyResult = review.ApplyResult
	// MergeResult says what Merge did.
	MergeResult = review.MergeResult
	// Outcome is the result of pausing or resuming one sandbox.
	Outcome = pause.Outcome
	// Check is one line of `litterbox doctor`.
	Check = doctor.Check
	// CheckStatus is the outcome of a check.
	CheckStatus = doctor.CheckStatus
)

// Outcomes of a doctor's check.
const (
	CheckOK   = doctor.CheckOK
	CheckWarn = doctor.CheckWarn
	CheckFail = doctor.CheckFail
	CheckSkip = doctor.CheckSkip
)

// Limits of the file tools.
const (
	MaxBashTimeout = files.MaxBashTimeout
	MaxWriteBytes  = files.MaxWriteBytes
	MaxReadBytes   = files.MaxReadBytes
)

// Limits and defaults of the recording.
const (
	DefaultMaxFileSize = recording.DefaultMaxFileSize
	DefaultRecordLimit = recording.DefaultRecordLimit
	DefaultRunTimeout  = recording.DefaultRunTimeout
	DefaultOutputCap   = recording.DefaultOutputCap
	MaxMessageBytes    = recording.MaxMessageBytes
)

// Service actions, and what the logs action shows by default.
const (
	ActionStart     = services.ActionStart
	ActionStop      = services.ActionStop
	ActionRestart   = services.ActionRestart
	ActionStatus    = services.ActionStatus
	ActionLogs      = services.ActionLogs
	DefaultLogLines = services.DefaultLogLines
)

// ServiceActions are the actions ServiceAction takes, in the order shown
// to users.
var ServiceActions = services.Actions

// ErrNoService is a service name the sandbox does not define.
var ErrNoService = services.ErrUnknown

// Statuses list shows (see inventory.Status).
const (
	StatusActive      = inventory.StatusActive
	StatusPaused      = inventory.StatusPaused
	StatusStopped     = inventory.StatusStopped
	StatusFailedSetup = inventory.StatusFailedSetup
	StatusGatewayDown = inventory.StatusGatewayDown
	StatusCreating    = inventory.StatusCreating
	StatusIncomplete  = inventory.StatusIncomplete
	StatusNoContainer = inventory.StatusNoContainer
	StatusNoBranch    = inventory.StatusNoBranch
	StatusNoSandbox   = inventory.StatusNoSandbox
)

// Labels and defaults.
const (
	LabelSlug     = core.LabelSlug
	LabelRepo     = core.LabelRepo
	LabelGitDir   = core.LabelGitDir
	LabelBranch   = core.LabelBranch
	LabelBase     = core.LabelBase
	LabelImage    = core.LabelImage
	LabelPlatform = core.LabelPlatform
	LabelRepoID   = core.LabelRepoID
	BranchPrefix  = core.BranchPrefix
	DefaultImage  = core.DefaultImage
	ConfigFile    = core.ConfigFile
	Workdir       = core.Workdir
)

// Outcomes callers branch on (see package core).
var (
	ErrInvalidName   = core.ErrInvalidName
	ErrExists        = core.ErrExists
	ErrNotFound      = core.ErrNotFound
	ErrPaused        = core.ErrPaused
	ErrStopped       = core.ErrStopped
	ErrIncomplete    = core.ErrIncomplete
	ErrUnmerged      = core.ErrUnmerged
	ErrWouldLose     = core.ErrWouldLose
	ErrSetupFailed   = core.ErrSetupFailed
	ErrPartialDelete = core.ErrPartialDelete
	ErrConflict      = core.ErrConflict
	ErrMoved         = core.ErrMoved
	ErrBadRef        = core.ErrBadRef
	ErrUnavailable   = core.ErrUnavailable
	ErrUnisolated    = core.ErrUnisolated
	ErrPortRange     = core.ErrPortRange
	ErrImage         = core.ErrImage
	ErrConfig        = core.ErrConfig
	ErrNoRuntime     = core.ErrNoRuntime
	ErrBadPath       = core.ErrBadPath
	ErrBadArgument   = core.ErrBadArgument
	ErrHidden        = core.ErrHidden
	ErrNoFile        = core.ErrNoFile
	ErrIsDir         = core.ErrIsDir
	ErrNotDir        = core.ErrNotDir
	ErrBinary        = core.ErrBinary
	ErrTooLarge      = core.ErrTooLarge
	ErrPatch         = core.ErrPatch
	ErrBadPattern    = core.ErrBadPattern
	ErrTooLong       = core.ErrTooLong
	ErrBadArchive    = core.ErrBadArchive
	ErrTooSlow       = core.ErrTooSlow
	ErrTooMuchOutput = core.ErrTooMuchOutput
)

// Slugify lowercases name and turns it into a sandbox's slug (see
// core.Slugify).
func Slugify(name string) (string, error) { return core.Slugify(name) }

// ContainerPath turns a path an agent gave into a clean absolute path in
// the container (see core.ContainerPath).
func ContainerPath(p string) (string, error) { return core.ContainerPath(p) }

// BranchRef is the full ref of a sandbox's branch.
func BranchRef(slug string) string { return core.BranchRef(slug) }
