package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/litterbox-dev/litterbox/activity"
	"github.com/litterbox-dev/litterbox/sandbox/api"
)

// This file puts each tool call in the activity record of the sandbox it
// worked on (package activity), for `litterbox watch` and `litterbox ui`.

// recordCall appends the event of one tool call: the tool, a short form of
// its arguments, when it started and what it took, how it ended (exit code,
// error, cancelled), the commit it made and the files that commit changed
// (as the snapshot knows them: no git call on the call's path).
// Only a sandbox this server made or resolved gets a record: an agent
// naming sandboxes that do not exist makes no files. A record that cannot be
// written costs the call nothing but a log line. The calls that are the
// service's operations (servicesOwn) are recorded by the service, as the
// CLI's and the UI's are, with the agent as who acted: not twice.
func (s *Server) recordCall(ctx context.Context, tool string, args map[string]any, res any, err error, start time.Time) {
	if s.repo == nil || servicesOwn(tool, args) {
		return
	}
	name, _ := args["sandbox"].(string)
	slug, serr := api.Slugify(name)
	if serr != nil {
		return
	}
	s.mu.Lock()
	known := s.handles[slug] != nil
	s.mu.Unlock()
	if !known {
		return
	}
	e := activity.Event{
		Start: start, Sandbox: slug, Kind: activity.KindCall, By: "mcp", Tool: tool, Args: callArgs(tool, args),
		Ms: time.Since(start).Milliseconds(), Cancelled: ctx.Err() != nil,
	}
	if err != nil {
		e.Error = toolError(err)
	}
	snap := func(i SnapshotInfo) {
		if i.Committed {
			e.Commit, e.Files = i.Commit, i.files
		}
		if i.Error != "" {
			e.Error = "snapshot failed: " + i.Error
		}
	}
	switch r := res.(type) {
	case *BashResult:
		if r != nil {
			e.Exit, e.TimedOut, e.Output = &r.ExitCode, r.TimedOut, r.Stdout
			if r.Stderr != "" {
				e.Output += "--- stderr\n" + r.Stderr
			}
			snap(r.Snapshot)
		}
	case *WriteResult:
		if r != nil {
			snap(r.Snapshot)
			e.Files = []string{r.Path}
		}
	case *PatchResult:
		if r != nil {
			snap(r.Snapshot)
			e.Files = []string{r.Path}
		}
	}
	if e.Commit == "" {
		e.Files = nil
	}
	if err := activity.Append(s.repo.Git.CommonDir, e); err != nil {
		s.log.Warn("cannot record the call in the activity record", "sandbox", slug, "err", err)
	}
}

// servicesOwn reports whether the service records the call itself
// (sandbox.Sandboxes records each operation it runs): a create, a fork, a
// milestone, a rewind, a service's start, stop or restart.
func servicesOwn(tool string, args map[string]any) bool {
	switch tool {
	case "sandbox-create", "sandbox-fork", "milestone", "rewind":
		return true
	case "sandbox-service":
		switch args["action"] {
		case api.ActionStart, api.ActionStop, api.ActionRestart:
			return true
		}
	}
	return false
}

// callArgs is a short form of a call's arguments, as the record keeps them:
// the command of a bash, the path of a file tool, the size of what was
// written rather than all of it.
func callArgs(tool string, args map[string]any) string {
	str := func(k string) string { v, _ := args[k].(string); return v }
	with := func(s string, parts ...string) string {
		for _, p := range parts {
			if p != "" {
				s += " " + p
			}
		}
		return s
	}
	opt := func(format, k string) string {
		if v, ok := args[k]; ok && v != "" && v != false && v != float64(0) {
			return fmt.Sprintf(format, v)
		}
		return ""
	}
	switch tool {
	case "bash":
		return with(str("command"), opt("(in %s)", "workdir"), opt("(timeout %vs)", "timeout"))
	case "read":
		return with(str("path"), opt("(from line %v)", "offset"), opt("(%v lines)", "limit"))
	case "write":
		return fmt.Sprintf("%s (%d bytes)", str("path"), len(str("content")))
	case "patch":
		return fmt.Sprintf("%s (a diff of %d lines)", str("path"), strings.Count(str("diff"), "\n"))
	case "ls":
		return with(str("path"), opt("(recursive)", "recursive"))
	case "glob", "grep":
		return with(str("pattern"), opt("in %s", "path"), opt("(only %s)", "include"))
	case "sandbox-service":
		return with(str("action"), str("name"))
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		if k != "sandbox" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, args[k]))
	}
	return strings.Join(parts, " ")
}
