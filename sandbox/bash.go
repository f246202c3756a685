package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// Limits of Bash.
const (
	// DefaultBashTimeout is the timeout when none is given.
	DefaultBashTimeout = 120 * time.Second
	// MaxBashTimeout is the longest timeout allowed.
	MaxBashTimeout = time.Hour
	// MaxStreamBytes caps each of stdout and stderr; the rest is counted and
	// dropped, with a marker.
	MaxStreamBytes = 1 << 20
)

// bashSh: $1 workdir, $2 timeout in seconds, $3 nonce, $4 command. The
// command runs in its own session, so its whole process group can be killed:
// by a watchdog at the timeout, and at the end, so a background process left
// holding the output pipes cannot keep the call open. The last line on stderr
// is "NONCE EXIT TIMEDOUT" (or "NONCE nodir"); the host strips it.
const bashSh = `cd "$1" 2>/dev/null || { printf '\n%s nodir\n' "$3" >&2; exit 0; }
t=/tmp/.litterbox-timeout.$$
setsid sh -c "$4" </dev/null &
p=$!
setsid sh -c 'sleep "$1"; : >"$2"; kill -TERM -"$3"; sleep 2; kill -KILL -"$3"' watchdog "$2" "$t" "$p" </dev/null >/dev/null 2>&1 &
w=$!
wait "$p"; c=$?
kill -TERM -"$w" 2>/dev/null
kill -KILL -"$p" 2>/dev/null
to=0; [ -e "$t" ] && { to=1; rm -f "$t"; }
printf '\n%s %d %d\n' "$3" "$c" "$to" >&2`

// BashOptions tune Bash.
type BashOptions struct {
	Workdir string        // absolute or relative to /src; default /src
	Timeout time.Duration // default DefaultBashTimeout
}

// BashResult is what a command did. A non-zero exit is a result, not an
// error.
type BashResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exitCode"`
	TimedOut        bool   `json:"timedOut"`
	StdoutTruncated bool   `json:"stdoutTruncated"`
	StderrTruncated bool   `json:"stderrTruncated"`
	Workdir         string `json:"workdir"`
	DurationMs      int64  `json:"durationMs"`
}

// Bash runs a shell command in the sandbox with one docker exec, as the
// sandbox user. On timeout its process group is killed; background processes
// it leaves are killed when it ends (start long-lived ones detached, with
// setsid and their output redirected, or as services).
func (s *Service) Bash(ctx context.Context, h *Handle, command string, o BashOptions) (*BashResult, error) {
	if strings.TrimSpace(command) == "" {
		return nil, newError(ErrBadPath, "give a command to run")
	}
	wd, err := ContainerPath(o.Workdir)
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultBashTimeout
	}
	if timeout > MaxBashTimeout {
		return nil, newError(ErrBadPath, "timeout %s is over the limit of %s", timeout, MaxBashTimeout)
	}
	var nb [12]byte
	_, _ = rand.Read(nb[:])
	nonce := "litterbox-end-" + hex.EncodeToString(nb[:])
	secs := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)

	// The watchdog in the container enforces the timeout; this one only
	// stops waiting if the container stops answering.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	stdout := &CapWriter{Max: MaxStreamBytes}
	stderr := &CapWriter{Max: MaxStreamBytes, KeepTail: 256}
	start := time.Now()
	_, err = s.Docker.Exec(ctx, docker.ExecSpec{
		Container: h.Container,
		Cmd:       []string{"sh", "-c", bashSh, "sh", wd, secs, nonce, command},
		Stdout:    stdout, Stderr: stderr,
	})
	status, ok := stderr.StripTrailer(nonce)
	if err != nil && !ok {
		// docker itself failed (paused, gone); its message went to our
		// stderr writer, so classify it from there.
		var ee *runner.ExitError
		if errors.As(err, &ee) {
			cp := *ee
			cp.Stderr, _ = stderr.String()
			err = docker.Classify(&cp)
		}
		return nil, s.execError(h, err)
	}
	if !ok {
		return nil, fmt.Errorf("the command's status line is missing from its output (the exec was interrupted?)")
	}
	if status == "nodir" {
		return nil, newError(ErrNoFile, "workdir %s does not exist or is not a directory. Use ls to find it.", o.Workdir)
	}
	res := &BashResult{Workdir: DisplayPath(wd), DurationMs: time.Since(start).Milliseconds()}
	var to int
	if _, err := fmt.Sscanf(status, "%d %d", &res.ExitCode, &to); err != nil {
		return nil, fmt.Errorf("bad status line %q", status)
	}
	res.TimedOut = to == 1
	res.Stdout, res.StdoutTruncated = stdout.String()
	res.Stderr, res.StderrTruncated = stderr.String()
	if res.TimedOut {
		res.Stderr += fmt.Sprintf("\n[litterbox: timed out after %s; the command's process group was killed]\n", timeout)
	}
	return res, nil
}

// CapWriter keeps the first Max bytes written and counts the rest, and keeps
// the last KeepTail bytes apart, so a trailer written last survives the cap.
type CapWriter struct {
	Max      int
	KeepTail int
	buf      bytes.Buffer
	tail     []byte
	total    int
}

// Write implements io.Writer; it never fails, so the writer keeps draining.
func (w *CapWriter) Write(p []byte) (int, error) {
	w.total += len(p)
	if room := w.Max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	if w.KeepTail > 0 {
		w.tail = append(w.tail, p...)
		if len(w.tail) > w.KeepTail {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-w.KeepTail:]...)
		}
	}
	return len(p), nil
}

// StripTrailer removes a last line "\nNONCE REST\n" from what was written and
// returns REST.
func (w *CapWriter) StripTrailer(nonce string) (string, bool) {
	i := bytes.LastIndex(w.tail, []byte("\n"+nonce+" "))
	if i < 0 {
		return "", false
	}
	trailer := w.tail[i:]
	w.total -= len(trailer)
	if w.buf.Len() > w.total {
		w.buf.Truncate(w.total)
	}
	w.tail = w.tail[:i]
	return strings.TrimSpace(string(trailer[len(nonce)+2:])), true
}

// String returns what was kept, with a marker when bytes were dropped.
func (w *CapWriter) String() (string, bool) {
	if w.total <= w.buf.Len() {
		return w.buf.String(), false
	}
	return w.buf.String() + fmt.Sprintf("\n[litterbox: output truncated: showing the first %d of %d bytes]\n", w.buf.Len(), w.total), true
}
