package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Fake is a Runner for unit tests: it expects an exact sequence of argv and
// answers each with a canned result. Unmet or unexpected calls fail the test
// through Check.
type Fake struct {
	mu       sync.Mutex
	expected []fakeCall
	errs     []string
}

type fakeCall struct {
	args   []string
	stdout string
	stderr string
	err    error
}

// Expect queues one expected argv with the stdout it prints and the error it
// returns (nil for success).
func (f *Fake) Expect(args []string, stdout string, err error) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expected = append(f.expected, fakeCall{args: args, stdout: stdout, err: err})
	return f
}

// ExpectStderr is Expect for a command that also prints to stderr, such as
// `docker rm --force` of a missing container, which exits 0 and says so only
// there.
func (f *Fake) ExpectStderr(args []string, stdout, stderr string, err error) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expected = append(f.expected, fakeCall{args: args, stdout: stdout, stderr: stderr, err: err})
	return f
}

// Run implements Runner.
func (f *Fake) Run(_ context.Context, c *Cmd) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.expected) == 0 {
		f.errs = append(f.errs, fmt.Sprintf("unexpected command: %s", c))
		return Result{}, fmt.Errorf("fake runner: unexpected command %s", c)
	}
	want := f.expected[0]
	f.expected = f.expected[1:]
	if !slices.Equal(want.args, c.Args) {
		f.errs = append(f.errs, fmt.Sprintf("command mismatch:\n got: %s\nwant: %s", c, Quote(want.args...)))
		return Result{}, fmt.Errorf("fake runner: command mismatch")
	}
	if c.Stdout != nil {
		_, _ = c.Stdout.Write([]byte(want.stdout))
	}
	if c.Stderr != nil {
		_, _ = c.Stderr.Write([]byte(want.stderr))
	}
	code := 0
	if want.err != nil {
		code = ExitCode(want.err)
	}
	return Result{Stdout: []byte(want.stdout), Stderr: []byte(want.stderr), ExitCode: code}, want.err
}

// Check reports unexpected calls and expectations that were never met.
func (f *Fake) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.expected {
		f.errs = append(f.errs, "expected command never ran: "+Quote(e.args...))
	}
	if len(f.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d fake runner problem(s):\n%s", len(f.errs), joinLines(f.errs))
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
