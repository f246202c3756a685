package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/litterbox-dev/litterbox/internal/textcap"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// The service and port tools (docs/services.md). Neither snapshots: what a
// service writes reaches the branch with the next write, patch or bash.

// sandbox-ports

const portsDesc = `List a sandbox's named ports: for each, its name, the port inside the sandbox (also in the environment as PORT_<NAME>), and the URL the user reaches it at from the host (http://127.0.0.1:<port the engine picked>), with a note when that URL works only somewhere else (another host, a network namespace).
Named ports come from [ports] in the repository's .litterbox.toml and are set up when the sandbox is created. Make your server listen on 0.0.0.0:$PORT_<NAME> inside the sandbox.`

// PortsArgs are sandbox-ports' arguments.
type PortsArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
}

// PortsResult is sandbox-ports' result.
type PortsResult struct {
	plain
	api.PortsResult
}

func (r *PortsResult) blocks() []string { return []string{r.text()} }

func (r *PortsResult) text() string {
	if len(r.Ports) == 0 {
		return "This sandbox has no named ports ([ports] in .litterbox.toml)."
	}
	var b strings.Builder
	for _, p := range r.Ports {
		url := p.URL
		if url == "" {
			url = "(not published)"
		}
		fmt.Fprintf(&b, "%s: port %d in the sandbox ($%s) -> %s on the host\n", p.Name, p.ContainerPort, p.Env, url)
		if p.Note != "" {
			fmt.Fprintf(&b, "  (%s)\n", p.Note)
		}
	}
	return b.String()
}

func (s *Server) ports(ctx context.Context, a PortsArgs) (*PortsResult, error) {
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.PortsResult, error) {
		return s.sandboxes.Ports(ctx, h)
	}, func(r api.PortsResult) *PortsResult { return &PortsResult{PortsResult: r} })
}

// sandbox-service

const serviceDesc = `Control a long-running service of a sandbox (a web server, a database), defined under [services.NAME] in the repository's .litterbox.toml and supervised inside the sandbox.
action: start (no-op if running), stop (its stop signal, then SIGKILL after a grace period), restart (its restart signal if it has one, else stop then start), status, or logs (the last lines lines of its output, default 100).
Every action returns its status: state (running, backoff, exited, stopped, ...), pid, restarts (a crashed service is restarted as its policy says) and lastExitCode.`

// ServiceArgs are sandbox-service's arguments.
type ServiceArgs struct {
	Sandbox string `json:"sandbox" jsonschema:"Sandbox name, as given to sandbox-create"`
	Name    string `json:"name" jsonschema:"Service name, from [services.NAME] in .litterbox.toml"`
	Action  string `json:"action" jsonschema:"One of start, stop, restart, status, logs"`
	Lines   int    `json:"lines,omitempty" jsonschema:"For logs: how many of the last lines to return (default 100)"`
}

// ServiceResult is sandbox-service's result.
type ServiceResult struct {
	Sandbox string            `json:"sandbox"`
	Action  string            `json:"action"`
	Message string            `json:"message,omitempty"`
	Status  api.ServiceStatus `json:"status"`
	Log     string            `json:"log,omitempty" jsonschema:"For logs: the service's last lines of output"`
}

func (r *ServiceResult) fit(budget int) { r.Log = cutText(r.Log, budget, "the log") }

func (r *ServiceResult) weight() int { return textcap.Len(r.Log) }

func (r *ServiceResult) blocks() []string {
	var b strings.Builder
	if r.Message != "" {
		fmt.Fprintf(&b, "%s: %s\n", r.Status.Name, r.Message)
	}
	b.WriteString(r.Status.String() + "\n")
	if r.Action == api.ActionLogs {
		if r.Log == "" {
			b.WriteString("(no output yet)\n")
		} else {
			b.WriteString("--- log\n" + r.Log)
		}
	}
	return []string{b.String()}
}

func (s *Server) service(ctx context.Context, a ServiceArgs) (*ServiceResult, error) {
	if a.Lines < 0 || a.Lines > maxLogLines {
		return nil, fmt.Errorf("lines must be between 1 and %d (leave it out for 100)", maxLogLines)
	}
	return query(ctx, s, a.Sandbox, func(h *api.Handle) (*api.ServiceResult, error) {
		return s.sandboxes.ServiceAction(ctx, h, a.Name, a.Action, a.Lines)
	}, func(r api.ServiceResult) *ServiceResult {
		return &ServiceResult{Sandbox: r.Sandbox, Action: r.Action, Message: r.Message, Status: r.Status, Log: r.Log}
	})
}

// maxLogLines bounds the logs action.
const maxLogLines = 100000
