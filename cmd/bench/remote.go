package main

import (
	"context"
	"fmt"
	"time"

	"github.com/litterbox-dev/litterbox/provider/docker"
	"github.com/litterbox-dev/litterbox/runner"
)

// remoteCases are the rows of the remote group: an agent's
// cheapest call on the local engine and on an ssh engine, side by side, with
// the bare docker exec beneath each.
var remoteCases = []string{
	"mcp bash `true`, local engine",
	"mcp bash `true`, ssh engine",
	"docker exec `true`, plain ssh://",
	"docker exec `true`, litterbox's ssh socket",
}

// caseRemote times MCP `bash true` on the local engine and on the ssh engine
// b.ssh (scripts/ensure-ssh-engine.sh), interleaved. The ssh call's target
// is at most 1.5x the local one; its floors are `docker exec true` through
// the docker CLI's own ssh:// support and through the socket litterbox
// forwards over its shared ssh connection.
func (b *bench) caseRemote(ctx context.Context) error {
	if b.ssh == "" {
		b.skip(remoteCases, "no ssh engine given (-ssh)")
		return nil
	}
	if err := runCmd(ctx, "docker", "--host", b.ssh, "version", "--format", "{{.Server.Version}}"); err != nil {
		b.skip(remoteCases, fmt.Sprintf("%s does not answer: run scripts/ensure-ssh-engine.sh (%v)", b.ssh, firstLine(err.Error())))
		return nil
	}
	if err := runCmd(ctx, "docker", "--host", b.ssh, "image", "inspect", "--format", "{{.Id}}", "busybox:latest"); err != nil {
		b.skip(remoteCases, fmt.Sprintf("%s has no busybox:latest: run scripts/ensure-ssh-engine.sh", b.ssh))
		return nil
	}
	dir, err := b.repo(ctx, b.small)
	if err != nil {
		return err
	}
	// The socket litterbox's ssh master forwards: the same one the server
	// below uses (one per endpoint, shared between processes).
	p, err := docker.New(docker.Options{Host: b.ssh, Runner: runner.Exec{}})
	if err != nil {
		return err
	}
	sock := p.Client().Host

	type side struct {
		name, container string
		s               *mcpSession
		env             []string
	}
	sides := []*side{{name: "rl"}, {name: "rs", env: []string{"DOCKER_HOST=" + b.ssh}}}
	for _, sd := range sides {
		if sd.s, err = b.startMCPEnv(ctx, dir, sd.env); err != nil {
			return err
		}
		defer sd.s.close()
		out, err := sd.s.call(ctx, "sandbox-create", map[string]any{"name": sd.name})
		if err != nil {
			return err
		}
		sd.container, _ = out["container"].(string)
		defer func() {
			p := b.litterbox(dir, "delete", "--force", sd.name)
			p.env = append(p.env, sd.env...)
			_, _ = p.run(context.WithoutCancel(ctx))
		}()
	}
	local, remote := sides[0], sides[1]
	bash := func(sd *side) func() error {
		return func() error {
			_, err := sd.s.call(ctx, "bash", map[string]any{"sandbox": sd.name, "command": "true"})
			return err
		}
	}
	var lMCP, rMCP, lExec, rPlain, rSock []time.Duration
	for i := 0; i <= b.n; i++ {
		for _, st := range []struct {
			into *[]time.Duration
			fn   func() error
		}{
			{&lMCP, bash(local)},
			{&lExec, func() error { return runCmd(ctx, "docker", "exec", local.container, "true") }},
			{&rMCP, bash(remote)},
			{&rSock, func() error { return runCmd(ctx, "docker", "--host", sock, "exec", remote.container, "true") }},
			{&rPlain, func() error { return runCmd(ctx, "docker", "--host", b.ssh, "exec", remote.container, "true") }},
		} {
			d, err := timed(st.fn)
			if err != nil {
				return err
			}
			if i > 0 { // the first round warms up (and starts the ssh master)
				*st.into = append(*st.into, d)
			}
		}
	}
	vsLocal := target{"<= 1.5x local mcp", func(r Row) bool { return r.Floor > 0 && r.Ratio <= 1.5 }}
	b.rows = append(b.rows,
		withNote(row(remoteCases[0], lMCP, lExec, maxOverhead(40)), "floor: docker exec true, local"),
		withNote(row(remoteCases[1], rMCP, lMCP, vsLocal), fmt.Sprintf("floor: the same call on the local engine; %s", b.ssh)),
		withNote(row(remoteCases[2], rPlain, lExec, info), "floor: docker exec true, local"),
		withNote(row(remoteCases[3], rSock, lExec, info), "floor: docker exec true, local; "+sock),
	)
	return nil
}
