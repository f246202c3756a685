package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	logs "go.opentelemetry.io/proto/slim/otlp/logs/v1"

	"github.com/litterbox-dev/litterbox/activity/otlp/otlptest"
)

func cmdOTLPCollector(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: otlpcollector FILE")
	}
	path := ts.MkAbs(args[0])
	appendTo := func(p string, b []byte) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			f.Write(b)
			f.Close()
		}
	}
	appendTo(path, nil)
	var last []byte
	c := otlptest.Start(nil, func(r *logs.LogRecord, raw []byte, err error) {
		if !bytes.Equal(raw, last) {
			appendTo(path+".raw", append(raw, '\n'))
			last = raw
		}
		if err != nil {
			appendTo(path, []byte(fmt.Sprintf("undecodable: %v\n", err)))
			return
		}
		appendTo(path, []byte(otlptest.Line(r)+"\n"))
	})
	ts.Defer(c.Close)
	ts.Setenv("OTLPURL", c.URL)
}

func cmdTUI(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 || (neg && args[0] != "plain" && args[0] != "pane") {
		ts.Fatalf("usage: tui start|wait|gone|keys|resize|lastline|screen|plain|pane|exited ...")
	}
	switch sub, args := args[0], args[1:]; sub {
	case "start":
		if len(args) < 3 {
			ts.Fatalf("usage: tui start COLS ROWS CMD [ARGS...]")
		}
		// The shell records the program's exit status: tmux 3.3 can mark
		// a pane dead (its terminal closed) without ever learning the
		// status of the process that ended.
		status := tuiStatusFile(ts)
		_ = os.Remove(status)
		cmd := strings.Join(args[2:], " ") + `; echo "$?" >` + status + ".tmp && mv " + status + ".tmp " + status
		_ = tmuxCmd(ts, "kill-server").Run()
		ts.Defer(func() {
			_ = tmuxCmd(ts, "kill-server").Run()
			// tmux leaves its socket file behind.
			_ = os.Remove(filepath.Join(cmp.Or(os.Getenv("TMUX_TMPDIR"), "/tmp"), fmt.Sprintf("tmux-%d", os.Getuid()), tmuxSocket(ts)))
		})
		// A server being killed may still hold the socket a moment:
		// "server exited unexpectedly".
		for try := 0; ; try++ {
			out, err := tmuxCmd(ts, "-f", "/dev/null", "start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
				"new-session", "-d", "-x", args[0], "-y", args[1], "-c", ts.MkAbs("."), cmd).CombinedOutput()
			if err == nil {
				break
			}
			if try == 20 {
				ts.Fatalf("tmux new-session: %v: %s", err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "wait":
		within := time.Duration(0)
		if len(args) == 3 && args[0] == "-within" {
			var err error
			within, err = time.ParseDuration(args[1])
			ts.Check(err)
			args = args[2:]
		}
		if len(args) != 1 {
			ts.Fatalf("usage: tui wait [-within DURATION] REGEXP")
		}
		re := scriptRegexp(ts, args[0])
		start := time.Now()
		var screen string
		for time.Since(start) < 30*time.Second {
			if screen = tuiScreen(ts); re.MatchString(screen) {
				took := time.Since(start)
				if within > 0 && took > within {
					ts.Fatalf("the screen matched %q after %s, not within %s:\n%s", args[0], took.Round(time.Millisecond), within, screen)
				}
				ts.Logf("matched %q after %s", args[0], took.Round(time.Millisecond))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		ts.Fatalf("the screen never matched %q; it shows:\n%s", args[0], screen)
	case "gone":
		if len(args) != 1 {
			ts.Fatalf("usage: tui gone REGEXP")
		}
		re := scriptRegexp(ts, args[0])
		start := time.Now()
		for screen := tuiScreen(ts); re.MatchString(screen); screen = tuiScreen(ts) {
			if time.Since(start) > 30*time.Second {
				ts.Fatalf("the screen still matches %q; it shows:\n%s", args[0], screen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "keys":
		// A key after Escape is sent a moment later, as a person types it:
		// a terminal program reads ESC and a key arriving together as
		// Alt+key.
		for i, k := range args {
			if i > 0 && args[i-1] == "Escape" {
				time.Sleep(150 * time.Millisecond)
			}
			if out, err := tmuxCmd(ts, "send-keys", "-t", "0", k).CombinedOutput(); err != nil {
				ts.Fatalf("tmux send-keys: %v: %s", err, out)
			}
		}
		if args[len(args)-1] == "Escape" {
			time.Sleep(150 * time.Millisecond)
		}
	case "resize":
		if len(args) != 2 {
			ts.Fatalf("usage: tui resize COLS ROWS")
		}
		if out, err := tmuxCmd(ts, "resize-window", "-t", "0", "-x", args[0], "-y", args[1]).CombinedOutput(); err != nil {
			ts.Fatalf("tmux resize-window: %v: %s", err, out)
		}
	case "lastline":
		if len(args) != 1 {
			ts.Fatalf("usage: tui lastline REGEXP")
		}
		screen := tuiScreen(ts)
		lines := strings.Split(strings.TrimSuffix(screen, "\n"), "\n")
		if last := lines[len(lines)-1]; !scriptRegexp(ts, args[0]).MatchString(last) {
			ts.Fatalf("the last row is %q, not a match of %q; the screen:\n%s", last, args[0], screen)
		}
	case "screen":
		fmt.Fprint(ts.Stdout(), tuiScreen(ts))
	case "plain":
		out, err := tmuxCmd(ts, "capture-pane", "-p", "-e", "-t", "0").Output()
		ts.Check(err)
		if plain := !strings.Contains(string(out), "\x1b["); plain == neg {
			ts.Fatalf("plain text: %v; the screen with its attributes: %q", plain, out)
		}
	case "pane":
		if len(args) != 2 {
			ts.Fatalf("usage: tui pane FORMAT REGEXP")
		}
		out, err := tmuxCmd(ts, "display-message", "-p", "-t", "0", args[0]).Output()
		ts.Check(err)
		if got := strings.TrimSpace(string(out)); scriptRegexp(ts, args[1]).MatchString(got) == neg {
			ts.Fatalf("the pane's %s is %q: a match of %q is %v, want %v", args[0], got, args[1], !neg, neg)
		}
	case "exited":
		// As long as the other waits: a program that does not exit waits
		// for nothing, and one that does may take a while on a loaded
		// machine.
		deadline := time.Now().Add(30 * time.Second)
		for {
			if b, err := os.ReadFile(tuiStatusFile(ts)); err == nil {
				if code := strings.TrimSpace(string(b)); code != "0" {
					ts.Fatalf("the program exited %s; the screen:\n%s", code, tuiScreen(ts))
				}
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("the program did not exit; the screen:\n%s\nits goroutines (SIGQUIT):\n%s", tuiScreen(ts), tuiDump(ts))
			}
			time.Sleep(50 * time.Millisecond)
		}
	default:
		ts.Fatalf("unknown tui command %q", sub)
	}
}

// tmuxCmd is tmux on the script's own server, run with the script's
// environment (which the server, started by the first, passes on to the
// program it runs).
func tmuxCmd(ts *testscript.TestScript, args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-u", "-L", tmuxSocket(ts)}, args...)...)
	env := []string{"LANG=C.UTF-8", "TERM=xterm-256color"}
	for _, k := range []string{"PATH", "HOME", "GIT_CONFIG_NOSYSTEM", "LITTERBOX_LABELS", "LITTERBOX_SCANNER", "LITTERBOX_IMAGE", "LITTERBOX_LOG_LEVEL",
		"LITTERBOX_ENGINE", "CONTAINER_HOST", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "TMPDIR", "NO_COLOR", "LITTERBOX_CACHE_DIR"} {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	return cmd
}

// tmuxSocket is the name of the script's own tmux server.
func tmuxSocket(ts *testscript.TestScript) string { return "lb-" + ts.Getenv("TESTID") }

// tuiScreen is what the terminal shows, one line a row.
// tuiStatusFile is where the shell of the script's pane writes its
// program's exit status.
func tuiStatusFile(ts *testscript.TestScript) string {
	return filepath.Join(ts.Getenv("WORK"), ".tui-status")
}

// tuiDump makes the pane's program (the child of its shell) print its
// goroutines (a Go program's answer to SIGQUIT) and returns the pane's
// history, where they went.
func tuiDump(ts *testscript.TestScript) string {
	out, err := tmuxCmd(ts, "display-message", "-p", "-t", "0", "#{pane_pid}").Output()
	if err != nil {
		return err.Error()
	}
	_ = exec.Command("pkill", "-QUIT", "-P", strings.TrimSpace(string(out))).Run()
	time.Sleep(2 * time.Second)
	out, err = tmuxCmd(ts, "capture-pane", "-p", "-J", "-S", "-3000", "-t", "0").Output()
	if err != nil {
		return err.Error()
	}
	return string(out)
}

func tuiScreen(ts *testscript.TestScript) string {
	out, err := tmuxCmd(ts, "capture-pane", "-p", "-t", "0").Output()
	if err != nil {
		ts.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// condTmux is the script condition tmux (scriptcmds_test.go).
func condTmux() (bool, error) {
	_, err := exec.LookPath("tmux")
	return neededInCI(err == nil, "CI=true but tmux is missing: run scripts/ensure-tmux.sh")
}
