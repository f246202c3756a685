package docker

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// RunSpec describes a detached container to create and start.
type RunSpec struct {
	Name     string
	Image    string
	Network  string
	User     string
	Workdir  string
	Hostname string
	Labels   map[string]string
	Env      []string
	Tmpfs    []string // mount[:options]
	Ports    []string // -p values, e.g. 127.0.0.1::8080/tcp
	ReadOnly bool
	Init     bool
	// Hardening: drop every capability and forbid privilege gain.
	CapDropAll      bool
	NoNewPrivileges bool
	PidsLimit       int
	Memory          string
	CPUs            string
	Cmd             []string
}

// RunArgs builds the argv of `docker run --detach` for s.
func RunArgs(s RunSpec) []string {
	args := []string{"run", "--detach", "--name", s.Name}
	for _, kv := range SortedLabels(s.Labels) {
		args = append(args, "--label", kv)
	}
	if s.Init {
		args = append(args, "--init")
	}
	if s.Network != "" {
		args = append(args, "--network", s.Network)
	}
	if s.Hostname != "" {
		args = append(args, "--hostname", s.Hostname)
	}
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	if s.CapDropAll {
		args = append(args, "--cap-drop", "ALL")
	}
	if s.NoNewPrivileges {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if s.ReadOnly {
		args = append(args, "--read-only")
	}
	for _, t := range s.Tmpfs {
		args = append(args, "--tmpfs", t)
	}
	if s.PidsLimit > 0 {
		args = append(args, "--pids-limit", fmt.Sprint(s.PidsLimit))
	}
	if s.Memory != "" {
		args = append(args, "--memory", s.Memory)
	}
	if s.CPUs != "" {
		args = append(args, "--cpus", s.CPUs)
	}
	for _, p := range s.Ports {
		args = append(args, "--publish", p)
	}
	if s.Workdir != "" {
		args = append(args, "--workdir", s.Workdir)
	}
	for _, e := range s.Env {
		args = append(args, "--env", e)
	}
	args = append(args, s.Image)
	return append(args, s.Cmd...)
}

// Run creates and starts a detached container and returns its id.
func (c *Client) RunDetached(ctx context.Context, s RunSpec) (string, error) {
	res, err := c.Run(ctx, Cmd(RunArgs(s)...))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// SortedLabels renders labels as sorted key=value strings, so argv is stable.
func SortedLabels(labels map[string]string) []string {
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
