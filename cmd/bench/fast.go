package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// FastRow is one line of the speed table (the speed targets of
// create, delete, MCP `bash true` and the pool): what, its floor, the measured
// figure, their ratio and the target. Every figure comes from rows measured
// in this run; a row whose case did not run (another -only) is left out, and
// one whose feature is not built is n/a.
type FastRow struct {
	What     string  `json:"what"`
	Floor    string  `json:"floor"`
	FloorMS  float64 `json:"floorMs,omitempty"`
	Measured float64 `json:"measuredMs,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Target   string  `json:"target"`
	Status   string  `json:"status"`
	Note     string  `json:"note,omitempty"`
}

// fastRows builds the speed table from the rows of this run.
func (b *bench) fastRows(ctx context.Context) []FastRow {
	byCase := map[string]Row{}
	for _, r := range b.rows {
		byCase[r.Case] = r
	}
	var out []FastRow
	add := func(f FastRow, ok bool) {
		f.Status = "FAIL"
		if ok {
			f.Status = "PASS"
		}
		out = append(out, f)
	}
	big, small := b.big.String(), b.small.String()
	if r, ok := byCase["create from a warm pool "+big]; ok && r.Floor > 0 {
		add(FastRow{What: "create from a warm pool, " + big, Floor: "bare `docker run -d busybox`", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 0.25x, < 120 ms"}, r.Ratio <= 0.25 && r.Median < 120)
	} else if _, ran := byCase["create "+big]; ran && !b.has(ctx, "pool") {
		out = append(out, FastRow{What: "create from a warm pool, " + big, Floor: "bare `docker run -d busybox`", Target: "<= 0.25x, < 120 ms", Status: "n/a", Note: "no warm pool (`litterbox pool`) in this build"})
	}
	if r, ok := byCase["create "+big]; ok && r.Floor > 0 {
		add(FastRow{What: "create with an empty pool, " + big, Floor: "naive script (branch, own network, run, archive, exec)", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 0.8x"}, r.Ratio <= 0.8)
	}
	if r, ok := byCase["create + delete "+big]; ok && r.Floor > 0 {
		add(FastRow{What: "create + delete with an empty pool, " + big, Floor: "the naive script and its delete", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 0.5x"}, r.Ratio <= 0.5)
	}
	if r, ok := byCase["delete "+big]; ok && r.Floor > 0 {
		add(FastRow{What: "delete, " + big, Floor: "`docker rm -f` + `git branch -D`", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 1.2x"}, r.Ratio <= 1.2)
	}
	if r, ok := byCase["mcp bash `true`"]; ok && r.Floor > 0 {
		over := r.Median - r.Floor
		add(FastRow{What: "MCP `bash true`", Floor: "bare `docker exec C true`", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "overhead <= 10 ms", Note: fmt.Sprintf("overhead %.1f ms", over)}, over <= 10)
	}
	if len(b.scale) >= 2 {
		lo, hi := b.scale[0].String(), b.scale[len(b.scale)-1].String()
		c0, ok0 := b.snapCost[lo]
		c1, ok1 := b.snapCost[hi]
		if ok0 && ok1 {
			base := max(c0, 5) // noise around zero must not make the ratio
			add(FastRow{What: "snapshot after 1 changed file, " + hi + " vs " + lo, Floor: "the " + lo + " snapshot", FloorMS: c0, Measured: c1, Ratio: c1 / base, Target: "<= 1.2x"}, c1/base <= 1.2)
		}
	}
	if r, ok := byCase["10 parallel creates "+small]; ok && r.Floor > 0 {
		add(FastRow{What: "10 parallel creates, " + small, Floor: "10 x one create (its median)", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 0.4x"}, r.Ratio <= 0.4)
	}
	if r, ok := byCase["10 parallel creates from a pool of 10 "+small]; ok && r.Floor > 0 {
		add(FastRow{What: "10 parallel creates from a pool of 10, " + small, Floor: "10 x one create with an empty pool (its median)", FloorMS: r.Floor, Measured: r.Median, Ratio: r.Ratio, Target: "<= 0.2x, all pooled"}, r.Ratio <= 0.2)
	}
	return out
}

// printFast prints the speed table.
func printFast(w io.Writer, rows []FastRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WHAT\tFLOOR\tMEASURED\tRATIO\tTARGET\tSTATUS\tNOTE")
	for _, r := range rows {
		if r.Status == "n/a" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\t%s\t%s\n", r.What, r.Floor, r.Target, r.Status, r.Note)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s: %.1f ms\t%.1f ms\t%.2fx\t%s\t%s\t%s\n", r.What, r.Floor, r.FloorMS, r.Measured, r.Ratio, r.Target, r.Status, r.Note)
	}
	tw.Flush()
}
