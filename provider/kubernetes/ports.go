package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/litterbox-dev/litterbox/provider"
	"github.com/litterbox-dev/litterbox/runner"
)

// A port of a sandbox pod is reached through `kubectl port-forward`, which
// litterbox starts in a session of its own, so it outlives the litterbox
// command that asked (the CLI's `ports`, `create`), and records in StateDir
// (the pid and the local port), so the next call reuses it. Remove and
// Pause end it; so does the pod's end, by itself.

// forward is the record of one port-forward.
type forward struct {
	PID       int    `json:"pid"`
	LocalPort int    `json:"localPort"`
	Pod       string `json:"pod"`
	Port      int    `json:"port"`
}

// forwardDir holds the records of this provider's cluster and namespace.
func (p *Provider) forwardDir() string {
	sum := sha256.Sum256([]byte(p.o.Kubeconfig + "\x00" + os.Getenv("KUBECONFIG") + "\x00" + p.o.Context + "\x00" + p.o.Namespace))
	return filepath.Join(p.o.StateDir, "forwards-"+hex.EncodeToString(sum[:8]))
}

func (p *Provider) forwardFile(pod string, port int) string {
	return filepath.Join(p.forwardDir(), fmt.Sprintf("%s-%d.json", pod, port))
}

// alive reports whether f's process is still the port-forward it recorded:
// its command line names the pod and the port (a pid can be reused).
func (f forward) alive() bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", f.PID))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmdline), "\x00")
	return containsArg(args, "port-forward") && containsArg(args, "pod/"+f.Pod) && containsArg(args, fmt.Sprintf(":%d", f.Port))
}

func containsArg(args []string, s string) bool {
	for _, a := range args {
		if a == s {
			return true
		}
	}
	return false
}

var forwarding = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`) })

// startForward starts `kubectl port-forward` for one port of a pod, in a
// session of its own, and waits until it says where it listens.
func (p *Provider) startForward(ctx context.Context, pod string, port int) (forward, error) {
	if err := os.MkdirAll(p.forwardDir(), 0o700); err != nil {
		return forward{}, err
	}
	logFile := strings.TrimSuffix(p.forwardFile(pod, port), ".json") + ".log"
	argv := p.Cmd("port-forward", "--address", "127.0.0.1", "pod/"+pod, fmt.Sprintf(":%d", port)).Args
	script := `exec setsid "$@" >` + shellQuote(logFile) + ` 2>&1 </dev/null & echo $!`
	res, err := p.o.Runner.Run(ctx, runner.New("sh", append([]string{"-c", script, "sh"}, argv...)...).As(runner.Control))
	if err != nil {
		return forward{}, fmt.Errorf("start kubectl port-forward: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		return forward{}, fmt.Errorf("start kubectl port-forward: no pid in %q", res.Stdout)
	}
	f := forward{PID: pid, Pod: pod, Port: port}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := os.ReadFile(logFile)
		if m := forwarding().FindSubmatch(out); m != nil {
			f.LocalPort, _ = strconv.Atoi(string(m[1]))
			break
		}
		if syscall.Kill(pid, 0) != nil || time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return forward{}, p.classify(&runner.ExitError{Command: runner.Quote(argv...), ExitCode: 1, Stderr: string(out)})
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := json.Marshal(f)
	if err := os.WriteFile(p.forwardFile(pod, port), data, 0o600); err != nil {
		return forward{}, err
	}
	return f, nil
}

// stopForwards ends the port-forwards recorded for pod.
func (p *Provider) stopForwards(pod string) {
	files, _ := filepath.Glob(filepath.Join(p.forwardDir(), pod+"-*.json"))
	for _, file := range files {
		var f forward
		data, err := os.ReadFile(file)
		if err != nil || json.Unmarshal(data, &f) != nil || f.Pod != pod {
			continue
		}
		if f.alive() {
			_ = syscall.Kill(f.PID, syscall.SIGTERM)
		}
		_ = os.Remove(file)
		_ = os.Remove(strings.TrimSuffix(file, ".json") + ".log")
	}
}

// Ports lists the sandbox's named ports, each with a port-forward on this
// machine's 127.0.0.1: the one recorded when it still runs, else a new one.
func (p *Provider) Ports(ctx context.Context, ref provider.Ref) ([]provider.Port, error) {
	pod, err := p.getPod(ctx, ref.ID)
	if err != nil {
		return nil, err
	}
	out := []provider.Port{}
	for _, ps := range provider.ParsePortsLabel(pod.Metadata.Annotations[LabelPorts]) {
		port := provider.Port{Name: ps.Name, ContainerPort: ps.Port}
		if pod.state() != provider.StateRunning {
			out = append(out, port)
			continue
		}
		var f forward
		if data, err := os.ReadFile(p.forwardFile(ref.ID, ps.Port)); err == nil && json.Unmarshal(data, &f) == nil && f.alive() {
			// still forwarding
		} else if f, err = p.startForward(ctx, ref.ID, ps.Port); err != nil {
			return nil, err
		}
		port.HostIP, port.HostPort = "127.0.0.1", f.LocalPort
		port.URL = fmt.Sprintf("http://127.0.0.1:%d", f.LocalPort)
		port.Note = fmt.Sprintf("forwarded by litterbox with `kubectl port-forward` (pid %d); it lasts while the pod does", f.PID)
		out = append(out, port)
	}
	return out, nil
}
