package runner

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
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

func TestFake(t *testing.T) {
	ctx := context.Background()
	f := &Fake{}
	f.Expect([]string{"git", "status"}, "clean\n", nil)
	res, err := f.Run(ctx, New("git", "status"))
	if err != nil || string(res.Stdout) != "clean\n" || res.ExitCode != 0 {
		t.Errorf("Run = %+v, %v", res, err)
	}
	if err := f.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	// A mismatch, an unexpected call and an unmet expectation are all reported.
	f.Expect([]string{"git", "log"}, "", nil).Expect([]string{"git", "never"}, "", nil)
	_, _ = f.Run(ctx, New("git", "diff"))
	_, _ = f.Run(ctx, New("git", "never"))
	_, _ = f.Run(ctx, New("git", "extra"))
	err = f.Check()
	if err == nil {
		t.Fatal("Check = nil after a mismatch")
	}
	for _, want := range []string{"command mismatch", "got: git diff", "unexpected command: git extra"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %v; want it to mention %q", err, want)
		}
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
