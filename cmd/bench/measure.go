package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the table: a case's median beside its floor.
type Row struct {
	Case   string  `json:"case"`
	Median float64 `json:"median"`          // in Unit
	Floor  float64 `json:"floor,omitempty"` // in Unit; 0 when the case has no floor
	Unit   string  `json:"unit"`            // "ms" or "MiB"
	Ratio  float64 `json:"ratio,omitempty"` // Median / Floor
	Target string  `json:"target"`
	Status string  `json:"status"` // PASS, FAIL, info, n/a
	Runs   int     `json:"runs,omitempty"`
	Note   string  `json:"note,omitempty"`
}

// target is a goal a row is checked against.
type target struct {
	text string
	ok   func(r Row) bool
}

func maxRatio(x float64) target {
	return target{fmt.Sprintf("<= %gx floor", x), func(r Row) bool { return r.Floor > 0 && r.Ratio <= x }}
}

func under(ms float64) target {
	return target{fmt.Sprintf("< %.0f ms", ms), func(r Row) bool { return r.Median < ms }}
}

func maxOverhead(ms float64) target {
	return target{fmt.Sprintf("<= floor + %.0f ms", ms), func(r Row) bool { return r.Median-r.Floor <= ms }}
}

func all(ts ...target) target {
	var texts []string
	for _, t := range ts {
		texts = append(texts, t.text)
	}
	return target{strings.Join(texts, " and "), func(r Row) bool {
		for _, t := range ts {
			if !t.ok(r) {
				return false
			}
		}
		return true
	}}
}

// info is a figure printed without a goal.
var info = target{text: "-"}

// row builds a row from timed samples of the case and of its floor (floor
// may be nil) and checks it against t.
func row(name string, samples, floor []time.Duration, t target) Row {
	r := Row{Case: name, Unit: "ms", Median: ms(median(samples)), Target: t.text, Runs: len(samples)}
	if len(floor) > 0 {
		r.Floor = ms(median(floor))
		if r.Floor > 0 {
			r.Ratio = r.Median / r.Floor
		}
	}
	return judge(r, t)
}

func judge(r Row, t target) Row {
	r.Target = t.text
	switch {
	case t.ok == nil:
		r.Status = "info"
	case t.ok(r):
		r.Status = "PASS"
	default:
		r.Status = "FAIL"
	}
	return r
}

// na is a case that cannot run yet, with the reason.
func na(name, why string) Row {
	return Row{Case: name, Status: "n/a", Note: why}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timed runs fn and returns how long it took.
func timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// proc is one external command to run and time.
type proc struct {
	args  []string
	dir   string
	env   []string
	stdin io.Reader
}

// run runs p and returns its stdout; a failure carries stderr.
func (p proc) run(ctx context.Context) ([]byte, error) {
	out, _, err := p.runCPU(ctx)
	return out, err
}

// runCPU is run, with the CPU time p used: its own and that of the
// processes it waited for (a litterbox create's kubectl and git calls).
func (p proc) runCPU(ctx context.Context) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, p.args[0], p.args[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdin = p.stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return out.Bytes(), cpu, &procError{args: p.args, err: err, stderr: strings.TrimSpace(errb.String())}
	}
	return out.Bytes(), cpu, nil
}

// procError is a proc that failed, with what it said on stderr.
type procError struct {
	args   []string
	err    error
	stderr string
}

func (e *procError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.args, " "), e.err, e.stderr)
}

func (e *procError) Unwrap() error { return e.err }

func runCmd(ctx context.Context, args ...string) error {
	_, err := proc{args: args}.run(ctx)
	return err
}

// pipe runs `from | to` with both processes running at once, as a shell
// pipeline would.
func pipe(ctx context.Context, from, to proc) error {
	a := exec.CommandContext(ctx, from.args[0], from.args[1:]...)
	a.Dir = from.dir
	b := exec.CommandContext(ctx, to.args[0], to.args[1:]...)
	b.Dir = to.dir
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	a.Stdout, b.Stdin = pw, pr
	var aerr, berr bytes.Buffer
	a.Stderr, b.Stderr = &aerr, &berr
	if err := a.Start(); err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	pw.Close()
	if err := b.Start(); err != nil {
		pr.Close()
		_ = a.Wait()
		return err
	}
	pr.Close()
	ea, eb := a.Wait(), b.Wait()
	if ea != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(from.args, " "), ea, aerr.String())
	}
	if eb != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(to.args, " "), eb, berr.String())
	}
	return nil
}

// printTable writes rows as an aligned table.
func printTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tMEDIAN\tFLOOR\tRATIO\tTARGET\tSTATUS\tNOTE")
	for _, r := range rows {
		if r.Status == "n/a" || r.Status == "ERROR" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t%s\n", r.Case, r.Status, r.Note)
			continue
		}
		floor, ratio := "-", "-"
		if r.Floor > 0 {
			floor = fmt.Sprintf("%.1f %s", r.Floor, r.Unit)
			ratio = fmt.Sprintf("%.2fx", r.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%.1f %s\t%s\t%s\t%s\t%s\t%s\n", r.Case, r.Median, r.Unit, floor, ratio, r.Target, r.Status, r.Note)
	}
	tw.Flush()
}

func printJSON(w io.Writer, rows []Row, meta map[string]any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"meta": meta, "rows": rows})
}

// loadAvg is /proc/loadavg's text, or "" where there is none.
func loadAvg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	return string(data)
}

// loadText says the one-minute load average at a run's start and at its
// end, from /proc/loadavg's texts (either "" or unreadable: left out).
func loadText(start, end string) string {
	first := func(s string) (float64, bool) {
		f := strings.Fields(s)
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	s, okS := first(start)
	e, okE := first(end)
	switch {
	case okS && okE:
		return fmt.Sprintf("load %.1f at the start, %.1f at the end", s, e)
	case okS:
		return fmt.Sprintf("load %.1f at the start", s)
	}
	return ""
}
