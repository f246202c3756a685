package scanner

import (
	"archive/tar"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/litterbox-dev/litterbox/internal/textcap"
	"github.com/litterbox-dev/litterbox/scanner/wire"
)

// runSpec runs spec as the scanner does, its stdin held open (closing it
// would cancel the command).
func runSpec(t *testing.T, spec string) (*wire.RunResult, string, string) {
	t.Helper()
	r, w := io.Pipe()
	defer w.Close()
	go io.WriteString(w, spec)
	res, err := runInContainer(r)
	if err != nil {
		t.Fatal(err)
	}
	return res, res.Stdout, res.Stderr
}

func TestRunInContainer(t *testing.T) {
	res, out, errOut := runSpec(t, `{"command":"echo out; echo err >&2; exit 3","workdir":"/","timeout":10000000000,"cap":100}`)
	if out != "out\n" || errOut != "err\n" || res.ExitCode != 3 || res.TimedOut {
		t.Fatalf("got %+v %q %q", res, out, errOut)
	}
}

func TestRunInContainerCapsOutput(t *testing.T) {
	res, out, _ := runSpec(t, `{"command":"yes | head -c 5000","workdir":"/","timeout":10000000000,"cap":1000}`)
	if textcap.Len(out) > 1000 || !res.StdoutTruncated || res.StderrTruncated || res.StdoutBytes != 5000 {
		t.Fatalf("showed %d bytes of JSON of %d, truncated=%v, want at most 1000 of 5000 and true", textcap.Len(out), res.StdoutBytes, res.StdoutTruncated)
	}
	if !strings.Contains(out, "bytes cut here; it was not kept") {
		t.Errorf("no note of the cut: %q", out)
	}
}

// TestRunInContainerKeepsWhatItCuts: 2 MB of NUL bytes (12 MB as JSON)
// shows under the cap, and the file the note names holds every byte.
func TestRunInContainerKeepsWhatItCuts(t *testing.T) {
	res, out, _ := runSpec(t, `{"command":"head -c 2000000 /dev/zero","workdir":"/","timeout":10000000000,"cap":20000,"keepOutput":true,"id":"t1"}`)
	if textcap.Len(out) > 20000 || res.StdoutBytes != 2000000 || res.StdoutFile == "" {
		t.Fatalf("showed %d bytes of JSON, file %q, want at most 20000 and a file", textcap.Len(out), res.StdoutFile)
	}
	defer os.Remove(res.StdoutFile)
	if !strings.Contains(out, "the whole stdout is in "+res.StdoutFile+" (2000000 bytes in all)") {
		t.Errorf("the note does not name the file: %q", out[len(out)/2-200:len(out)/2+200])
	}
	data, err := os.ReadFile(res.StdoutFile)
	if err != nil || len(data) != 2000000 || strings.Trim(string(data), "\x00") != "" {
		t.Fatalf("file holds %d bytes, %v", len(data), err)
	}
	if res.StderrFile != "" {
		t.Errorf("an empty stderr was kept in %s", res.StderrFile)
	}
	if _, err := os.Stat(filepath.Join(OutputDir, "t1-stderr")); err == nil {
		t.Errorf("the stderr file was left behind")
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

// TestRunInContainerStopsOnClosedStdin: closing stdin after the spec
// cancels the command and every process it started, also one that left its
// group and was orphaned.
func TestRunInContainerStopsOnClosedStdin(t *testing.T) {
	id := "cancel-" + strings.ReplaceAll(t.Name(), "/", "-")
	r, w := io.Pipe()
	done := make(chan *wire.RunResult)
	go func() {
		res, err := runInContainer(r)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	io.WriteString(w, `{"command":"(setsid sleep 301 &); sleep 302 & echo started; sleep 303","workdir":"/","timeout":60000000000,"cap":1000,"id":"`+id+`"}`)
	time.Sleep(500 * time.Millisecond) // let it start its processes
	w.Close()
	res := <-done
	if !res.Cancelled || res.ExitCode != 137 || res.Stdout != "started\n" {
		t.Fatalf("got %+v, want a cancel with SIGKILL's exit code", res)
	}
	time.Sleep(100 * time.Millisecond) // SIGKILL is delivered, not waited for
	var left []int
	for _, p := range treeOf(-1, runMark+"="+id) {
		if st, ok := readStat(p); ok && p > 0 && !zombie(p) {
			left = append(left, st.pid)
		}
	}
	if len(left) > 0 {
		t.Errorf("processes left running: %v", left)
	}
}

// zombie reports whether pid has exited and waits for its parent.
func zombie(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || strings.HasPrefix(string(data[i+1:]), " Z")
}

// mainRun runs Main with the request and spec in --in, and stdin held
// open until stop is closed: the command runs without a byte of stdin,
// and stdin's end still cancels it. It returns the command's stdout and
// result from the stream.
func mainRun(t *testing.T, root, spec string, stop <-chan struct{}) (string, wire.RunResult) {
	t.Helper()
	r, w := io.Pipe()
	go func() {
		<-stop
		w.Close()
	}()
	in := base64.StdEncoding.EncodeToString(append(wire.EncodeRequest(wire.Options{}), spec...))
	var out bytes.Buffer
	if err := Main([]string{"scan-internal", "--root", root, "--since", "0", "--max-size", "1000", "--in", in, "--run"}, r, &out); err != nil {
		t.Fatal(err)
	}
	var stdout string
	var res wire.RunResult
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(tr)
		switch hdr.Name {
		case wire.RunStdoutName:
			stdout = string(data)
		case wire.RunResultName:
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	return stdout, res
}

// TestMainInputInArgument: given in --in, the request and the command
// need nothing from stdin, which still stops the command when it ends.
func TestMainInputInArgument(t *testing.T) {
	root := t.TempDir()
	never := make(chan struct{})
	defer close(never)
	out, res := mainRun(t, root, `{"command":"echo ran","workdir":"/","timeout":10000000000,"cap":100}`, never)
	if out != "ran\n" || res.ExitCode != 0 || res.Cancelled {
		t.Fatalf("got %q %+v, want the command run", out, res)
	}
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	out, res = mainRun(t, root, `{"command":"echo started; sleep 30","workdir":"/","timeout":60000000000,"cap":100}`, stop)
	if out != "started\n" || !res.Cancelled || res.ExitCode != 137 {
		t.Fatalf("got %q %+v, want the command cancelled by stdin's end", out, res)
	}
}
