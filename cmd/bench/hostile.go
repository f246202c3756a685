package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// hostileCases are the rows of the MCP memory case: what a hostile file
// tree costs the MCP server.
var hostileCases = []string{"mcp grep 11 links x 100 MB line: peak RSS", "mcp 4 such greps in parallel: peak RSS"}

// hostileLinks is the hostile tree: 11 hard links to one 100 MB line
// of "a", in /tmp (not recorded).
const hostileLinks = `mkdir -p /tmp/g && yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | tr -d '\n' | head -c 100000000 >/tmp/g/f || exit 1
for i in 1 2 3 4 5 6 7 8 9 10; do ln /tmp/g/f /tmp/g/l$i || exit 1; done`

// caseHostile greps a tree made to blow up grep's output (one grep once
// took the server from 25 MB to 5.3 GB) and reports the server's peak
// resident size (VmHWM), after one grep and after four more in parallel.
func (b *bench) caseHostile(ctx context.Context) error {
	const name = "hostile"
	s, done, why, err := b.mcpSandbox(ctx, b.small, name, "sandbox-create", "bash", "grep")
	if err != nil {
		return err
	}
	if why != "" {
		b.skip(hostileCases, why)
		return nil
	}
	defer done()
	if _, err := s.call(ctx, "bash", map[string]any{"sandbox": name, "command": hostileLinks}); err != nil {
		return err
	}
	grep := map[string]any{"sandbox": name, "pattern": "a", "path": "/tmp/g"}
	d, _, err := s.timedCall(ctx, "grep", grep)
	if err != nil {
		return err
	}
	one, err := s.peakMiB()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.call(ctx, "grep", grep)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	four, err := s.peakMiB()
	if err != nil {
		return err
	}
	bound := target{"< 300 MiB", func(r Row) bool { return r.Median < 300 }}
	b.rows = append(b.rows,
		judge(Row{Case: hostileCases[0], Median: one, Unit: "MiB", Runs: 1, Note: fmt.Sprintf("the grep took %.1f s", ms(d)/1000)}, bound),
		judge(Row{Case: hostileCases[1], Median: four, Unit: "MiB", Runs: 1}, bound),
	)
	return nil
}

// peakMiB reads the server's peak resident size (VmHWM) from /proc.
func (s *mcpSession) peakMiB() (float64, error) { return s.statusMiB("VmHWM") }
