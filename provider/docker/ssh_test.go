package docker

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
	"github.com/litterbox-dev/litterbox/runner/runnertest"
)

// tunneled is a Client of an ssh endpoint whose forward answers (a local
// listener stands for it), with f as its runner.
func tunneled(t *testing.T, f runner.Runner) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ep := Endpoint{URL: "ssh://far.example"}
	tun := &sshTunnel{ep: ep, r: f, host: "far.example", sock: sock, ctl: sock + ".ctl", lock: sock + ".lock"}
	return &Client{R: f, Host: tun.Host(), ep: ep, tunnel: tun}
}

// masterGone is how the docker CLI fails when the ssh master that held the
// forward left (it does once idle): nothing listens at the socket.
var masterGone = &runner.ExitError{Command: "docker ps", ExitCode: 1,
	Stderr: "Cannot connect to the Docker daemon at unix:///run/user/1000/litterbox/ssh-x.sock. Is the docker daemon running?"}

// TestSSHRunsPSAgain: through an ssh tunnel whose master left, `docker
// ps` is run again once the tunnel is up again, and lists the containers
// once, not with what the failed run printed before it failed.
func TestSSHRunsPSAgain(t *testing.T) {
	f := runnertest.New(t)
	c := tunneled(t, f)
	argv := append([]string{"docker", "--host", c.Host}, PSArgs([]string{"dev.litterbox.slug"}, nil)...)
	first, _, _ := strings.Cut(psOutput, "\n")
	f.ExpectStderr(argv, first+"\n", masterGone.Stderr, masterGone)
	f.Expect(argv, psOutput, nil)
	got, err := c.PS(context.Background(), []string{"dev.litterbox.slug"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "lbt-cap3" || got[1].Name != "lbt-cap2" {
		t.Errorf("ps listed %+v, want lbt-cap3 and lbt-cap2 once", got)
	}
}

// TestSSHDoesNotRunStdinAgain: a command that was given input (it may
// have read some of it) is not run again after the tunnel failed it: the
// caller hears the engine could not be reached.
func TestSSHDoesNotRunStdinAgain(t *testing.T) {
	f := runnertest.New(t)
	c := tunneled(t, f)
	argv := []string{"docker", "--host", c.Host, "exec", "-i", "id1", "cat"}
	f.ExpectStderr(argv, "", masterGone.Stderr, masterGone)
	_, err := c.Run(context.Background(), c.Cmd("exec", "-i", "id1", "cat").WithStdin(strings.NewReader("input")))
	var ue *provider.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "far.example") {
		t.Errorf("err = %v, want the ssh engine unreachable", err)
	}
}
