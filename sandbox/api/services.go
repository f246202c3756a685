package api

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// PortInfo is one named port of a sandbox and where the host reaches it.
type PortInfo struct {
	Name string `json:"name"`
	// ContainerPort is the port inside the sandbox, also in Env.
	ContainerPort int    `json:"containerPort"`
	Env           string `json:"env"`
	// HostPort is the port the engine picked on its host's 127.0.0.1; 0
	// when not published.
	HostPort int    `json:"hostPort"`
	URL      string `json:"url,omitempty"`
	// Note says where URL works when that is not this machine (the engine
	// runs on another host, or in another network namespace).
	Note string `json:"note,omitempty"`
}

// PortsResult lists a sandbox's named ports.
type PortsResult struct {
	Sandbox string     `json:"sandbox"`
	Ports   []PortInfo `json:"ports"`
}

// ErrNoService is a service name the sandbox does not define.
var ErrNoService = errors.New("no such service")

// Service actions.
const (
	ActionStart   = "start"
	ActionStop    = "stop"
	ActionRestart = "restart"
	ActionStatus  = "status"
	ActionLogs    = "logs"
)

// ServiceActions are the actions services.Do takes, in the order shown to
// users.
var ServiceActions = []string{ActionStart, ActionStop, ActionRestart, ActionStatus, ActionLogs}

// DefaultLogLines is how many log lines the logs action returns by default.
const DefaultLogLines = 100

// ServiceStatus is what the supervisor knows about one service. It comes
// from state files the agent can write: every field is checked (the name is
// the one asked for, the state one of the supervisor's, numbers digits in
// range), so it may lie but holds no byte a terminal acts on.
type ServiceStatus struct {
	Name string `json:"name"`
	// State is not-started, starting, running, backoff (crashed, waiting to
	// be restarted), exited (ended and not restarted by its policy),
	// stopped, dead (its supervisor was killed), unsupervised (its
	// supervisor was killed but it still runs; start or stop it) or
	// unknown (its state file was tampered with).
	State string `json:"state"`
	// PID is the service's pid in the container while it runs.
	PID int `json:"pid,omitempty"`
	// Restarts counts the times the supervisor started it again since the
	// last start action (after a crash or a restart action).
	Restarts int `json:"restarts"`
	// LastExitCode is the exit code of its last run; 128+N means signal N.
	LastExitCode *int `json:"lastExitCode,omitempty"`
	// StartedAt is when its current (or last) run began.
	StartedAt time.Time `json:"startedAt,omitzero"`
}

// ServiceResult is the outcome of one service action.
type ServiceResult struct {
	Sandbox string `json:"sandbox"`
	Action  string `json:"action"`
	// Message says what the action did ("started", "already running", ...).
	Message string        `json:"message,omitempty"`
	Status  ServiceStatus `json:"status"`
	// Log holds the last lines of the service's output (logs action only).
	Log string `json:"log,omitempty"`
}

// String renders a status on one line, as the CLI prints it:
// "web running pid=12 restarts=1 last-exit=143 up=2m3s".
func (st ServiceStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", st.Name, st.State)
	if st.PID != 0 {
		fmt.Fprintf(&b, " pid=%d", st.PID)
	}
	fmt.Fprintf(&b, " restarts=%d", st.Restarts)
	if st.LastExitCode != nil {
		fmt.Fprintf(&b, " last-exit=%d", *st.LastExitCode)
	}
	if st.PID != 0 && !st.StartedAt.IsZero() {
		fmt.Fprintf(&b, " up=%s", time.Since(st.StartedAt).Truncate(time.Second))
	}
	return b.String()
}
