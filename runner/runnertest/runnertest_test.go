package runnertest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/litterbox-dev/litterbox/runner"
)

func TestFake(t *testing.T) {
	ctx := context.Background()
	f := &Fake{}
	f.Expect([]string{"git", "status"}, "clean\n", nil)
	res, err := f.Run(ctx, runner.New("git", "status"))
	if err != nil || string(res.Stdout) != "clean\n" || res.ExitCode != 0 {
		t.Errorf("Run = %+v, %v", res, err)
	}
	if err := f.Check(); err != nil {
		t.Errorf("Check = %v", err)
	}
	// An unexpected call and an unmet expectation are both reported.
	f.Expect([]string{"git", "never"}, "", nil)
	_, _ = f.Run(ctx, runner.New("git", "extra"))
	err = f.Check()
	if err == nil {
		t.Fatal("Check = nil after an unexpected call")
	}
	for _, want := range []string{"unexpected command: git extra", "expected command never ran: git never"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %v; want it to mention %q", err, want)
		}
	}
}

// Calls that run side by side arrive in any order; expectations of one argv
// are met in the order they were made.
func TestFakeAnyOrder(t *testing.T) {
	ctx := context.Background()
	f := New(t)
	f.Expect([]string{"docker", "ps"}, "first\n", nil)
	f.Expect([]string{"docker", "network", "ls"}, "nets\n", nil)
	f.Expect([]string{"docker", "ps"}, "second\n", nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if res, _ := f.Run(ctx, runner.New("docker", "network", "ls")); string(res.Stdout) != "nets\n" {
			t.Errorf("network ls = %q", res.Stdout)
		}
	}()
	wg.Wait()
	for _, want := range []string{"first\n", "second\n"} {
		if res, _ := f.Run(ctx, runner.New("docker", "ps")); string(res.Stdout) != want {
			t.Errorf("ps = %q, want %q", res.Stdout, want)
		}
	}
}
