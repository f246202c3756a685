package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/litterbox-dev/litterbox/internal/enginetest"
)

func TestQuote(t *testing.T) {
	tests := []struct {
		words []string
		want  string
	}{
		{[]string{"docker", "ps", "--all"}, "docker ps --all"},
		{[]string{"git", "-C", "/home/me/my repo", "status"}, "git -C '/home/me/my repo' status"},
		{[]string{"echo", ""}, "echo ''"},
		{[]string{"sh", "-c", "echo it's"}, `sh -c 'echo it'\''s'`},
		{[]string{"--label", "dev.litterbox.repo=/a/b,c:d@e+f%g^h"}, "--label dev.litterbox.repo=/a/b,c:d@e+f%g^h"},
		{[]string{"a$b", "a*b", "a;b", "a\nb", "a\"b", "~"}, `'a$b' 'a*b' 'a;b' 'a` + "\n" + `b' 'a"b' '~'`},
		{[]string{"{{json .ID}}"}, "'{{json .ID}}'"},
		{[]string{"日本"}, "'日本'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.words...); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.words, got, tt.want)
		}
	}
}

func TestCmdBuilder(t *testing.T) {
	c := New("git", "-C", "/r").Arg("update-ref", "-d").ArgIf(false, "--no-deref").ArgIf(true, "refs/heads/x").InDir("/tmp").WithEnv("A=1")
	if got := c.String(); got != "git -C /r update-ref -d refs/heads/x" {
		t.Errorf("String() = %s", got)
	}
	if c.Dir != "/tmp" || len(c.Env) != 1 || c.Env[0] != "A=1" {
		t.Errorf("Dir/Env = %q %q", c.Dir, c.Env)
	}
}

func TestExec(t *testing.T) {
	ctx := context.Background()
	var r Exec
	res, err := r.Run(ctx, New("sh", "-c", "echo out; echo err >&2; exit 3"))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || ee.Stderr != "err\n" || res.ExitCode != 3 || string(res.Stdout) != "out\n" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if ExitCode(err) != 3 || Stderr(err) != "err\n" {
		t.Errorf("ExitCode/Stderr = %d %q", ExitCode(err), Stderr(err))
	}
	if want := `sh -c 'echo out; echo err >&2; exit 3': exit status 3: err`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	_, err = r.Run(ctx, New("litterbox-no-such-program-here"))
	var ni *NotInstalledError
	if !errors.As(err, &ni) || !strings.Contains(err.Error(), "not installed or not on PATH") {
		t.Errorf("missing program = %v", err)
	}
	if ExitCode(nil) != -1 || Stderr(errors.New("x")) != "" {
		t.Error("ExitCode/Stderr of non-exit errors")
	}
}

// A command past its limit is killed with everything it started, and the
// error names it, the limit and the setting to raise.
func TestTimeoutKillsTheCommandAndItsChildren(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := Exec{Limits: Limits{Control: 300 * time.Millisecond}}
	_, err := r.Run(context.Background(), New("sh", "-c", `sleep 30 & echo $! >"$1"; wait`, "sh", pidFile).As(Control))
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || te.Limit != 300*time.Millisecond {
		t.Fatalf("err = %v, want a TimeoutError at 300ms", err)
	}
	want := `sh -c 'sleep 30 & echo $! >"$1"; wait' sh ` + pidFile + `: no answer within 300ms, so litterbox stopped it; if it is only slow, raise LITTERBOX_CONTROL_TIMEOUT`
	if err.Error() != want {
		t.Errorf("Error() = %q\nwant      %q", err.Error(), want)
	}
	data, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	// The kill is sent before Run returns; dying takes the kernel a moment.
	for i := 0; i < 100 && enginetest.ProcessAlive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if enginetest.ProcessAlive(pid) {
		t.Errorf("the command's child %d is still running", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestLimitsByKind(t *testing.T) {
	tiny := Exec{Limits: Limits{Control: time.Nanosecond, Work: time.Nanosecond}}
	ctx := context.Background()
	for _, k := range []Kind{Control, Work} {
		if _, err := tiny.Run(ctx, New("true").As(k)); !errors.Is(err, ErrTimeout) {
			t.Errorf("%v command past its limit: err = %v, want ErrTimeout", k, err)
		}
	}
	// A stream has no limit of its own.
	if _, err := tiny.Run(ctx, New("true").As(Stream)); err != nil {
		t.Errorf("stream command: %v", err)
	}
	// The caller's own cancellation is not a timeout.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := (Exec{}).Run(cctx, New("true")); !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("cancelled: err = %v, want context.Canceled and no timeout", err)
	}
	if (Limits{}).of(Control) != DefaultControlLimit || (Limits{}).of(Work) != DefaultWorkLimit || (Limits{}).of(Stream) != 0 {
		t.Error("zero Limits do not take the defaults")
	}
}

// An error quotes a command line only so far: never megabytes of argv.
func TestTimeoutQuotesAReadableCommand(t *testing.T) {
	huge := strings.Repeat("é", 50000)
	_, err := Exec{Limits: Limits{Work: time.Nanosecond}}.Run(context.Background(), New("printf", huge))
	msg := err.Error()
	if len(msg) > maxQuoted+200 || !strings.Contains(msg, "more bytes)") || !utf8.ValidString(msg) {
		t.Errorf("error of %d bytes (valid UTF-8: %v): %.400s", len(msg), utf8.ValidString(msg), msg)
	}
}

func TestStreamedStderrStillExplainsAFailure(t *testing.T) {
	var seen bytes.Buffer
	long := strings.Repeat("x", 2*tailSize)
	res, err := Exec{}.Run(context.Background(), New("sh", "-c", `printf '%s' "$1" >&2; echo "the reason" >&2; exit 3`, "sh", long).WithStderr(&seen))
	if !strings.HasSuffix(seen.String(), "the reason\n") || seen.Len() != len(long)+len("the reason\n") {
		t.Fatalf("the caller's writer got %d bytes, want all of them", seen.Len())
	}
	if len(res.Stderr) != 0 {
		t.Errorf("Result.Stderr = %d bytes, want none: the caller streamed it", len(res.Stderr))
	}
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 3 || !strings.HasSuffix(ee.Stderr, "the reason\n") || len(ee.Stderr) > tailSize {
		t.Fatalf("err = %v, want an ExitError with code 3 ending in the reason, at most %d bytes", err, tailSize)
	}
}

// TestErrorsQuoteBriefly: an error quotes at most a few KiB of the argv and
// stderr it came with, saying how much it left out.
func TestErrorsQuoteBriefly(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	e := &ExitError{Command: "grep -e " + big, ExitCode: 2, Stderr: big + "the end"}
	msg := e.Error()
	if len(msg) > 10<<10 {
		t.Errorf("ExitError quotes %d bytes", len(msg))
	}
	if !strings.Contains(msg, "more bytes)") || !strings.Contains(msg, "bytes cut]") || !strings.HasSuffix(msg, "the end") {
		t.Errorf("ExitError does not say what it cut, or loses the end of stderr: %q ... %q", msg[:100], msg[len(msg)-100:])
	}
	// a command that cannot start (an argument over the kernel's limit)
	_, err := Exec{}.Run(context.Background(), New("true", big))
	if err == nil || len(err.Error()) > 10<<10 || !strings.Contains(err.Error(), "more bytes)") {
		t.Errorf("start error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
}
