// Package runnertest is a fake runner.Runner for unit tests of code that
// builds argv: it expects exact argv and answers each with a canned result,
// and reports unexpected calls and expectations never met. Calls may come in
// any order, since the code under test runs some side by side; expectations
// of the same argv are met in the order they were made.
package runnertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/litterbox-dev/litterbox/runner"
)

// Fake is the fake runner. The zero value expects nothing; build one with
// New to have it checked when the test ends.
type Fake struct {
	mu       sync.Mutex
	expected []call
	errs     []string
}

type call struct {
	args   []string
	stdout string
	stderr string
	err    error
}

// New returns a Fake whose problems fail t when the test ends.
func New(t testing.TB) *Fake {
	f := &Fake{}
	t.Cleanup(func() {
		if err := f.Check(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// Expect queues one expected argv with the stdout it prints and the error it
// returns (nil for success).
func (f *Fake) Expect(args []string, stdout string, err error) *Fake {
	return f.ExpectStderr(args, stdout, "", err)
}

// ExpectStderr is Expect for a command that also prints to stderr, such as
// `docker rm --force` of a missing container, which exits 0 and says so only
// there.
func (f *Fake) ExpectStderr(args []string, stdout, stderr string, err error) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expected = append(f.expected, call{args: args, stdout: stdout, stderr: stderr, err: err})
	return f
}

// Run implements runner.Runner: it answers with the first pending
// expectation of c's argv.
func (f *Fake) Run(_ context.Context, c *runner.Cmd) (runner.Result, error) {
	f.mu.Lock()
	i := slices.IndexFunc(f.expected, func(e call) bool { return slices.Equal(e.args, c.Args) })
	if i < 0 {
		f.errs = append(f.errs, "unexpected command: "+c.String())
		f.mu.Unlock()
		return runner.Result{}, fmt.Errorf("fake runner: unexpected command %s", c)
	}
	want := f.expected[i]
	f.expected = slices.Delete(f.expected, i, i+1)
	f.mu.Unlock()
	if c.Stdout != nil {
		_, _ = c.Stdout.Write([]byte(want.stdout))
	}
	if c.Stderr != nil {
		_, _ = c.Stderr.Write([]byte(want.stderr))
	}
	code := 0
	if want.err != nil {
		code = runner.ExitCode(want.err)
	}
	return runner.Result{Stdout: []byte(want.stdout), Stderr: []byte(want.stderr), ExitCode: code}, want.err
}

// Check reports unexpected calls and expectations that were never met.
func (f *Fake) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := slices.Clone(f.errs)
	for _, e := range f.expected {
		errs = append(errs, "expected command never ran: "+runner.Quote(e.args...))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d fake runner problem(s):\n%s", len(errs), strings.Join(errs, "\n"))
}

// Recorder runs each command on Runner (a real one, say) and keeps its
// command line: for tests of how many processes something starts.
type Recorder struct {
	runner.Runner
	mu    sync.Mutex
	calls []string
}

// Run runs c on r.Runner, after noting it.
func (r *Recorder) Run(ctx context.Context, c *runner.Cmd) (runner.Result, error) {
	r.mu.Lock()
	r.calls = append(r.calls, c.String())
	r.mu.Unlock()
	return r.Runner.Run(ctx, c)
}

// Calls are the command lines run so far, in the order they started.
func (r *Recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
