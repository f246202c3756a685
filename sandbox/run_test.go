package sandbox

import (
	"strings"
	"testing"
	"time"
)

func runSpec(t *testing.T, spec string) (*RunResult, string, string) {
	t.Helper()
	res, out, errOut, err := runInContainer(strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	return res, string(out), string(errOut)
}

func TestRunInContainer(t *testing.T) {
	res, out, errOut := runSpec(t, `{"command":"echo out; echo err >&2; exit 3","workdir":"/","timeout":10000000000,"cap":100}`)
	if out != "out\n" || errOut != "err\n" || res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("got %+v %q %q", res, out, errOut)
	}
}

func TestRunInContainerCapsOutput(t *testing.T) {
	res, out, _ := runSpec(t, `{"command":"yes | head -c 5000","workdir":"/","timeout":10000000000,"cap":1000}`)
	if len(out) != 1000 || !res.StdoutTruncated || res.StderrTruncated {
		t.Fatalf("kept %d bytes, truncated=%v, want 1000 and true", len(out), res.StdoutTruncated)
	}
}

func TestRunInContainerTimeoutKillsTheGroup(t *testing.T) {
	start := time.Now()
	res, _, _ := runSpec(t, `{"command":"sleep 30 & sleep 30","workdir":"/","timeout":200000000,"cap":100}`)
	if !res.TimedOut || res.ExitCode != 137 {
		t.Fatalf("got %+v, want a timeout with SIGKILL's exit code", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v: the background job held the call", d)
	}
}

func TestRunInContainerBackgroundJobDoesNotHold(t *testing.T) {
	start := time.Now()
	res, out, _ := runSpec(t, `{"command":"sleep 5 & echo started","workdir":"/","timeout":10000000000,"cap":100}`)
	if res.ExitCode != 0 || out != "started\n" {
		t.Fatalf("got %+v %q", res, out)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %v: a background job holding stdout held the call", d)
	}
}
