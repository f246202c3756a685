package wire

import (
	"io"
	"strings"
	"time"
)

// Options tune one scan.
type Options struct {
	Root    string // the directory to scan, /src
	Since   int64  // report entries changed at or after this time (unix ns); 0 reports all
	MaxSize int64  // larger files are skipped and named in Meta.Skipped
	// Full are directories (relative) whose whole subtree is reported.
	Full []string
	// Paths are files (relative) reported whatever their times, even when
	// ignored: the branch tracks them.
	Paths []string
	// List are directories whose whole subtree is listed, with the ignore
	// status of every file: ignore rules above them changed.
	List []string
	// Tracked are ignored directories the branch tracks files under: the
	// scanner walks them, for tracked files only (git's rules apply to
	// untracked paths only), and no other ignored directory.
	Tracked []string
	// Excludes are the lines of the repository-wide ignore files
	// (core.excludesFile, then info/exclude), base "".
	Excludes []string
	// Journal asks the change journal (journal.go) for the directories
	// changed since JournalToken (the last scan's Meta.Journal), and walks
	// only those when it can say.
	Journal      bool
	JournalToken string
	// Ignored is the last scan's Meta.Ignored: a walk that follows the
	// journal keeps those of them it does not walk past.
	Ignored []string
	// Linked is the last scan's Meta.Linked: files with another name,
	// which a write through that name changes without a journal event in
	// their own directory. A walk that follows the journal stats each.
	Linked []string
	// Run, when set, holds a RunSpec as JSON: the command runs first and its
	// result leads the stream.
	Run io.Reader
	// Audit asks for no changes and no contents: the walk visits the whole
	// tree and names, in Meta.Unrecordable, every file a snapshot cannot
	// record (over MaxSize, unreadable), and in Skipped every directory it
	// cannot read and every name git refuses, changed or not. A pause that
	// ends the sandbox asks it, since what no snapshot recorded is lost
	// then.
	Audit bool
}

// Meta is the last entry of a scan stream, named MetaName, in the
// record format of scanwire.go.
type Meta struct {
	// Start is a ctime stamp taken before the walk: the Since of the next scan.
	Start int64
	// Dirs holds, for every directory changed since Since (entries added,
	// removed or renamed), and every directory of a List or Full subtree,
	// all its entries. The host compares them with the branch to find
	// deletions, and new directories and files to ask for.
	Dirs map[string][]DirEntry
	// Skipped are files that could not be reported, with the reason.
	Skipped []Skipped
	// IgnoredChanged are changed files that .gitignore excludes; the host
	// asks for them again (Paths) only when the branch tracks them.
	IgnoredChanged []string
	// Ignored are the ignored directories whose parent is not ignored, all
	// of them, at every scan: the host finds among them the ones the branch
	// tracks files under (Options.Tracked).
	Ignored []string
	// Torn are files sent whose content changed while they were read: what
	// was sent is not recorded, and the change, which moved their ctime past
	// Start, is caught by the next scan.
	Torn []string
	// Journal is the change journal's token, the JournalToken of the next
	// scan; "" when no watcher answered.
	Journal string
	// Partial says the walk followed the journal.
	Partial bool
	// Linked are the files walked (or, in a journal walk, Options.Linked
	// stat'ed) that have more than one name, or had when a scan last saw
	// them: a file keeps its place while its name holds a regular file,
	// since a descriptor opened through a name since removed still writes
	// it.
	Linked []string
	// Took is how long the scan itself took (from its stamp, after any
	// command, to its meta), in nanoseconds.
	Took int64
	// Unrecordable are, in an audit (Options.Audit), the files no snapshot
	// can record.
	Unrecordable []Unrecordable
}

// Unrecordable is a file an audit found that no snapshot can record as it
// is: the host decides whether the branch holds it already.
type Unrecordable struct {
	Path   string
	Reason string
	// ID is the git blob id (SHA-1) of a file over the size cap that could
	// be read, so the host can tell whether the branch holds it already.
	ID string
	// Ignored says .gitignore excludes the path (or it is under an ignored
	// directory): it matters only if the branch tracks it.
	Ignored bool
}

// MetaName is absolute, so no file of /src (all relative) can take it;
// PlanName likewise.
const (
	MetaName = "/litterbox-scan-meta"
	PlanName = "/litterbox-scan-plan"
)

// RunSpec is one shell command to run before a scan (Options.Run).
type RunSpec struct {
	Command string        `json:"command"`
	Workdir string        `json:"workdir"`       // absolute in the container
	Timeout time.Duration `json:"timeout"`       // the host fills in its default
	Env     []string      `json:"env,omitempty"` // extra KEY=VALUE
	Message string        `json:"message"`       // snapshot commit message
	// Cap is how much output the result shows, both streams together, as
	// JSON bytes (see output.go); the host fills in its default.
	Cap int `json:"cap"`
	// KeepOutput keeps the whole of a stream that was cut in a file under
	// OutputDir, named in the result.
	KeepOutput bool `json:"keepOutput,omitempty"`
	// ID names the run: its output files, and the LITTERBOX_RUN variable
	// that marks every process it starts. Run sets it.
	ID string `json:"id"`
	// Args are the script's positional parameters ($1...), and Stdin its
	// input: the agent's values travel as data, never inside Command.
	Args  []string `json:"args,omitempty"`
	Stdin []byte   `json:"stdin,omitempty"`
	// Refusals names the file where the sandbox's gateway records the
	// connections it refuses, owned by RefusalsUID (see refusals.go): the
	// result holds what it gained during the command. A sandbox linked to
	// its gateway by network shares no file with it: Refusals is then the
	// http:// URL its gateway's proxy answers itself, at RefusalsVia (the
	// proxy's host:port), and the result holds its answer for the
	// refusals since the mark it gave before the command.
	Refusals    string `json:"refusals,omitempty"`
	RefusalsUID int    `json:"refusalsUid,omitempty"`
	RefusalsVia string `json:"refusalsVia,omitempty"`
}

// RunResult is what the command did. Stdout and Stderr are what is shown,
// fitted into the spec's Cap; the Bytes fields count all of each stream,
// and the File fields name the files that keep the whole of a stream cut.
type RunResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exitCode"`
	TimedOut        bool   `json:"timedOut,omitempty"`
	Cancelled       bool   `json:"cancelled,omitempty"`
	StdoutTruncated bool   `json:"stdoutTruncated,omitempty"`
	StderrTruncated bool   `json:"stderrTruncated,omitempty"`
	StdoutBytes     int64  `json:"stdoutBytes"`
	StderrBytes     int64  `json:"stderrBytes"`
	StdoutFile      string `json:"stdoutFile,omitempty"`
	StderrFile      string `json:"stderrFile,omitempty"`
	// Refusals are the lines the spec's refusals file gained during the
	// command, when RefusalsRead: false when the spec named none or that
	// file could not be trusted or read.
	Refusals     string `json:"refusals,omitempty"`
	RefusalsRead bool   `json:"refusalsRead,omitempty"`
	// RefusalsBoot and RefusalsAfter are, for a run linked to its gateway
	// by network, where the gateway's refusals stood before the command
	// (a mark: control.RefusalMark): the host asks the gateway for those
	// after it when the run could not read them.
	RefusalsBoot  string `json:"refusalsBoot,omitempty"`
	RefusalsAfter uint64 `json:"refusalsAfter,omitempty"`
}

const (
	RunStdoutName = "/litterbox-run-stdout"
	RunStderrName = "/litterbox-run-stderr"
	RunResultName = "/litterbox-run-result"
)

// Clip keeps at most limit bytes of the two streams together, copied: an
// honest scanner fits them into the spec's Cap (finish), and the host clips
// what a tampered one sent past it, so a result kept after its scan is
// released (Result.Release) holds no more than the cap.
func (r *RunResult) Clip(limit int) {
	if len(r.Stdout)+len(r.Stderr) <= limit {
		return
	}
	r.Stdout = strings.Clone(r.Stdout[:min(len(r.Stdout), limit)])
	r.Stderr = strings.Clone(r.Stderr[:min(len(r.Stderr), limit-len(r.Stdout))])
	r.StdoutTruncated, r.StderrTruncated = true, true
}

// MaxRefusals is the most of the file's new lines a run reads: the
// gateway records at most 200 refusals in a burst, each a few hundred
// bytes; past this the host asks the gateway.
const MaxRefusals = 256 << 10

// WatchUID is the user the watcher runs as, in no group the agent is in:
// the agent cannot stop it or answer in its place, and its inotify instance
// and watches count against a user nobody else is (inotify's limits are per
// user, across the host: as root or as the sandbox user, whom uid 1000 maps
// to, a hundred sandboxes would use up the instances of the host's own
// services or of the developer's editor).
var WatchUID = 65533

// QuietPoll is how often the scanner's follower of the change journal
// (`scan-internal quiet`, which `litterbox run` runs for its length) asks
// the watcher what changed: a question is a connection to its socket, in
// the sandbox (tens of microseconds).
const QuietPoll = 100 * time.Millisecond

// QuietOptions are the follower's periods (`--quiet`, `--most`): it writes
// a line ("quiet\n") once the tree has gone Quiet without a change after
// one, or has kept changing for Most since the first change not yet told.
type QuietOptions struct {
	Quiet time.Duration
	Most  time.Duration
}
