package main

import (
	"context"
	"io"
	"testing"

	"github.com/litterbox-dev/litterbox/sandbox"
)

// Arguments are bytes: a path or a message that is not UTF-8 reaches the
// command as given. kong's own string decoder goes through JSON and turned
// such bytes into U+FFFD, so `litterbox cp 'box:bad\xffname' .` looked for
// a file that does not exist.
func TestArgumentsKeepTheirBytes(t *testing.T) {
	var c cli
	parser, err := newParser(&c, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.Parse([]string{"cp", "box:dir/bad\xffname\xe9", "out/\xfe"}); err != nil {
		t.Fatal(err)
	}
	if c.Cp.Src != "box:dir/bad\xffname\xe9" || c.Cp.Dst != "out/\xfe" {
		t.Errorf("cp got %q %q", c.Cp.Src, c.Cp.Dst)
	}
	c = cli{}
	if _, err := parser.Parse([]string{"snapshot", "box", "-m", "caf\xe9"}); err != nil {
		t.Fatal(err)
	}
	if c.Snapshot.Message != "caf\xe9" {
		t.Errorf("snapshot -m got %q", c.Snapshot.Message)
	}
}

// A bad argument the service refuses (a path, a count out of its range) is
// a usage error, as a bad flag is: exit 2, not the generic 1.
func TestBadArgumentsAreUsageErrors(t *testing.T) {
	_, pathErr := sandbox.ContainerPath("../../etc/passwd")
	_, poolErr := (&sandbox.Service{}).FillPool(context.Background(), nil, 17)
	for _, err := range []error{pathErr, poolErr} {
		if err == nil {
			t.Fatal("no error")
		}
		if got := exitCode(err, exitFailed); got != exitUsage {
			t.Errorf("%v: exit code %d, want %d", err, got, exitUsage)
		}
	}
}
