// Package files is the agents' file tools on a sandbox: read, write, patch,
// ls, glob, grep and bash, and cp between the host and a sandbox. Each runs
// one small script in the sandbox (or two), bounded in what it may send;
// writes are snapshotted with the recorder, in the same exec as the write.
package files

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/sandbox/api"
	"github.com/litterbox-dev/litterbox/sandbox/internal/core"
	"github.com/litterbox-dev/litterbox/sandbox/internal/netgate"
	"github.com/litterbox-dev/litterbox/sandbox/internal/recording"
)

// Files runs the file tools in c's sandboxes; rec records what they
// change. Its output budget bounds what the file tools hold in memory at
// once, whatever the number of calls in flight.
type Files struct {
	*core.Common
	rec    *recording.Recorder
	budget *byteBudget
	gate   *netgate.Gate
}

// New is the file tools of c's sandboxes; gate tells bash what a
// sandbox's gateway refused.
func New(c *core.Common, rec *recording.Recorder, gate *netgate.Gate) *Files {
	return &Files{Common: c, rec: rec, budget: newByteBudget(outputBudgetBytes), gate: gate}
}

const (
	// MaxListEntries caps ls and glob results.
	MaxListEntries = 1000
	// maxScanEntries caps what glob scans in the container.
	maxScanEntries = 200000
	// MaxGrepMatches caps grep results.
	MaxGrepMatches = 200
	// MaxGrepLine is the longest matching line grep shows in full.
	MaxGrepLine = 500
	// grepCut is how much of each line grep's output the sandbox sends:
	// a longer line is cut there, so that 200 matching lines are small
	// whatever the files hold. It has room for a long path before the
	// MaxGrepLine bytes shown.
	grepCut = 2048
	// lsBytes and listBytes cap what ls, and the listing glob and grep's
	// include match against, send from the sandbox (a path may be 4 KiB).
	lsBytes   = 1 << 20
	listBytes = 16 << 20
	// readFirst is the most a read sends in one exec; a bigger file is
	// read by a second exec, once its size is known and reserved from
	// the output budget.
	readFirst = 256 << 10
	// pathSlack is room for the resolved path a script prints first.
	pathSlack = 16 << 10
	// FileOpTimeout bounds every file operation in the container.
	FileOpTimeout = time.Minute
)

// Exit codes of the in-container scripts below, for outcomes the host turns
// into typed errors. The scripts print the resolved path on stderr.
const (
	codeMissing  = 70
	codeHidden   = 71
	codeIsDir    = 72
	codeNotFile  = 73
	codeNotDir   = 74
	codeBigger   = 75
	codeTooBig   = 76
	codeChanged  = 77
	codeBadRegex = 78
)

// resolveSh is the prelude of every file script: res PATH sets $r to PATH
// with every symlink resolved inside the container, and refuses a result
// that is hidden, so a symlink cannot leak a hidden file. Arguments always
// arrive positionally; nothing the agent gives is pasted into a script.
const resolveSh = `res() { r=$(realpath "$1" 2>/dev/null) || { echo "$1" >&2; exit 70; }
case "$r" in */.*) echo "$r" >&2; exit 71;; esac; }
`

// readSh: $1 path, $2 byte cap, $3 the most to send now (a bigger file
// exits 75 with its size). Prints the resolved path, a newline, then the
// file, of which at most $3+1 bytes: one more than was measured says it grew.
const readSh = resolveSh + `res "$1"
[ -e "$r" ] || { echo "$r" >&2; exit 70; }
[ -d "$r" ] && { echo "$r" >&2; exit 72; }
[ -f "$r" ] || { echo "$r" >&2; exit 73; }
s=$(wc -c <"$r") || exit 1
[ "$s" -gt "$2" ] && { echo "$s" >&2; exit 76; }
[ "$s" -gt "$3" ] && { echo "$s" >&2; exit 75; }
printf '%s\n' "$r"
exec head -c "$(($3 + 1))" "$r"`

// putSh: $1 path, $2 expected sha1 of the current file ("" for any, "-"
// for absent), $3 write|delete; content on stdin. Prints "created" or
// "replaced" or "deleted". The nearest existing ancestor is resolved first,
// so a symlinked folder cannot lead a write into a hidden one.
const putSh = resolveSh + `p=$1 a=${1%/*}
while [ -n "$a" ] && [ ! -e "$a" ] && [ ! -L "$a" ]; do a=${a%/*}; done
res "${a:-/}"
state=created
if [ -e "$p" ] || [ -L "$p" ]; then res "$p"; [ -d "$r" ] && { echo "$r" >&2; exit 72; }; state=replaced; fi
if [ -n "$2" ]; then
  cur=-; [ -e "$p" ] && cur=$(sha1sum <"$p") && cur=${cur%% *}
  [ "$cur" = "$2" ] || { echo "$p" >&2; exit 77; }
fi
if [ "$3" = delete ]; then rm -f "$p" || exit 1; echo deleted; exit 0; fi
mkdir -p "${p%/*}" || exit 1
cat >"$p" || exit 1
echo "$state"`

// lsSh: $1 path, $2 maxdepth ("" for all), $3 cap, $4 "files" to leave
// folders out, $5 byte cap of the entries. Prints the resolved folder, then
// one entry a line, folders first with a trailing slash, hidden ones left
// out. (busybox find has no -printf, and its -exec {} + inside -o loses
// entries, hence two walks.)
const lsSh = resolveSh + `res "$1"
[ -e "$r" ] || { echo "$r" >&2; exit 70; }
[ -d "$r" ] || { echo "$r" >&2; exit 74; }
printf '%s\n' "$r"
{ [ "$4" = files ] || find "$r" -mindepth 1 ${2:+-maxdepth "$2"} \( -name '.*' -prune \) -o -type d -print | sed 's|$|/|'
  find "$r" -mindepth 1 ${2:+-maxdepth "$2"} \( -name '.*' -prune \) -o ! -type d -print; } | head -n "$3" | head -c "$5"`

// grepSh: $1 path, $2 ERE, $3 cap, $4 bytes kept of a line. Prints
// path:line:text, each line cut at $4 bytes. Hidden folders are pruned
// before grep sees them.
const grepSh = resolveSh + `res "$1"
[ -e "$r" ] || { echo "$r" >&2; exit 70; }
echo | grep -E -e "$2" >/dev/null 2>&1; [ $? -gt 1 ] && exit 78
if [ -f "$r" ]; then grep -nHs -E -e "$2" -- "$r" | cut -b "1-$4" | head -n "$3"; exit 0; fi
find "$r" \( -name '.*' -prune \) -o -type f -print | tr '\n' '\0' | xargs -0 -r grep -nHs -E -e "$2" -- | cut -b "1-$4" | head -n "$3"`

// grepListSh: $1 ERE, $2 cap, $3 bytes kept of a line; the files to
// search on stdin, NUL-separated (the host chose them by grep's include).
const grepListSh = `echo | grep -E -e "$1" >/dev/null 2>&1; [ $? -gt 1 ] && exit 78
xargs -0 -r grep -nHs -E -e "$1" -- | cut -b "1-$3" | head -n "$2"`

// grepOutput is the most grep's scripts send: MaxGrepMatches+1 lines of
// grepCut+1 bytes (one more than grepCut says a line was cut) and newlines.
const grepOutput = (MaxGrepMatches+1)*(grepCut+2) + pathSlack

// timeLimitSh runs the script $1 with the arguments after it, killed after
// FileOpTimeout, so a costly search cannot run on after its caller gave up
// (killing the exec's client leaves the process in the container running).
var timeLimitSh = fmt.Sprintf(`s=$1; shift
if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL %d sh -c "$s" sh "$@"; fi
exec sh -c "$s" sh "$@"`, int(FileOpTimeout.Seconds()))

// fileExec runs one of the scripts above in the sandbox with args, within
// FileOpTimeout, and reads at most limit bytes of its output (reserved from
// the output budget first): past that it fails with ErrTooMuchOutput.
func (f *Files) fileExec(ctx context.Context, h *api.Handle, script string, stdin io.Reader, limit int, args ...string) ([]byte, error) {
	release, err := f.budget.acquire(ctx, limit)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := f.ExecCapped(ctx, provider.ExecRequest{
		Ref:   h.Ref,
		Cmd:   append([]string{"sh", "-c", timeLimitSh, "sh", script}, args...),
		Stdin: stdin,
	}, limit)
	if errors.Is(err, core.ErrTooMuchOutput) {
		return nil, fmt.Errorf("sandbox '%s' answered a file operation with %w", h.Slug, err)
	}
	if runner.ExitCode(err) == 137 {
		return nil, core.NewError(api.ErrTooSlow, "the operation was stopped after %s; narrow it (a smaller path, an include, a simpler pattern).", FileOpTimeout)
	}
	if err != nil {
		return res.Stdout, core.ExecError(h, "run a file operation", err)
	}
	return res.Stdout, nil
}

// putExec runs putSh with content on stdin and snapshots what it changed, in
// one exec (see Run). A failed put is an error and its snapshot is
// dropped; a failed snapshot after a good put comes back as err beside the
// put's output.
func (f *Files) putExec(ctx context.Context, h *api.Handle, content []byte, message string, args ...string) ([]byte, *api.SnapshotResult, error) {
	run, snap, err := f.rec.Run(ctx, h, recording.RunSpec{Command: putSh, Args: args, Stdin: content, Message: message})
	if run == nil {
		return nil, nil, err
	}
	if run.ExitCode != 0 {
		return nil, nil, &runner.ExitError{Command: "put " + runner.Quote(args...), ExitCode: run.ExitCode, Stderr: run.Stderr}
	}
	return []byte(run.Stdout), snap, err
}

// scriptError maps a script's exit code to a typed error about path p (as the
// agent gave it); other failures pass through.
func scriptError(p string, err error) error {
	detail := strings.TrimSpace(runner.Stderr(err))
	switch runner.ExitCode(err) {
	case codeMissing:
		return core.NewError(api.ErrNoFile, "%s does not exist. Use ls or glob to find the right path.", p)
	case codeHidden:
		return core.NewError(api.ErrHidden, "%s resolves to the hidden path %s. Hidden files are not available to agents.", p, detail)
	case codeIsDir:
		return core.NewError(api.ErrIsDir, "%s is a directory. Use ls to list it.", p)
	case codeNotFile:
		return core.NewError(api.ErrNoFile, "%s is not a regular file (a device, socket or pipe).", p)
	case codeNotDir:
		return core.NewError(api.ErrNotDir, "%s is not a directory. Use read to read a file.", p)
	case codeTooBig:
		return core.NewError(api.ErrTooLarge, "%s is %s bytes, over the %d MiB read limit. Look at parts of it with bash (head, tail, sed -n '100,200p', grep).", p, detail, api.MaxReadBytes>>20)
	case codeChanged:
		return core.NewError(api.ErrPatch, "%s changed while the patch was being applied; nothing was written. Read it again and retry.", p)
	}
	if ee := (*runner.ExitError)(nil); errors.As(err, &ee) && detail != "" {
		switch {
		case strings.Contains(detail, "Read-only file system"):
			return fmt.Errorf("%s: the sandbox's file system is read-only outside /src and /tmp; put the file under /src (or /tmp for scratch files)", p)
		case strings.Contains(detail, "Permission denied"):
			return fmt.Errorf("%s: permission denied: the sandbox user (uid 1000) may not write there; put the file under /src (or /tmp for scratch files)", p)
		}
		return fmt.Errorf("%s: %s", p, detail)
	}
	return err
}

// Read returns lines of a text file with one exec. Binary files (a NUL
// byte or invalid UTF-8), directories, missing and hidden files are errors.
func (f *Files) Read(ctx context.Context, h *api.Handle, p string, o api.ReadOptions) (*api.ReadResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, err
	}
	if o.Offset < 0 || o.Limit < 0 {
		return nil, core.NewError(api.ErrBadArgument, "offset and limit must not be negative")
	}
	data, err := f.readFile(ctx, h, abs)
	if err != nil {
		return nil, scriptError(p, err)
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return nil, core.NewError(api.ErrBinary, "%s is a binary file (%d bytes), not text. Inspect it with bash, e.g. `od -c %s | head`.", p, len(data), abs)
	}
	content, total, n := SliceLines(textOf(data), o.Offset, o.Limit)
	return &api.ReadResult{Path: core.DisplayPath(abs), Content: content, Offset: o.Offset, Lines: n, TotalLines: total, More: o.Offset+n < total}, nil
}

// readFile reads the file abs, of at most MaxReadBytes: up to readFirst
// bytes with one exec, a bigger file with a second once its size is
// reserved, so reads in parallel hold at most the output budget. A file that
// grows under it is measured again, at most twice.
func (f *Files) readFile(ctx context.Context, h *api.Handle, abs string) ([]byte, error) {
	send := readFirst
	for try := 0; ; try++ {
		out, err := f.fileExec(ctx, h, readSh, nil, send+pathSlack, abs, strconv.Itoa(api.MaxReadBytes), strconv.Itoa(send))
		larger := false
		if runner.ExitCode(err) == codeBigger {
			n, perr := strconv.Atoi(strings.TrimSpace(runner.Stderr(err)))
			if perr != nil || n <= send {
				return nil, err
			}
			send, larger, err = min(n, api.MaxReadBytes), true, nil
		}
		if err != nil {
			return nil, err
		}
		if !larger {
			_, data, _ := bytes.Cut(out, []byte("\n"))
			if len(data) <= send {
				return data, nil
			}
			send = api.MaxReadBytes // it grew since it was measured
		}
		if try == 2 {
			return nil, core.NewError(api.ErrNoFile, "%s kept changing size while it was read; read it again once it is written.", abs)
		}
	}
}

// SliceLines returns limit lines (all when 0) of text from the 0-based line
// offset, the file's line count and how many lines it returned. A last line
// without a newline counts as a line.
func SliceLines(text string, offset, limit int) (slice string, total, n int) {
	total = strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++
	}
	if offset >= total {
		return "", total, 0
	}
	start := 0
	for i := 0; i < offset; i++ {
		start += strings.IndexByte(text[start:], '\n') + 1
	}
	end := len(text)
	if limit > 0 && offset+limit < total {
		end = start
		for i := 0; i < limit; i++ {
			end += strings.IndexByte(text[end:], '\n') + 1
		}
		n = limit
	} else {
		n = total - offset
	}
	return text[start:end], total, n
}

// Write creates or overwrites a file, making its parent folders, and
// snapshots it, with one exec. The content travels as data, never
// through a shell string, so every byte arrives as given. An existing file
// keeps its mode. A snapshot error comes with the result: the write happened.
func (f *Files) Write(ctx context.Context, h *api.Handle, p string, content []byte) (*api.WriteResult, *api.SnapshotResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, nil, err
	}
	if len(content) > api.MaxWriteBytes {
		return nil, nil, core.NewError(api.ErrTooLong, "the content is %d bytes, over the limit of %d. Write a big file in parts with bash (cat >> file).", len(content), api.MaxWriteBytes)
	}
	out, snap, err := f.putExec(ctx, h, content, "write: "+core.DisplayPath(abs), abs, "", "write")
	if out == nil {
		return nil, nil, scriptError(p, err)
	}
	return &api.WriteResult{Path: core.DisplayPath(abs), Bytes: len(content), Created: strings.TrimSpace(string(out)) == "created"}, snap, err
}

// Patch applies a unified diff to one file with two execs: it reads
// the file, applies the hunks on the host, and writes the result (and
// snapshots it) only if the file is still what was read. A diff that does not
// apply changes nothing and the error names the failing hunk.
func (f *Files) Patch(ctx context.Context, h *api.Handle, p, diff string) (*api.PatchResult, *api.SnapshotResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, nil, err
	}
	if err := core.CheckLen("diff", diff, api.MaxWriteBytes); err != nil {
		return nil, nil, err
	}
	d, err := ParseDiff(diff)
	if err != nil {
		return nil, nil, core.NewError(api.ErrPatch, "%s: %v; nothing was changed.", p, err)
	}
	old, err := f.readFile(ctx, h, abs)
	exists := true
	if runner.ExitCode(err) == codeMissing {
		exists, err = false, nil
	}
	if err != nil {
		return nil, nil, scriptError(p, err)
	}
	switch {
	case d.Create && exists:
		return nil, nil, core.NewError(api.ErrPatch, "%s: the diff creates the file, but it exists; nothing was changed. Read it and send a diff against its content.", p)
	case !d.Create && !exists:
		return nil, nil, core.NewError(api.ErrPatch, "%s does not exist, and the diff modifies it; nothing was changed. Use a diff from /dev/null to create it, or write.", p)
	}
	result, err := d.Apply(string(old))
	if err != nil {
		return nil, nil, core.NewError(api.ErrPatch, "%s: %v; nothing was changed. Read the file and send a diff against its current content.", p, err)
	}
	expect := "-"
	if exists {
		sum := sha1.Sum(old)
		expect = hex.EncodeToString(sum[:])
	}
	op, action := "write", "modified"
	switch {
	case d.Delete:
		op, action = "delete", "deleted"
	case d.Create:
		action = "created"
	}
	out, snap, err := f.putExec(ctx, h, []byte(result), "patch: "+core.DisplayPath(abs), abs, expect, op)
	if out == nil {
		return nil, nil, scriptError(p, err)
	}
	return &api.PatchResult{Path: core.DisplayPath(abs), Action: action, Hunks: len(d.Hunks)}, snap, err
}

// Ls lists a folder (recursively when asked) with one exec, leaving
// hidden entries out.
func (f *Files) Ls(ctx context.Context, h *api.Handle, p string, recursive bool) (*api.LsResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, err
	}
	depth := "1"
	if recursive {
		depth = ""
	}
	out, err := f.fileExec(ctx, h, lsSh, nil, lsBytes+pathSlack, abs, depth, strconv.Itoa(MaxListEntries+1), "", strconv.Itoa(lsBytes))
	if err != nil {
		return nil, scriptError(p, err)
	}
	root, lines, cut := splitListing(out, lsBytes)
	res := &api.LsResult{Path: core.DisplayPath(root), Entries: []string{}, Truncated: cut}
	for _, l := range lines {
		if rel, ok := relTo(root, l); ok {
			res.Entries = append(res.Entries, rel)
		}
	}
	res.Entries, res.Truncated = sortedCapped(res.Entries, res.Truncated)
	return res, nil
}

// Glob finds files (not folders) under p whose path relative to p matches
// pattern, where ** spans folders and {a,b} alternates. One exec lists
// the non-hidden files; matching runs on the host.
func (f *Files) Glob(ctx context.Context, h *api.Handle, pattern, p string) (*api.GlobResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, err
	}
	m, err := CompileGlob(pattern)
	if err != nil {
		return nil, core.NewError(api.ErrBadPattern, "glob pattern %s: %v", api.Quote(pattern), err)
	}
	root, lines, cut, err := f.listFiles(ctx, h, p, abs)
	if err != nil {
		return nil, err
	}
	res := &api.GlobResult{Pattern: pattern, Matches: []string{}, Truncated: cut}
	for _, l := range lines {
		rel, ok := relTo(root, l)
		if !ok || strings.HasSuffix(rel, "/") {
			continue
		}
		if m.Match(rel) || strings.HasPrefix(pattern, "/") && m.Match(l) {
			res.Matches = append(res.Matches, core.DisplayPath(l))
		}
	}
	res.Matches, res.Truncated = sortedCapped(res.Matches, res.Truncated)
	return res, nil
}

// sortedCapped sorts list and keeps at most MaxListEntries of it; cut
// becomes true when it dropped some.
func sortedCapped(list []string, cut bool) ([]string, bool) {
	sort.Strings(list)
	if len(list) > MaxListEntries {
		return list[:MaxListEntries], true
	}
	return list, cut
}

// Grep searches files under p (or the file p) for an extended regular
// expression with one exec, skipping hidden files and folders.
// include, a glob over file names (*.go, *.{ts,tsx}), narrows the files.
func (f *Files) Grep(ctx context.Context, h *api.Handle, pattern, p, include string) (*api.GrepResult, error) {
	abs, err := core.AgentPath(p)
	if err != nil {
		return nil, err
	}
	if pattern == "" {
		return nil, core.NewError(api.ErrBadPattern, "give a pattern to search for")
	}
	if err := checkPattern("pattern", pattern); err != nil {
		return nil, core.NewError(api.ErrBadPattern, "%v.", err)
	}
	var out []byte
	if include == "" {
		out, err = f.fileExec(ctx, h, grepSh, nil, grepOutput, abs, pattern, strconv.Itoa(MaxGrepMatches+1), strconv.Itoa(grepCut+1))
	} else {
		out, err = f.grepIncluded(ctx, h, pattern, p, abs, include)
	}
	if runner.ExitCode(err) == codeBadRegex {
		return nil, core.NewError(api.ErrBadPattern, "%s is not a valid extended regular expression (POSIX ERE, as grep -E).", api.Quote(pattern))
	}
	if err != nil {
		return nil, scriptError(p, err)
	}
	res := &api.GrepResult{Pattern: pattern, Matches: []string{}}
	for _, l := range strings.Split(string(out), "\n") {
		if l == "" {
			continue
		}
		if len(res.Matches) == MaxGrepMatches {
			res.Truncated = true
			break
		}
		res.Matches = append(res.Matches, grepLine(l))
	}
	return res, nil
}

// grepIncluded greps the files under abs whose names match include: one
// exec lists the files, the host picks them (braces are never expanded, see
// glob.go), and a second exec greps those. A file path ignores include.
func (f *Files) grepIncluded(ctx context.Context, h *api.Handle, pattern, p, abs, include string) ([]byte, error) {
	inc, err := CompileInclude(include)
	if err != nil {
		return nil, core.NewError(api.ErrBadPattern, "include %s: %v", api.Quote(include), err)
	}
	root, lines, _, err := f.listFiles(ctx, h, p, abs)
	if errors.Is(err, api.ErrNotDir) {
		return f.fileExec(ctx, h, grepSh, nil, grepOutput, abs, pattern, strconv.Itoa(MaxGrepMatches+1), strconv.Itoa(grepCut+1))
	}
	if err != nil {
		return nil, err
	}
	var list bytes.Buffer
	for _, l := range lines {
		if rel, ok := relTo(root, l); ok && inc.Match(rel) {
			list.WriteString(l)
			list.WriteByte(0)
		}
	}
	return f.fileExec(ctx, h, grepListSh, &list, grepOutput, pattern, strconv.Itoa(MaxGrepMatches+1), strconv.Itoa(grepCut+1))
}

// listFiles lists the non-hidden files under the folder abs (p as the agent
// gave it), at most maxScanEntries and listBytes: the folder resolved,
// absolute paths, and whether the listing was cut.
func (f *Files) listFiles(ctx context.Context, h *api.Handle, p, abs string) (string, []string, bool, error) {
	out, err := f.fileExec(ctx, h, lsSh, nil, listBytes+pathSlack, abs, "", strconv.Itoa(maxScanEntries), "files", strconv.Itoa(listBytes))
	if err != nil {
		return "", nil, false, scriptError(p, err)
	}
	root, lines, cut := splitListing(out, listBytes)
	return root, lines, cut || len(lines) >= maxScanEntries, nil
}

// grepLine shortens one grep -nH line for an agent: the path relative to
// /src, binary text replaced, long lines cut. A line of grepCut+1 bytes
// was cut in the sandbox: its length is not known, only its least.
func grepLine(l string) string {
	cutInSandbox := len(l) > grepCut
	file, rest, ok := strings.Cut(l, ":")
	if !ok {
		return l
	}
	num, text, _ := strings.Cut(rest, ":")
	if cutInSandbox {
		text = trimPartialRune(text)
	}
	more := "%d more bytes"
	if cutInSandbox {
		more = "at least %d more bytes"
	}
	switch {
	case strings.IndexByte(text, 0) >= 0 || !utf8.ValidString(text):
		text = "(binary line)"
	case len(text) > MaxGrepLine:
		cut := MaxGrepLine
		for !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + " [... " + fmt.Sprintf(more, len(l)-len(file)-len(num)-2-cut) + "]"
	case cutInSandbox:
		text += " [... more bytes]"
	}
	return core.DisplayPath(file) + ":" + num + ":" + text
}

// trimPartialRune drops an incomplete UTF-8 sequence that a cut left at
// the end of s.
func trimPartialRune(s string) string {
	for i := 1; i <= utf8.UTFMax && i <= len(s); i++ {
		if utf8.RuneStart(s[len(s)-i]) {
			if !utf8.FullRuneInString(s[len(s)-i:]) {
				return s[:len(s)-i]
			}
			break
		}
	}
	return s
}

// relTo returns p relative to the folder root.
func relTo(root, p string) (string, bool) {
	rel, ok := strings.CutPrefix(p, strings.TrimSuffix(root, "/")+"/")
	return rel, ok && rel != ""
}

// splitListing splits lsSh's output into its first line and the other
// non-empty lines; when the entries reached max bytes they were cut in
// the sandbox, and the last, partial, line is dropped.
func splitListing(out []byte, max int) (string, []string, bool) {
	first, rest, _ := strings.Cut(textOf(out), "\n")
	cut := len(rest) >= max
	if cut {
		if i := strings.LastIndexByte(rest, '\n'); i >= 0 {
			rest = rest[:i]
		} else {
			rest = ""
		}
	}
	var lines []string
	for _, l := range strings.Split(rest, "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return first, lines, cut
}
